"""Following an inbox: each new e-mail printed as it arrives, with the codes and links found in
it, until stopped.

Where the e-mails come from depends on the way the verb goes (`burnbox.cli.remote`):
- over HTTP, from the API's wait (`GET /inboxes/:id/emails/wait?after=<the last one>`), which
  answers as soon as the next e-mail is stored (`from_api`, here);
- on the database, from the inbox's realtime channel with Redis, or by reading the database
  every `interval` seconds on the embedded default (`burnbox.cli.follow_db`).

Either way each e-mail is the API's e-mail list item plus its `codes` and `links`, printed as
a line with the codes and links under it (`--json`: one JSON object a line). Following ends
when the inbox lapses or is deleted, after `count` e-mails, at `timeout` (exit code 1), or on
Ctrl+C. This module imports only the standard library and click.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from burnbox.cli.errors import fail

if TYPE_CHECKING:
    from burnbox.cli.remote import Api

# The fields an e-mail list item and its detail share (EmailFieldsSchema, which a test
# compares), and what following adds to them.
SUMMARY_FIELDS = ("id", "inbox_id", "message_id", "from_address", "to_address", "subject",
                  "snippet", "has_attachments", "is_read", "size_bytes", "received_at", "tags")
FOUND_FIELDS = ("codes", "links")
# The longest one wait asks the API for: it answers at once when mail comes, and the inbox's
# expiry is looked at between two waits.
WAIT_SECONDS = 20.0


@dataclass(frozen=True)
class Following:
    """What to follow and when to stop."""

    inbox_id: uuid.UUID | str
    address: str
    interval: float
    count: int | None
    timeout: float | None
    as_json: bool


def follow(source: Iterator[dict[str, Any] | None], following: Following) -> None:
    """Print what `source` yields (an e-mail, or None when nothing came for a while) until one
    of the ends in the module docstring."""
    deadline = time.monotonic() + following.timeout if following.timeout else None
    printed = 0
    try:
        for item in source:
            if item is not None:
                _print(item, following.as_json)
                printed += 1
                if following.count is not None and printed >= following.count:
                    return
            if deadline is not None and time.monotonic() >= deadline:
                fail(f"no more e-mail to {following.address} within {following.timeout:g}s "
                     f"({printed} received)", "timeout")
    except KeyboardInterrupt:
        return  # Ctrl+C is how a person stops following: no "Aborted!"


def announce(following: Following, how: str) -> None:
    """Say on stderr where the e-mails come from."""
    click.echo(f"following {following.address} ({how}); Ctrl+C to stop", err=True)


def ended(following: Following, why: str) -> None:
    """Say on stderr why following ends by itself ("has expired", "was deleted")."""
    click.echo(f"the inbox {following.address} {why}", err=True)


def item(email: dict[str, Any]) -> dict[str, Any]:
    """The printed item of an e-mail (its detail, or its list item with codes and links)."""
    return {name: email[name] for name in (*SUMMARY_FIELDS, *FOUND_FIELDS)}


def from_api(api: Api, inbox: dict[str, Any], following: Following
             ) -> Iterator[dict[str, Any] | None]:
    """The inbox's new e-mails from the API's wait, oldest first (None after a wait that found
    nothing)."""
    from burnbox.cli.remote import Refused

    path = f"/inboxes/{inbox['id']}"
    newest = api.get(f"{path}/emails", per_page=1)["data"]
    after = newest[0]["id"] if newest else None  # an empty inbox: its first e-mail is new
    announce(following, "live, from the API")
    patience = min(WAIT_SECONDS, following.timeout or WAIT_SECONDS)
    while True:
        if _lapsed(inbox):
            inbox = api.inbox(inbox["id"])  # extended meanwhile?
            if _lapsed(inbox):
                ended(following, "has expired")
                return
        try:
            found = api.call("GET", f"{path}/emails/wait",
                             {"after": after, "count": 1,
                              "timeout": f"{round(patience * 1000)}ms"},
                             timeout=patience + 30)
        except Refused as refused:
            if refused.status == 404:
                ended(following, "was deleted")
                return
            refused.fail()
        for email in found["emails"]:
            after = email["id"]
            yield item(email)
        if not found["emails"]:
            yield None


def _lapsed(inbox: dict[str, Any]) -> bool:
    return datetime.fromisoformat(inbox["expires_at"]) <= datetime.now(UTC)


def _print(email: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(email, ensure_ascii=False, separators=(",", ":")))
        return
    click.echo(f"{email['received_at']}  {email['from_address']}  {email['subject']!r}  "
               f"{email['id']}")
    for code in email["codes"]:
        click.echo(f"  code: {code}")
    for link in email["links"]:
        click.echo(f"  link: {link_text(link)}")


def link_text(link: dict[str, Any]) -> str:
    """A found link as a line shows it: its address, and its words when it has some."""
    return f"{link['href']} ({link['text']})" if link.get("text") else link["href"]
