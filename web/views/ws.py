"""WebSocket tickets and streams: /api/v1/ws/...

`POST /ws/ticket` (JWT only) gives a single-use ticket valid for `websockets.ticket_ttl`; each
stream is a GET upgraded to a WebSocket, with `?ticket=`. Every refusal is an HTTP answer before
the upgrade: 400 (not an upgrade request), 403 (origin not allowed, or no right to the stream),
401 (ticket malformed, unknown, used or expired), 404 (unknown inbox, or another org's), 429
(the user already holds `websockets.max_per_user` sockets). A ticket is spent by any attempt
that gets past the origin check, even one refused afterwards. Messages are `{"type", "data"}`
JSON text; on the inbox and notification streams also `"id"`, and `?since=<id>` resumes them.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from flask import Response, g
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from burnbox.kv import StoreUnavailable
from models.admin.stats import platform_stats
from models.delivery import realtime as rt
from models.errors import Forbidden, RateLimited
from models.identity.users import User
from models.mail.inboxes import EMAILS_VIEW
from web import sockets
from web.api import Blueprint
from web.auth import Principal, current_session_id, current_user, protected
from web.context import close_db, db, runtime
from web.fields import Line
from web.permissions import REQUIRED_PERMISSION, SYSTEM_ADMIN_ONLY, authorize_inbox
from web.ratelimit import ticketed

blp = Blueprint("ws", __name__, url_prefix="/api/v1/ws",
                description="WebSocket streams (inbox mail, notifications, admin stats) and "
                            "their single-use tickets")


class TicketSchema(Schema):
    """A single-use WebSocket ticket."""

    ticket = fields.UUID(required=True, metadata={"description": "pass it as ?ticket="})
    expires_in = fields.Integer(required=True, metadata={"description": "seconds it stays valid"})


class TicketArgsSchema(Schema):
    ticket = Line(load_default="", metadata={
        "description": "a ticket from POST /ws/ticket; single use"})


class ResumeArgsSchema(TicketArgsSchema):
    since = fields.Integer(load_default=None, strict=False,
                           validate=validate.Range(min=0, max=2**63 - 1), metadata={
                               "description": "the id of the last message received: the kept "
                                              "messages after it come first"})


@blp.route("/ticket")
class Ticket(MethodView):
    @protected(blp)
    @blp.response(200, TicketSchema)
    @blp.alt_response(403, description="API keys cannot open WebSockets")
    def post(self) -> dict[str, Any]:
        """Get a single-use ticket for one WebSocket connection"""
        session_id = current_session_id()
        ttl = runtime().settings.websockets.ticket_ttl
        ticket = rt.issue_ticket(runtime().store, ttl, current_user().id, session_id)
        return {"ticket": ticket, "expires_in": int(ttl.total_seconds())}


def _admit(ticket: str) -> User:
    """Check the request before any upgrade and return the ticket's user. (A request that asks
    for no upgrade never gets here: the routes match WebSocket requests only, anything else is
    Werkzeug's 400.)"""
    sockets.check_origin(runtime().settings)
    user = rt.redeem_ticket(db(), runtime().store, ticket)
    # The ticket authenticates this request: the permission checks of web.permissions see its
    # user exactly as they see a signed-in caller's (tickets are issued to JWTs only).
    g.principal = Principal(user=user)
    return user


def _stream(user: User, stream: str, channels: Iterable[str], *, first: Iterable[str] = (),
            since: int | None = None, renew: Callable[[], None] = lambda: None) -> Response:
    """Take one of the user's socket slots and serve the channels until the client goes
    (`stream` names the route in the metrics)."""
    settings, store = runtime().settings, runtime().store
    slots = rt.SocketSlots(store, settings.websockets.max_per_user)
    slot = slots.acquire(user.id)
    if slot is None:
        raise RateLimited(f"at most {slots.limit} WebSockets per user; close one first")
    first = list(first)
    # The loop may last hours: give the request's database connection back first (on SQLite
    # an open transaction would hold the write lock all that time).
    close_db()

    def keep_alive() -> bool:
        try:
            renew()
            return slots.renew(slot)
        except StoreUnavailable:
            return True  # the store is down: keep the socket rather than drop every client

    channels = list(channels)
    kept = rt.KeptStream(store, channels[0]) if rt.resumable(channels[0]) else None
    try:
        return sockets.serve(settings, stream, channels, first=first, kept=kept, since=since,
                             keep_alive=keep_alive)
    finally:
        with contextlib.suppress(StoreUnavailable):  # the slot then expires on its own
            slots.release(slot)


def _document(view: Any) -> Any:
    """The answers every stream gives, for the OpenAPI document."""
    for status, description in (
            (400, "not a WebSocket upgrade request"),
            (401, "ticket malformed, unknown, already used or expired"),
            (403, "origin not allowed, or no right to this stream"),
            (429, "the user already holds the maximum number of WebSockets")):
        view = blp.alt_response(status, description=description)(view)
    return view


@blp.route("/inboxes/<uuid:inbox_id>", websocket=True)
class InboxStream(MethodView):
    @ticketed
    @blp.arguments(ResumeArgsSchema, location="query")
    @blp.response(101, description="Switching Protocols: then one `email.received` message per "
                                   "new e-mail, id = its number in the stream, data = the "
                                   "e-mail list item; with `since`, the missed ones first")
    @blp.alt_response(404, description="no such inbox, or not visible to the user")
    @blp.doc(**{REQUIRED_PERMISSION: EMAILS_VIEW})
    @_document
    def get(self, args: dict[str, Any], inbox_id: uuid.UUID) -> Response:
        """Stream the e-mail arriving in an inbox (WebSocket)"""
        user = _admit(args["ticket"])
        authorize_inbox(inbox_id, EMAILS_VIEW)
        return _stream(user, "inbox", [rt.inbox_channel(inbox_id)], since=args["since"])


@blp.route("/notifications", websocket=True)
class NotificationStream(MethodView):
    @ticketed
    @blp.arguments(ResumeArgsSchema, location="query")
    @blp.response(101, description="Switching Protocols: then one message per new "
                                   "notification, id = its number in the stream, type = the "
                                   "event, data = the notification; with `since`, the missed "
                                   "ones first")
    @_document
    def get(self, args: dict[str, Any]) -> Response:
        """Stream your notifications (WebSocket)"""
        user = _admit(args["ticket"])
        return _stream(user, "notifications", [rt.user_channel(user.id)], since=args["since"])


@blp.route("/admin-stats", websocket=True)
class AdminStatsStream(MethodView):
    @ticketed
    @blp.arguments(TicketArgsSchema, location="query")
    @blp.response(101, description="Switching Protocols: then `admin.stats` at once and every "
                                   "clock.admin_stats_interval")
    @blp.doc(**{SYSTEM_ADMIN_ONLY: True})
    @_document
    def get(self, args: dict[str, Any]) -> Response:
        """Stream platform statistics (WebSocket; system administrators)"""
        user = _admit(args["ticket"])
        if not user.is_system_admin:
            raise Forbidden("system administrator only")
        store = runtime().store
        snapshot = rt.encode_message(rt.ADMIN_STATS, platform_stats(db()))
        rt.mark_admin_presence(store)
        return _stream(user, "admin_stats", [rt.ADMIN_STATS_CHANNEL], first=[snapshot],
                       renew=lambda: rt.mark_admin_presence(store))
