"""Following an inbox on the database (`burnbox.cli.follow` prints and stops; over HTTP the
e-mails come from the API's wait instead).

Two sources, chosen by the settings:
- with Redis configured, the inbox's realtime channel (`models.delivery.realtime`), the one the
  WebSocket streams read: the worker publishes each `email.received` there once the fan-out
  commits (`tasks/publishers.py`);
- on the embedded default the bus is in-process: a separate `burnbox serve` publishes on its
  own memory, which this process cannot see, so the inbox's e-mails are read from the database
  every `interval` seconds instead (a short read transaction each time).

Either way each e-mail is the API's e-mail list item with the codes and links found in it.
SIGTERM stops following here too (a stop event the sources watch between reads).
"""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from burnbox.cli.errors import fail, unreachable_redis
from burnbox.cli.follow import FOUND_FIELDS, Following, announce, ended, item
from burnbox.kv import StoreUnavailable
from burnbox.timeutil import utcnow
from models.delivery.realtime import inbox_channel
from models.events import EMAIL_RECEIVED
from models.mail.emails import list_emails
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.pagination import MAX_PER_PAGE
from models.runtime import Runtime

# How often the pub/sub mode looks at the inbox row (has it lapsed, was it deleted?).
INBOX_CHECK_EVERY = 5.0


def from_database(runtime: Runtime, following: Following) -> Iterator[dict[str, Any] | None]:
    """The inbox's new e-mails from Redis pub/sub or database reads (module docstring)."""
    stop = _stop_event()
    return (_published(runtime, following, stop) if runtime.settings.redis.url
            else _polled(runtime, following, stop))


def _stop_event() -> threading.Event:
    """Set by SIGTERM or SIGINT (handlers exist only in the main thread)."""
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    return stop


def _inbox_gone(runtime: Runtime, following: Following) -> str | None:
    """Why following ends ("has expired", "was deleted"), or None while the inbox lives."""
    with runtime.db.session() as session:
        inbox = session.get(Inbox, following.inbox_id)
        if inbox is None:
            return "was deleted"
        return None if inbox.expires_at > utcnow() else "has expired"


def _with_findings(runtime: Runtime, email: dict[str, Any]) -> dict[str, Any]:
    """The printed item of a list item (the API's JSON): with the codes and links of the
    e-mail's row (gone meanwhile: none)."""
    with runtime.db.session() as session:
        row = session.get(Email, uuid.UUID(str(email["id"])))
        found = {name: list(getattr(row, name)) if row else [] for name in FOUND_FIELDS}
    return item({**email, **found})


def _polled(runtime: Runtime, following: Following,
            stop: threading.Event) -> Iterator[dict[str, Any] | None]:
    """E-mails read from the database every `interval` seconds, oldest first (None on a tick
    with nothing new)."""
    from web.views.emails import EmailSummarySchema

    schema = EmailSummarySchema()
    # Every e-mail there now counts as seen, so one deleted later cannot make an older one
    # look new; inboxes are short-lived, the set stays small.
    seen = {email["id"] for email in _newest(runtime, following.inbox_id, set(), everything=True)}
    announce(following, f"reading the database every {following.interval:g}s")
    while not stop.wait(following.interval):
        why = _inbox_gone(runtime, following)
        fresh = _newest(runtime, following.inbox_id, seen)
        for email in reversed(fresh):
            seen.add(email["id"])
            yield _with_findings(runtime, schema.dump(email))
        if why is not None:
            ended(following, why)
            return
        if not fresh:
            yield None


def _newest(runtime: Runtime, inbox_id: uuid.UUID, seen: set[uuid.UUID], *,
            everything: bool = False) -> list[Any]:
    """The inbox's e-mails not in `seen`, newest first: pages are read until one holds a seen
    e-mail (or every page, with `everything`)."""
    found: list[Any] = []
    page = 1
    with runtime.db.session() as session:
        while True:
            batch = list_emails(session, inbox_id, page=page, per_page=MAX_PER_PAGE)
            fresh = [email for email in batch.data if email["id"] not in seen]
            found += fresh
            if page >= batch.total_pages or (len(fresh) < len(batch.data) and not everything):
                return found
            page += 1


def _published(runtime: Runtime, following: Following,
               stop: threading.Event) -> Iterator[dict[str, Any] | None]:
    """E-mails from the inbox's realtime channel (None each second with nothing new)."""
    try:
        subscription = runtime.store.subscribe(inbox_channel(following.inbox_id))
    except StoreUnavailable as exc:
        fail(unreachable_redis(runtime.settings, exc))
    announce(following, "live, from Redis")
    checked = time.monotonic()
    try:
        while not stop.is_set():
            try:
                item = subscription.get(timeout=1.0)
            except StoreUnavailable as exc:
                fail(unreachable_redis(runtime.settings, exc))
            if item is not None:
                message = json.loads(item[1])
                if message.get("type") == EMAIL_RECEIVED:
                    yield _with_findings(runtime, message["data"])
                    continue
            if time.monotonic() - checked >= INBOX_CHECK_EVERY:
                checked = time.monotonic()
                why = _inbox_gone(runtime, following)
                if why is not None:
                    ended(following, why)
                    return
            yield None
    finally:
        subscription.close()
