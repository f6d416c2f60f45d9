"""What the client hands back: an `Inbox`, an `Email` with its codes, links and attachments."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from burnbox_client.client import Burnbox


@dataclass(frozen=True)
class Link:
    """A link of an e-mail: its target and the text it is shown with ("" in the text body)."""

    href: str
    text: str


@dataclass(frozen=True)
class Attachment:
    """An attachment's metadata; `content()` downloads its bytes. `checksums` is {"md5",
    "sha1", "sha256"} (hex), None in the moment before Burnbox's worker computed them
    (`Email.checked()` waits for them)."""

    id: str
    email_id: str
    filename: str
    content_type: str
    size_bytes: int
    _client: Burnbox
    checksums: dict[str, str] | None = None

    def content(self) -> bytes:
        """The attachment's bytes (one request)."""
        response = self._client.http.get(
            f"{self._client.api}/emails/{self.email_id}/attachments/{self.id}", timeout=30)
        response.raise_for_status()
        return response.content


class Email:
    """An e-mail as `GET /emails/:id` shows it. `.text` and `.html` are the bodies (the HTML
    sanitised by Burnbox), `.codes` the one-time codes and `.links` the links Burnbox found in
    it; `.spam_engine` the verdict of the operator's spam engine (None without one: `status`,
    `score`, `threshold`, `is_spam`, `rules`...), `.list_unsubscribe` the unsubscribe headers
    checked (None without them: `one_click`, `links`, `problems`); `.data` is the whole JSON
    detail. `.tags` its tags' names. `.view_url()` is its plain page for a browser."""

    def __init__(self, client: Burnbox, data: dict[str, Any]) -> None:
        self._client = client
        self.data = data
        self.id: str = data["id"]
        self.inbox_id: str = data["inbox_id"]
        self.subject: str = data["subject"]
        self.from_address: str = data["from_address"]
        self.to_address: str = data["to_address"]
        self.received_at: str = data["received_at"]
        self.text: str = data["body_text"]
        self.html: str = data["body_html"]
        self.codes: list[str] = list(data["codes"])
        self.tags: list[str] = list(data.get("tags", ()))
        self.links: list[Link] = [Link(item["href"], item["text"]) for item in data["links"]]
        self.attachments: list[Attachment] = [
            Attachment(item["id"], item["email_id"], item["filename"], item["content_type"],
                       item["size_bytes"], client, item.get("checksums"))
            for item in data["attachments"]]
        self.spam_engine: dict[str, Any] | None = data.get("spam_engine")
        self.list_unsubscribe: dict[str, Any] | None = data.get("list_unsubscribe")

    @property
    def pending(self) -> bool:
        """Whether Burnbox's worker still owes this e-mail a check: the spam engine's answer
        or an attachment's checksums (each usually well under a second after arrival)."""
        return (bool(self.spam_engine and self.spam_engine["status"] == "pending")
                or any(item.checksums is None for item in self.attachments))

    def checked(self, timeout: float = 30) -> Email:
        """This e-mail once the spam engine's verdict and the attachments' checksums are in
        (itself when nothing is owed), asking for it again every 0.2 s; TimeoutError when
        `timeout` seconds pass first."""
        deadline = time.monotonic() + timeout
        email = self
        while email.pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the checks of e-mail {self.id} did not finish within "
                                   f"{timeout:g}s")
            time.sleep(0.2)
            email = self._client.emails.get(self.id)
        return email

    @property
    def code(self) -> str:
        """The e-mail's one code; AssertionError when it has none or several."""
        assert len(self.codes) == 1, f"expected one code in {self.subject!r}, found {self.codes}"
        return self.codes[0]

    def view_url(self, part: str = "html", *, remote_images: bool = False) -> str:
        """This e-mail's HTML (or `part="text"`) as a plain page, to open in a browser with
        `client.view_headers`: see `Burnbox.view_url`."""
        return self._client.view_url(self.id, part, remote_images=remote_images)

    def release(self, *recipients: str) -> dict[str, Any]:
        """Send this e-mail on to real mailboxes (`"qa@company.example"`, ...) through the
        server's release relay: the queued release (`id`, `state` "queued", `recipients`).
        Needs the `team.emails.release` scope; BurnboxError 409 when the server has no relay,
        403 for a recipient no allow-list allows, 429 once the team's budget is spent."""
        return dict(self._client.request("POST", f"/emails/{self.id}/release",
                                         json={"recipients": list(recipients)}))

    def releases(self) -> list[dict[str, Any]]:
        """This e-mail's releases, newest first: `state` (queued, sent or failed),
        `attempts`, `relay_reply` (the relay's answer) and `rule_id` (the auto-release rule
        that made it, or None) each."""
        return list(self._client.request("GET", f"/emails/{self.id}/releases")["releases"])

    def set_tags(self, *tags: str) -> list[str]:
        """Give the e-mail exactly these tags (none: take them all off); its tags after."""
        self.tags = self._client.emails.set_tags(self.id, *tags)
        return self.tags

    def add_tags(self, *tags: str) -> list[str]:
        """Add tags to the e-mail (those it has stay); its tags after."""
        self.tags = self._client.emails.add_tags(self.id, *tags)
        return self.tags

    def remove_tag(self, tag: str) -> list[str]:
        """Take a tag off the e-mail (case-blind); its tags after."""
        self.tags = self._client.emails.remove_tag(self.id, tag)
        return self.tags

    def __repr__(self) -> str:
        return f"<Email {self.id} {self.subject!r} from {self.from_address}>"


