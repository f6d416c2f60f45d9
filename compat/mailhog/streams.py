"""MailHog's live streams of new mail over a scope: the v1 EventSource stream
(`/api/v1/events`) and the v2 WebSocket (`/api/v2/websocket`).

Both listen where the native inbox stream does (`models.delivery.realtime`): an inbox scope on
its inbox's channel, a catch-all scope on its team's channel, each `email.received` then read
again through the scope's own condition (so a catch-all stream carries only its assignment's
inboxes) and sent as MailHog sends a new message: the whole message in MailHog's shape, as an
event `data:` block on v1 (the JSON indented, one `data:` line per line, as MailHog writes it,
and a `keepalive:` line every minute), as one JSON text message on v2. Nothing else is sent
(MailHog announces deletions on neither).

Each stream holds one of the key's creator's socket slots (`compat.streams`) and no database
session between messages: each message is read in a short read-only session of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import orjson
from flask import Response
from sqlalchemy import ColumnElement, select

from burnbox.kv import StoreUnavailable
from compat.mailhog.messages import stored_message
from compat.scopes import Scope
from compat.streams import channels_of, received_email_id, serve_websocket, socket_slot
from models.mail.entities import Email
from models.runtime import Runtime
from web import sockets

# MailHog's keep-alive period on its event stream.
KEEPALIVE_SECONDS = 60.0
KEEPALIVE = b"keepalive: \n\n"
# Sent as the stream opens, so the client has the answer's headers before the first message:
# a comment line, which EventSource ignores.
OPENED = b": stream opened\n\n"


@dataclass(frozen=True)
class Shaper:
    """Turns a realtime message into MailHog's JSON of the new message it announces, for one
    scope; None for any other message, or an e-mail outside the scope (or gone already)."""

    runtime: Runtime
    where: ColumnElement[bool]
    indent: bool = False

    def __call__(self, text: str) -> str | None:
        email_id = received_email_id(text)
        if email_id is None:
            return None
        with self.runtime.db.session(read_only=True) as session:
            email = session.scalars(select(Email).where(self.where, Email.id == email_id)
                                    ).first()
            if email is None:
                return None
            shaped = stored_message(email, self.runtime.storage,
                                    self.runtime.settings.smtp.hostname)
        option = orjson.OPT_INDENT_2 if self.indent else 0
        return orjson.dumps(shaped, option=option).decode()


def _event(data: str) -> bytes:
    """One event as MailHog's event stream writes it: a `data:` line per line of JSON."""
    return "".join(f"data: {line}\n" for line in data.split("\n")).encode() + b"\n"


def event_stream(runtime: Runtime, scope: Scope) -> Iterator[bytes]:
    """The v1 event stream's body: listening starts at once (a message published as soon as
    the client has the headers is not lost); ends when the client goes (the next write fails)
    or the socket slot cannot be renewed."""
    slots, slot = socket_slot(runtime, scope)
    listener = sockets.Listener(channels_of(scope))
    hub = sockets.hub()
    hub.add(listener)
    shaper = Shaper(runtime, scope.where, indent=True)

    def body() -> Iterator[bytes]:
        try:
            yield OPENED
            while not listener.overflowed:
                item = listener.next(timeout=KEEPALIVE_SECONDS)
                if item is None:
                    with contextlib.suppress(StoreUnavailable):
                        if not slots.renew(slot):
                            return
                    yield KEEPALIVE
                elif isinstance(item, str) and (shaped := shaper(item)) is not None:
                    yield _event(shaped)
        finally:
            hub.remove(listener)
            with contextlib.suppress(StoreUnavailable):  # the slot then expires on its own
                slots.release(slot)

    return body()


def websocket(runtime: Runtime, scope: Scope) -> Response:
    """Serve the v2 WebSocket until the client goes (call once every check passed and the
    request's session is closed): `web.sockets.serve`'s answer."""
    return serve_websocket(runtime, scope, "compat_mailhog", Shaper(runtime, scope.where))
