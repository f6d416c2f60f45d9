"""What the client hands back: an `Inbox`, an `Email` with its codes, links and attachments."""

from __future__ import annotations

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
    """An attachment's metadata; `content()` downloads its bytes."""

    id: str
    email_id: str
    filename: str
    content_type: str
    size_bytes: int
    _client: Burnbox

    def content(self) -> bytes:
        """The attachment's bytes (one request)."""
        response = self._client.http.get(
            f"{self._client.api}/emails/{self.email_id}/attachments/{self.id}", timeout=30)
        response.raise_for_status()
        return response.content


class Email:
    """An e-mail as `GET /emails/:id` shows it. `.text` and `.html` are the bodies (the HTML
    sanitised by Burnbox), `.codes` the one-time codes and `.links` the links Burnbox found in
    it; `.data` is the whole JSON detail."""

    def __init__(self, client: Burnbox, data: dict[str, Any]) -> None:
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
        self.links: list[Link] = [Link(item["href"], item["text"]) for item in data["links"]]
        self.attachments: list[Attachment] = [
            Attachment(item["id"], item["email_id"], item["filename"], item["content_type"],
                       item["size_bytes"], client) for item in data["attachments"]]

    @property
    def code(self) -> str:
        """The e-mail's one code; AssertionError when it has none or several."""
        assert len(self.codes) == 1, f"expected one code in {self.subject!r}, found {self.codes}"
        return self.codes[0]

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
                       q: str | None = None, after: str | None = None,
                       timeout: float | timedelta = 30) -> Email:
        """The oldest e-mail of this inbox matching every filter given (`subject` and `sender`
        as case-blind substrings, `q` in the search syntax, `after` an e-mail id or timestamp),
        as soon as it is stored; EmailNotReceived when `timeout` (seconds) passes first."""
        [email] = self._client.emails.wait(self.id, subject=subject, sender=sender, q=q,
                                           after=after, timeout=timeout)
        return email

    def wait_for_emails(self, count: int, *, subject: str | None = None,
                        sender: str | None = None, q: str | None = None,
                        after: str | None = None, timeout: float | timedelta = 30
                        ) -> list[Email]:
        """The `count` oldest matching e-mails, as `wait_for_email` waits for one."""
        return self._client.emails.wait(self.id, subject=subject, sender=sender, q=q,
                                        after=after, count=count, timeout=timeout)

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

    def smtp_credentials(self) -> dict[str, Any]:
        """Give this inbox SMTP capture credentials, or new ones (the old secret stops working):
        `host`, `port`, `username` (the inbox's address) and `secret`, shown this once. A client
        that logs in with them may name anyone; its mail is stored once in this inbox, with
        the recipients in each e-mail's `envelope_to`."""
        return dict(self._client.request("POST", f"/inboxes/{self.id}/smtp-credentials"))

    def revoke_smtp_credentials(self) -> None:
        """Revoke this inbox's SMTP credentials (BurnboxError 404 when it has none)."""
        self._client.request("DELETE", f"/inboxes/{self.id}/smtp-credentials")

    def __repr__(self) -> str:
        return f"<Inbox {self.address}>"
