"""What the compatible faces' live streams share: where a scope's new mail is published, the
socket slot a stream holds, and serving a WebSocket whose messages a face shapes in its
peer's words (MailHog's `/api/v2/websocket`, Mailpit's `/api/events`).

A stream listens where the native inbox stream does (`models.delivery.realtime`): an inbox
scope on its inbox's channel, a catch-all scope on its team's channel; the face's shaper then
reads each message again through the scope's own condition, so a catch-all stream carries
only its assignment's inboxes. A stream that announces changes too (Mailpit's) also listens
on the scope's changes channel: its inbox's, or its domain assignment's, which carries only
that assignment's inboxes. Each stream holds one of the key's creator's socket slots
(`websockets.max_per_user`, as the native WebSockets do) and no database session between
messages.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable

import orjson
from flask import Response

from burnbox.kv import StoreUnavailable
from compat.scopes import CATCH_ALL, Scope
from models.delivery import realtime as rt
from models.errors import RateLimited
from models.events import EMAIL_RECEIVED
from models.runtime import Runtime
from web import sockets
from web.sockets import Shaped


def channels_of(scope: Scope) -> list[str]:
    """The realtime channel carrying the scope's new mail."""
    if scope.ref.kind == CATCH_ALL:
        return [rt.team_channel(scope.team_id)]
    assert scope.ref.id is not None
    return [rt.inbox_channel(scope.ref.id)]


def change_channels_of(scope: Scope) -> list[str]:
    """The realtime channel carrying the changes of the scope's stored mail (read state, tags,
    deletions: `models.delivery.realtime.publish_mail_changes`)."""
    assert scope.ref.id is not None
    if scope.ref.kind == CATCH_ALL:
        return [rt.assignment_changes_channel(scope.ref.id)]
    return [rt.inbox_changes_channel(scope.ref.id)]


def received_email_id(text: str) -> uuid.UUID | None:
    """The id of the e-mail a realtime message announces as received; None for any other
    message, or one that cannot be read."""
    try:
        message = orjson.loads(text)
        if message.get("type") != EMAIL_RECEIVED:
            return None
        return uuid.UUID(str(message["data"]["id"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def socket_slot(runtime: Runtime, scope: Scope) -> tuple[rt.SocketSlots, rt.Slot]:
    """One of the key's creator's socket slots; RateLimited when they hold them all."""
    slots = rt.SocketSlots(runtime.store, runtime.settings.websockets.max_per_user)
    slot = slots.acquire(scope.principal.user.id)
    if slot is None:
        raise RateLimited(f"at most {slots.limit} streams per user; close one first")
    return slots, slot


def serve_websocket(runtime: Runtime, scope: Scope, stream: str,
                    shape: Callable[[str], Shaped], *, changes: bool = False) -> Response:
    """Serve a WebSocket of the scope's new mail (with `changes`, and of the changes of its
    stored mail), each message turned into what `shape` makes of it (`web.sockets.Shaped`),
    until the client goes; `stream` names it in the socket metrics. Call once every check
    passed and the request's session is closed: `web.sockets.serve`'s answer."""
    slots, slot = socket_slot(runtime, scope)

    def keep_alive() -> bool:
        try:
            return slots.renew(slot)
        except StoreUnavailable:
            return True  # the store is down: keep the socket rather than drop every client

    try:
        channels = [*channels_of(scope), *(change_channels_of(scope) if changes else ())]
        return sockets.serve(runtime.settings, stream, channels, keep_alive=keep_alive,
                             shape=shape)
    finally:
        with contextlib.suppress(StoreUnavailable):  # the slot then expires on its own
            slots.release(slot)