class Inbox:
    """An inbox. `address` is the full address to send to; `alias` its local part."""

    def __init__(self, client: Burnbox, data: dict[str, Any]) -> None:
        self._client = client
        self.data = data
        self.id: str = data["id"]
        self.address: str = data["full_address"]
        self.alias: str = data["address"]
        self.expires_at: str = data["expires_at"]

    def wait_for_email(self, subject: str | None = None, *, sender: str | None = None,
                       q: str | None = None, tag: str | None = None, after: str | None = None,
                       timeout: float | timedelta = 30) -> Email:
        """The oldest e-mail of this inbox matching every filter given (`subject` and `sender`
        as case-blind substrings, `q` in the search syntax, `tag` a tag it carries, `after` an
        e-mail id or timestamp), as soon as it is stored; EmailNotReceived when `timeout`
        (seconds) passes first."""
        return self._client.emails.wait_for_email(self, subject=subject, sender=sender, q=q,
                                                  tag=tag, after=after, timeout=timeout)

    def wait_for_emails(self, count: int, *, subject: str | None = None,
                        sender: str | None = None, q: str | None = None,
                        tag: str | None = None, after: str | None = None,
                        timeout: float | timedelta = 30) -> list[Email]:
        """The `count` oldest matching e-mails, as `wait_for_email` waits for one."""
        return self._client.emails.wait_for_emails(self, count, subject=subject,
                                                   sender=sender, q=q, tag=tag, after=after,
                                                   timeout=timeout)

    def emails(self, q: str | None = None) -> list[Email]:
        """The inbox's e-mails (matching `q` when given), newest first, with their detail."""
        return self._client.emails.search(q or "", self)

    def delete(self) -> None:
        """Delete the inbox and its e-mails."""
        self._client.inboxes.delete(self.id)

    def set_chaos(self, *rules: dict[str, Any]) -> list[dict[str, Any]]:
        """Make Burnbox's SMTP server fail on purpose for this inbox: replace its chaos rules
        with `rules` (dicts as the API takes them, e.g. `{"stage": "rcpt", "action": "reply",
        "code": 451, "times": 2}`); none clears them. The rules as stored, counters at 0."""
        body = self._client.request("PUT", f"/inboxes/{self.id}/chaos",
                                    json={"rules": list(rules)})
        return list(body["rules"])

    def chaos(self) -> list[dict[str, Any]]:
        """The inbox's chaos rules, each with `fired` (how often it acted) and `spent`."""
        return list(self._client.request("GET", f"/inboxes/{self.id}/chaos")["rules"])

    def add_release_rule(self, query: str, *recipients: str) -> dict[str, Any]:
        """Release this inbox's new mail matching `query` (the search syntax,
        `"subject:invoice"`) to `recipients` by itself, once each: the rule (`id`, `query`,
        `recipients`). Needs the `team.emails.release` scope; BurnboxError 409 when the server
        has no release relay, 403 for a recipient no allow-list allows."""
        return dict(self._client.request("POST", f"/inboxes/{self.id}/release-rules",
                                         json={"query": query, "recipients": list(recipients)}))

    def release_rules(self) -> list[dict[str, Any]]:
        """The inbox's auto-release rules, oldest first."""
        return list(self._client.request("GET", f"/inboxes/{self.id}/release-rules")["rules"])

    def delete_release_rule(self, rule_id: str) -> None:
        """Delete one of the inbox's auto-release rules (its releases stay)."""
        self._client.request("DELETE", f"/inboxes/{self.id}/release-rules/{rule_id}")

    def smtp_credentials(self) -> dict[str, Any]:
        """Give this inbox SMTP capture credentials, or new ones (the old secret stops working):
        `host`, `port`, `username` (the inbox's address) and `secret`, shown this once. A client
        that logs in with them may name anyone; its mail is stored once in this inbox, with
        the recipients in each e-mail's `envelope_to`."""
        return dict(self._client.request("POST", f"/inboxes/{self.id}/smtp-credentials"))

    def put_message(self, *, sender: str, to: list[str] | None = None,
                    cc: list[str] | None = None, subject: str = "", text: str | None = None,
                    html: str | None = None,
                    attachments: list[dict[str, Any]] | None = None,
                    headers: dict[str, str] | None = None,
                    tags: list[str] | None = None) -> Email:
        """Put an e-mail into this inbox over HTTP, stored as though it had arrived over SMTP
        (webhooks and streams hear of it): seeds a test without an SMTP client. `sender` and
        each recipient are `address` or `Name <address>`; `to` defaults to this inbox. Each
        attachment is `{"filename", "content": bytes, "content_type"?, "content_id"?,
        "inline"?}` (bytes are sent in base64; a `content_id` shows it in the HTML as
        `cid:<content_id>`). `tags` become the `X-Tags` header. The stored e-mail."""
        body: dict[str, Any] = {"from": sender, "subject": subject}
        for name, value in (("to", to), ("cc", cc), ("text", text), ("html", html),
                            ("headers", headers), ("tags", tags)):
            if value is not None:
                body[name] = value
        if attachments:
            body["attachments"] = [
                {**part, "content": base64.b64encode(part["content"]).decode("ascii")}
                for part in attachments]
        return Email(self._client, self._client.request(
            "POST", f"/inboxes/{self.id}/messages", json=body))

    def revoke_smtp_credentials(self) -> None:
        """Revoke this inbox's SMTP credentials (BurnboxError 404 when it has none)."""
        self._client.request("DELETE", f"/inboxes/{self.id}/smtp-credentials")

    def __repr__(self) -> str:
        return f"<Inbox {self.address}>"
