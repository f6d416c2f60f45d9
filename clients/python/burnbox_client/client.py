"""The Burnbox REST client: inboxes to create and delete, e-mails to wait for and search.

Every call is one HTTP request with the team API key as a Bearer token, except where a docstring
says otherwise. An error answer of the API raises `BurnboxError` with its status, code and
message; a wait that runs out of time raises `EmailNotReceived`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import requests

from burnbox_client.models import Email, Inbox

API_PREFIX = "/api/v1"
# A wait is answered by the server when its own timeout passes; the HTTP read timeout leaves it
# this much more, so a slow network never turns a clean "nothing yet" into a client-side error.
WAIT_GRACE_SECONDS = 15.0
REQUEST_TIMEOUT_SECONDS = 30.0
PER_PAGE = 100


class BurnboxError(Exception):
    """An error answer of the Burnbox API (4xx or 5xx), with its envelope's fields."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details


class EmailNotReceived(AssertionError):
    """No matching e-mail arrived within the wait's timeout. An AssertionError, so a test that
    waits in vain fails (rather than errors) with this message, which names the inbox's
    address, the filters and the timeout; `inbox` is that address, `received` the matching
    e-mails that did arrive (fewer than asked)."""

    def __init__(self, message: str, *, inbox: str = "",
                 received: list[Email] | None = None) -> None:
        super().__init__(message)
        self.inbox, self.received = inbox, received or []


def _seconds(timeout: float | timedelta) -> float:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


def go_duration(timeout: float | timedelta) -> str:
    """`timeout` (seconds or a timedelta) as the Go duration the API reads, in milliseconds."""
    return f"{round(_seconds(timeout) * 1000)}ms"


def in_words(timeout: float | timedelta) -> str:
    """`timeout` for a message, as the JavaScript client says it: "30 s", or "250 ms"."""
    milliseconds = round(_seconds(timeout) * 1000)
    return f"{milliseconds // 1000} s" if milliseconds % 1000 == 0 else f"{milliseconds} ms"


class Burnbox:
    """A client of one Burnbox service, acting with one team API key.

    `url` is the service's base address (`https://burnbox.example`; a trailing `/api/v1` is
    accepted too). `domain` names the domain new inboxes get; without it, the key's team must
    have exactly one usable domain assignment, found on the first `inboxes.create`.
    """

    def __init__(self, url: str, api_key: str, *, domain: str | None = None,
                 session: requests.Session | None = None) -> None:
        base = url.rstrip("/")
        self.api = base if base.endswith(API_PREFIX) else base + API_PREFIX
        self.domain = domain
        self.http = session or requests.Session()
        self.http.headers["Authorization"] = f"Bearer {api_key}"
        self.inboxes = Inboxes(self)
        self.emails = Emails(self)

    def request(self, method: str, path: str, *, timeout: float = REQUEST_TIMEOUT_SECONDS,
                **kwargs: Any) -> Any:
        """Send one request to `path` under /api/v1 and return its JSON body; raise
        BurnboxError on an error status."""
        response = self.http.request(method, self.api + path, timeout=timeout, **kwargs)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {}
            body = body if isinstance(body, dict) else {}
            raise BurnboxError(response.status_code, str(body.get("code", "http_error")),
                               str(body.get("error", response.reason)), body.get("details"))
        return response.json() if response.content else None

    @property
    def view_headers(self) -> dict[str, str]:
        """The headers a browser sends to open `view_url` pages: Playwright's
        `extra_http_headers`, or better a route's headers for this service's address alone,
        so that the key never reaches the hosts of an e-mail's remote images."""
        return {"Authorization": str(self.http.headers["Authorization"])}

    def view_url(self, email_id: str, part: str = "html", *, remote_images: bool = False
                 ) -> str:
        """The address of an e-mail's sanitised HTML (`part="html"`) or its text (`"text"`)
        as a plain page (`/view/<id>.html`, `/view/<id>.txt`), for a browser test to open with
        `view_headers` and screenshot. `remote_images` loads the HTML's http(s) images, which
        the page blocks otherwise. ValueError for another part."""
        suffixes = {"html": "html", "text": "txt"}
        if part not in suffixes:
            raise ValueError(f"part must be html or text, not {part!r}")
        url = f"{self.api[:-len(API_PREFIX)]}/view/{quote(email_id, safe='')}.{suffixes[part]}"
        return url + "?remote_images=true" if remote_images and part == "html" else url

    def inbox_id(self, inbox: str) -> str:
        """The id of the inbox named by `inbox`: an id as it is, an address through the inbox
        list's `address` filter (lapsed inboxes included); BurnboxError 404 `not_found` when
        no inbox the key can see has that address."""
        if "@" not in inbox:
            return inbox
        found = self.request("GET", "/inboxes", params={"address": inbox, "status": "all",
                                                        "per_page": 1})["data"]
        if not found:
            raise BurnboxError(404, "not_found", f"no inbox {inbox!r}", None)
        return str(found[0]["id"])

    def pages(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, one request per page."""
        page = 1
        while True:
            body = self.request("GET", path, params={**(params or {}), "page": page,
                                                     "per_page": PER_PAGE})
            yield from body["data"]
            if page >= body["total_pages"]:
                return
            page += 1

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()


class Inboxes:
    """`client.inboxes`: create, fetch and delete inboxes of the key's team."""

    def __init__(self, client: Burnbox) -> None:
        self._client = client
        self._assignment_id: str | None = None

    def create(self, alias: str | None = None, ttl: str | timedelta | None = None) -> Inbox:
        """A new inbox: `alias` is the local part (random when None), `ttl` its lifetime (a Go
        duration such as "1h", or a timedelta; the team's default when None)."""
        body: dict[str, Any] = {}
        if self._client.domain:
            body["domain"] = self._client.domain
        else:
            body["domain_assignment_id"] = self._only_assignment()
        if alias is not None:
            body["alias"] = alias
        if ttl is not None:
            body["ttl"] = go_duration(ttl) if isinstance(ttl, timedelta) else ttl
        return Inbox(self._client, self._client.request("POST", "/inboxes", json=body))

    def get(self, inbox: str) -> Inbox:
        """The inbox with this id or this address ("signup@burnbox.test", any case)."""
        return Inbox(self._client,
                     self._client.request("GET", f"/inboxes/{self._client.inbox_id(inbox)}"))

    def delete(self, inbox: str) -> None:
        """Delete the inbox (named by its id or its address) and its e-mails."""
        self._client.request("DELETE", f"/inboxes/{self._client.inbox_id(inbox)}")

    def list(self) -> list[Inbox]:
        """The active inboxes the key can see (one request per 100)."""
        return [Inbox(self._client, item) for item in self._client.pages("/inboxes")]

    def _only_assignment(self) -> str:
        """The id of the key's one usable domain assignment (asked once per client)."""
        if self._assignment_id is None:
            usable = self._client.request("GET", "/my/domains", params={"per_page": 2})
            if usable["total"] != 1:
                names = ", ".join(item["domain_name"] for item in usable["data"]) or "none"
                raise ValueError(f"the API key's team can use {usable['total']} domains "
                                 f"({names}): pass domain= to Burnbox()")
            self._assignment_id = usable["data"][0]["id"]
        return self._assignment_id


class Emails:
    """`client.emails`: fetch, wait for and search e-mails."""

    def __init__(self, client: Burnbox) -> None:
        self._client = client

    def get(self, email_id: str) -> Email:
        """The e-mail with this id, with bodies, codes, links and attachments."""
        return Email(self._client, self._client.request("GET", f"/emails/{email_id}"))

    def set_tags(self, email_id: str, *tags: str) -> list[str]:
        """Give the e-mail exactly these tags (none: take them all off); its tags after."""
        return list(self._client.request("PUT", f"/emails/{email_id}/tags",
                                         json={"tags": list(tags)})["tags"])

    def add_tags(self, email_id: str, *tags: str) -> list[str]:
        """Add tags to the e-mail (those it has stay); its tags after."""
        return list(self._client.request("POST", f"/emails/{email_id}/tags",
                                         json={"tags": list(tags)})["tags"])

    def remove_tag(self, email_id: str, tag: str) -> list[str]:
        """Take a tag off the e-mail (case-blind; one it lacks changes nothing); its tags
        after."""
        return list(self._client.request(
            "DELETE", f"/emails/{email_id}/tags/{quote(tag, safe='')}")["tags"])

    def wait_for_email(self, inbox: Inbox | str, *, subject: str | None = None,
                       sender: str | None = None, q: str | None = None,
                       tag: str | None = None, after: str | None = None,
                       timeout: float | timedelta = 30) -> Email:
        """The oldest e-mail of the inbox (an Inbox, its id or its address) matching every
        filter given (`subject` and `sender` as case-blind substrings, `q` in the search
        syntax, `tag` a tag it carries, `after` an e-mail id or timestamp), as soon as it is
        stored; EmailNotReceived
        when `timeout` (seconds or a timedelta) passes first. One request: the server holds it
        until the mail is stored. An address needs no inbox yet when its domain is a catch-all
        of the key's team: the first message creates it."""
        [email] = self.wait_for_emails(inbox, 1, subject=subject, sender=sender, q=q,
                                       tag=tag, after=after, timeout=timeout)
        return email

    def wait_for_emails(self, inbox: Inbox | str, count: int, *, subject: str | None = None,
                        sender: str | None = None, q: str | None = None,
                        tag: str | None = None, after: str | None = None,
                        timeout: float | timedelta = 30) -> list[Email]:
        """The `count` oldest matching e-mails, oldest first, as `wait_for_email` waits for
        one; EmailNotReceived (with the ones that did arrive) when fewer arrive in time."""
        if isinstance(inbox, Inbox):
            path = f"/inboxes/{inbox.id}/emails/wait"
        elif "@" in inbox:
            path = f"/inboxes/by-address/{quote(inbox, safe='@')}/emails/wait"
        else:
            path = f"/inboxes/{inbox}/emails/wait"
        filters = {"subject": subject, "from": sender, "q": q, "tag": tag, "after": after}
        given = {name: value for name, value in filters.items() if value is not None}
        body = self._client.request(
            "GET", path, params={**given, "count": count, "timeout": go_duration(timeout)},
            timeout=_seconds(timeout) + WAIT_GRACE_SECONDS)
        emails = [Email(self._client, item) for item in body["emails"]]
        if not body["timed_out"]:
            return emails
        # Worded as the JavaScript client words it: the inbox by its address.
        address = self._address_of(inbox)
        wanted = " and ".join(f"{name} {json.dumps(value, ensure_ascii=False)}"
                            for name, value in given.items())
        raise EmailNotReceived(
            f"{len(emails)} of {count} e-mail(s) matching {wanted or 'anything'} arrived in "
            f"inbox {address} within {in_words(timeout)}", inbox=address, received=emails)

    def wait(self, inbox: Inbox | str, *, subject: str | None = None,
             sender: str | None = None, q: str | None = None, after: str | None = None,
             count: int = 1, timeout: float | timedelta = 30) -> list[Email]:
        """Deprecated: `wait_for_email` (one e-mail) or `wait_for_emails` (a list), as the
        Inbox and the JavaScript client name them. A list of `count` e-mails, as it always
        returned, with a DeprecationWarning."""
        warnings.warn("Burnbox.emails.wait is deprecated: use emails.wait_for_email(inbox, ...) "
                      "for one e-mail, emails.wait_for_emails(inbox, count, ...) for a list",
                      DeprecationWarning, stacklevel=2)
        return self.wait_for_emails(inbox, count, subject=subject, sender=sender, q=q,
                                    after=after, timeout=timeout)

    def _address_of(self, inbox: Inbox | str) -> str:
        """The inbox's address for a message: as given, else asked for (the id of an inbox
        gone by then stays an id)."""
        if isinstance(inbox, Inbox):
            return inbox.address
        if "@" in inbox:
            return inbox
        try:
            return str(self._client.request("GET", f"/inboxes/{inbox}")["full_address"])
        except (BurnboxError, requests.RequestException):
            return inbox

    def search(self, q: str, inbox: Inbox | str | None = None) -> list[Email]:
        """The e-mails matching `q` (the search syntax of docs/testing-with-burnbox.md), newest
        first, with their full detail. In one inbox when `inbox` is given; otherwise in every
        active inbox the key can see (a request per inbox, so prefer naming the inbox, by the
        Inbox, its id or its address)."""
        if inbox is None:
            inbox_ids = [item["id"] for item in self._client.pages("/inboxes")]
        else:
            inbox_ids = [inbox.id if isinstance(inbox, Inbox) else self._client.inbox_id(inbox)]
        found = [item for inbox_id in inbox_ids
                 for item in self._client.pages(f"/inboxes/{inbox_id}/emails",
                                                {"q": q} if q else None)]
        found.sort(key=lambda item: item["received_at"], reverse=True)
        return [self.get(item["id"]) for item in found]
