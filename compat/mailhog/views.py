"""MailHog's API (v1 and v2) over one scope's mail: `/compat/mailhog/<inboxes|catch-all>/<id>`
followed by MailHog's own paths, so a MailHog client needs only a new base URL and a key.

Each view authenticates the scope with the permission the native route needs
(`compat.scopes.authenticate_scope`), calls the models' actions through the scope and answers
as MailHog does: bodies shaped by `compat.mailhog.shapes`, `text/json` where MailHog says so,
an empty 200 for a deletion or a release, an empty 400 or 404 where MailHog gives one. Refusals
are plain text: 401 (with `WWW-Authenticate`), 403, and a 404 for a scope that does not exist
or is another team's (the one answer for both, as for an e-mail id outside the scope).

Where Burnbox must differ, it does so on purpose (docs/compat.md, "What differs"):
- release never connects where the caller says: `Host`, `Port` and the SMTP login are ignored,
  and the message goes through the operator's release relay to `Email`, with the native
  release's permission, allow-lists, budget and audit (MailHog would act as an open relay);
- `outgoing-smtp` lists that one relay, with no credentials;
- `jim` sets the scope's chaos rules (`compat.mailhog.jim`);
- an unknown message id is a 404 (MailHog answers 200 `null` or 500), a bad body a 400 (MailHog
  answers 500 to a release it cannot decode).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
from flask import Response, request
from flask.views import MethodView
from sqlalchemy import func, select

from compat.caches import read_through
from compat.mailhog import jim as jims
from compat.mailhog import streams
from compat.mailhog.messages import (
    MESSAGE_COLUMNS,
    MessageRow,
    ShapedMessages,
    raw_of,
)
from compat.mailhog.shapes import top_level_part
from compat.scopes import (
    MANAGE,
    SCOPE_PATH,
    VIEW,
    CompatError,
    Scope,
    ScopeRef,
    authenticate_scope,
    email_id,
    install_converter,
    read_scope_ahead,
)
from models.errors import DomainError
from models.mail import release as releases
from models.mail.entities import Email
from models.mail.query import field_condition
from web import sockets
from web.api import Blueprint
from web.context import close_db, commit_db, db, reads_only, runtime
from web.fields import Line

blp = Blueprint("mailhog", __name__, url_prefix="/compat/mailhog" + SCOPE_PATH,
                description="The MailHog-compatible API, per scope (docs/compat.md)")
blp.record_once(install_converter)
blp.url_value_preprocessor(read_scope_ahead)

TEXT_JSON = "text/json"
APPLICATION_JSON = "application/json"
# MailHog's v1 list reads its store's first 1000 messages; v2 pages 50 at a time, 250 at most.
V1_LIMIT = 1000
V2_LIMIT, V2_MAX_LIMIT = 50, 250
SEARCH_KINDS = {"from": "from", "to": "to", "containing": None}
# The one outgoing server a release can name: the operator's release relay.
RELAY_NAME = "burnbox"
# Go's strconv.ParseInt(s, 10, 64), which MailHog reads start and limit with.
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_INT_MAX = 2**63 - 1
NOT_FOUND = "404 page not found\n"


def _answer(body: bytes | str = b"", status: int = 200, content_type: str = TEXT_JSON
            ) -> Response:
    return Response(body, status=status, content_type=content_type)


def _json(data: Any, content_type: str = TEXT_JSON, status: int = 200) -> Response:
    return _answer(orjson.dumps(data), status, content_type)


def _plain(text: str, status: int) -> Response:
    """A plain-text answer of one line."""
    return _answer(text + "\n", status, "text/plain; charset=utf-8")


def _not_found() -> Response:
    """What Go's router answers for nothing there, as MailHog does for a missing message."""
    return _answer(NOT_FOUND, 404, "text/plain; charset=utf-8")


@blp.errorhandler(CompatError)
def _refused(error: CompatError) -> Response:
    """A refusal of the scope: plain text, with its headers (401's WWW-Authenticate)."""
    if error.status == 404:
        return _not_found()
    response = _plain(error.message, error.status)
    response.headers.update(error.headers)
    return response


@blp.errorhandler(DomainError)
def _domain_refusal(error: DomainError) -> Response:
    """A model's refusal (a release's guard, a chaos rule's bounds) in MailHog's way: its
    status and a plain-text reason, never the native envelope; what the refusal keeps is
    committed first, as the native handler does."""
    if error.keeps_changes:
        commit_db()
    return _plain(error.message, error.status)


def _scope(kind: str, scope_id: str, permission: str) -> Scope:
    return authenticate_scope(ScopeRef.parse(kind, scope_id), permission)


# --- messages as MailHog shows them ---------------------------------------------------------

# What a row of MESSAGE_COLUMNS holds, about (its addresses and keys), as `compat.caches`
# weighs what it keeps.
ROW_WEIGHT = 1024


def shaped(email: MessageRow) -> orjson.Fragment:
    """A stored e-mail as MailHog's API shows a message, as JSON to put in an answer (kept in
    the process's `ShapedMessages`)."""
    rt = runtime()
    return orjson.Fragment(ShapedMessages.of(rt.caches).json_of(email, rt.storage,
                                                                rt.settings.smtp.hostname))


def _raw(email: MessageRow) -> bytes:
    return raw_of(email, runtime().storage)


def _found(scope: Scope, message_id: str) -> Email:
    """The scope's e-mail `message_id`; a 404 for any other id (malformed, unknown, another
    scope's), the same answer for each."""
    found = None if Line.refusal(message_id) else scope.get(db(), message_id)
    if found is None:
        raise CompatError(404, "not found")
    return found


def _found_row(scope: Scope, message_id: str) -> MessageRow:
    """As `_found`, only the MESSAGE_COLUMNS of it: what a read needs (an inbox scope's
    through `compat.caches`)."""
    wanted = None if Line.refusal(message_id) else email_id(message_id)
    found = None
    if wanted is not None:
        def load() -> MessageRow | None:
            return db().execute(scope.emails(*MESSAGE_COLUMNS).where(Email.id == wanted)).first()

        found = read_through(scope, ("mailhog message", wanted), load, lambda _: ROW_WEIGHT)
    if found is None:
        raise CompatError(404, "not found")
    return found


def _page(scope: Scope, start: int, limit: int, field: str | None = None, text: str = ""
          ) -> tuple[list[MessageRow], int]:
    """A page of the scope's e-mails (their MESSAGE_COLUMNS), newest first, and how many there
    are in all (matching `text` in `field`, when given: see
    `models.mail.query.field_condition`); an inbox's unfiltered pages through
    `compat.caches`."""
    listed = scope.emails(*MESSAGE_COLUMNS)
    if field is not None or text:
        condition = field_condition(field, text)
        if condition is not None:
            listed = listed.where(condition)
        total = int(db().scalar(select(func.count()).select_from(
            listed.order_by(None).subquery())) or 0)
        return (list(db().execute(listed.offset(start).limit(limit))) if start < total else [],
                total)

    def load() -> tuple[list[MessageRow], int]:
        total = scope.counts(db())[0]
        return (list(db().execute(listed.offset(start).limit(limit))) if start < total else [],
                total)

    return read_through(scope, ("mailhog page", start, limit), load,
                        lambda page: 512 + ROW_WEIGHT * len(page[0]))


def _go_int(text: str) -> int | None:
    """`text` as Go's ParseInt reads a 64-bit integer; None when it does not parse (a number
    of more digits than any int64 has is refused before Python converts it)."""
    if len(text) > 20 or not _GO_INT.fullmatch(text) or abs(int(text)) > _GO_INT_MAX:
        return None
    return int(text)


def _start_limit() -> tuple[int, int]:
    """MailHog v2's `start` (default 0) and `limit` (default 50, at most 250): a value that is
    not a positive whole number leaves the default."""
    start, limit = _go_int(request.args.get("start", "")), _go_int(request.args.get("limit", ""))
    return (start if start and start > 0 else 0,
            min(limit, V2_MAX_LIMIT) if limit and limit > 0 else V2_LIMIT)


def _v2_page(scope: Scope, content_type: str, field: str | None = None, text: str = ""
             ) -> Response:
    """v2's answer to a list or a search: `{total, count, start, items}` of the page that
    `start` and `limit` ask for."""
    start, limit = _start_limit()
    items, total = _page(scope, start, limit, field, text)
    return _json({"total": total, "count": len(items), "start": start,
                  "items": [shaped(email) for email in items]}, content_type)


def _go_object(raw: bytes) -> dict[str, Any] | None:
    """A request body as Go's JSON decoder reads it into a struct: a JSON object (NaN and
    Infinity are not JSON), or None when it is not one."""
    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        data = json.loads(raw, parse_constant=refuse)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _field(body: dict[str, Any], name: str) -> Any:
    """Field `name` of a decoded body, its case ignored as Go matches struct fields."""
    return next((value for key, value in body.items() if key.lower() == name.lower()), None)


# --- v1 -------------------------------------------------------------------------------------

@blp.route("/api/v1/messages")
class V1Messages(MethodView):
    @reads_only
    @blp.response(200, description="the scope's messages, newest first (at most 1000), in "
                  "MailHog's message shape", content_type=TEXT_JSON)
    def get(self, kind: str, scope_id: str) -> Response:
        """MailHog v1: list messages"""
        scope = _scope(kind, scope_id, VIEW)
        listed = scope.emails(*MESSAGE_COLUMNS).limit(V1_LIMIT)
        return _json([shaped(row) for row in db().execute(listed)])

    @blp.response(200, description="empty: every message of the scope is deleted",
                  content_type=TEXT_JSON)
    def delete(self, kind: str, scope_id: str) -> Response:
        """MailHog v1: delete every message of the scope"""
        scope = _scope(kind, scope_id, MANAGE)
        scope.delete_all(db())
        return _answer()


@blp.route("/api/v1/messages/<compat_text:message_id>")
class V1Message(MethodView):
    @reads_only
    @blp.response(200, description="one message in MailHog's shape", content_type=TEXT_JSON)
    def get(self, kind: str, scope_id: str, message_id: str) -> Response:
        """MailHog v1: get a message"""
        return _json(shaped(_found_row(_scope(kind, scope_id, VIEW), message_id)))

    @blp.response(200, description="empty: the message is deleted", content_type=TEXT_JSON)
    def delete(self, kind: str, scope_id: str, message_id: str) -> Response:
        """MailHog v1: delete a message"""
        scope = _scope(kind, scope_id, MANAGE)
        scope.delete(db(), [_found(scope, message_id)])
        return _answer()


@blp.route("/api/v1/messages/<compat_text:message_id>/download")
class V1Download(MethodView):
    @reads_only
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="message/rfc822",
                  description="the message as received, named `<id>.eml`")
    def get(self, kind: str, scope_id: str, message_id: str) -> Response:
        """MailHog v1: download a message"""
        found = _found_row(_scope(kind, scope_id, VIEW), message_id)
        response = _safe(_answer(_raw(found), content_type="message/rfc822"))
        response.headers["Content-Disposition"] = f'attachment; filename="{found.id}.eml"'
        return response


@blp.route("/api/v1/messages/<compat_text:message_id>/mime/part/<compat_text:index>/download")
class V1PartDownload(MethodView):
    @reads_only
    @blp.response(200, {"type": "string", "format": "binary"},
                  content_type="application/octet-stream",
                  description="a top-level MIME part, base64 decoded when it was encoded so")
    def get(self, kind: str, scope_id: str, message_id: str, index: str) -> Response:
        """MailHog v1: download a MIME part"""
        found = _found_row(_scope(kind, scope_id, VIEW), message_id)
        number = _go_int(index)
        part = None if number is None else top_level_part(_raw(found), number)
        if part is None:
            return _not_found()
        # The part's own type, always as a download in a sandbox: it is the sender's content,
        # and MailHog's habit of copying every part header onto the answer is not kept.
        response = _safe(_answer(part.body, content_type="application/octet-stream"))
        if part.content_type and _MEDIA_TYPE.match(part.content_type):
            response.headers["Content-Type"] = part.content_type
        response.headers["Content-Disposition"] = (
            f'attachment; filename="{found.id}-part-{number}"')
        return response


# A media type with parameters, printable ASCII on one line: what may go into the answer's
# Content-Type (a header from the mail must not inject another).
_MEDIA_TYPE = re.compile(r"[\w.+-]+/[\w.+-]+(;[ -~]*)?\Z", re.ASCII)


def _safe(response: Response) -> Response:
    """Stored mail bytes made harmless in Burnbox's origin: never sniffed, never scripted."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@blp.route("/api/v1/messages/<compat_text:message_id>/release")
class V1Release(MethodView):
    @blp.response(200, description="empty: the release is queued on the operator's relay",
                  content_type=TEXT_JSON)
    def post(self, kind: str, scope_id: str, message_id: str) -> Response:
        """MailHog v1: release a message (through Burnbox's release relay only)

        The body is MailHog's `{Email, Host, Port, Name, Save, Username, Password, Mechanism}`;
        only `Email` (the recipient) and `Name` (the relay `outgoing-smtp` lists) are read.
        The native release's guards all apply: `team.emails.release`, the allow-lists, the
        team's budget, the audit entry."""
        scope = _scope(kind, scope_id, VIEW)
        found = _found(scope, message_id)
        body = _go_object(request.get_data())
        if body is None:
            return _plain("Error decoding request body", 400)
        name, recipient = _field(body, "Name"), _field(body, "Email")
        if name not in (None, "", RELAY_NAME):
            return _answer(status=400)  # MailHog: no such server
        if not isinstance(recipient, str) or Line.refusal(recipient):
            return _plain("Email: one e-mail address", 400)
        scope.release(db(), found, [recipient])
        return _answer()


@blp.route("/api/v1/events")
class V1Events(MethodView):
    @blp.response(200, {"type": "string"}, content_type="text/event-stream",
                  description="an event per new message of the scope (`data:` lines of its "
                  "JSON in MailHog's shape), `keepalive:` every minute; 429 when the key's "
                  "creator holds websockets.max_per_user streams")
    def get(self, kind: str, scope_id: str) -> Response:
        """MailHog v1: stream new messages (EventSource)"""
        scope = _scope(kind, scope_id, VIEW)
        body = streams.event_stream(runtime(), scope)
        # The stream may last hours: give the request's database connection back first.
        close_db()
        response = Response(body, content_type="text/event-stream")
        response.headers["Cache-Control"] = "no-cache"
        return response


# --- v2 -------------------------------------------------------------------------------------

@blp.route("/api/v2/messages")
class V2Messages(MethodView):
    @reads_only
    @blp.response(200, description="`{total, count, start, items}`, newest first",
                  content_type=TEXT_JSON)
    def get(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: list messages (`start`, `limit`)"""
        return _v2_page(_scope(kind, scope_id, VIEW), TEXT_JSON)


@blp.route("/api/v2/search")
class V2Search(MethodView):
    @reads_only
    @blp.response(200, description="`{total, count, start, items}` of the matching messages",
                  content_type=APPLICATION_JSON)
    def get(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: search (`kind` from, to or containing; `query`; `start`, `limit`)"""
        scope = _scope(kind, scope_id, VIEW)
        search_kind, query = request.args.get("kind", ""), request.args.get("query", "")
        if search_kind not in SEARCH_KINDS or not query:
            return _answer(status=400)
        refusal = Line.refusal(query)
        if refusal:
            return _plain(f"query: {refusal}", 400)
        return _v2_page(scope, APPLICATION_JSON, SEARCH_KINDS[search_kind], query)


def _jim(kind: str, scope_id: str) -> tuple[Scope, bool]:
    """The scope, and whether Jim is on there (it has chaos rules)."""
    scope = _scope(kind, scope_id, VIEW)
    return scope, bool(scope.chaos_rules(db()))


@blp.route("/api/v2/jim")
class V2Jim(MethodView):
    @reads_only
    @blp.response(200, description="the chaos monkey the scope's chaos rules stand for; 404 "
                  "while the scope has none", content_type=APPLICATION_JSON)
    def get(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: get Jim (the scope's chaos rules)"""
        rules = _scope(kind, scope_id, VIEW).chaos_rules(db())
        return _json(jims.jim_of(rules), APPLICATION_JSON) if rules else _answer(status=404)

    @blp.response(201, description="empty: Jim is on (the body's chances, or MailHog's "
                  "defaults without a readable body); 400 when it was on already",
                  content_type=TEXT_JSON)
    def post(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: turn Jim on (set the scope's chaos rules)"""
        scope, on = _jim(kind, scope_id)
        if on:
            return _answer(status=400)
        try:
            jim = jims.read_jim(_go_object(request.get_data()))
        except jims.JimError:
            jim = jims.DEFAULTS  # MailHog ignores a body it cannot read here
        scope.set_chaos_rules(db(), jims.rules_of(jim))
        return _answer(status=201)

    @blp.response(200, description="empty: Jim's chances replaced; 404 while Jim is off, "
                  "400 for a body that is not Jim", content_type=TEXT_JSON)
    def put(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: change Jim (replace the scope's chaos rules)"""
        scope, on = _jim(kind, scope_id)
        if not on:
            return _answer(status=404)
        try:
            jim = jims.read_jim(_go_object(request.get_data()))
        except jims.JimError:
            return _answer(status=400)
        scope.set_chaos_rules(db(), jims.rules_of(jim))
        return _answer()

    @blp.response(200, description="empty: Jim is off (the scope's chaos rules cleared); "
                  "404 when it was off", content_type=TEXT_JSON)
    def delete(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: turn Jim off (clear the scope's chaos rules)"""
        scope, on = _jim(kind, scope_id)
        if not on:
            return _answer(status=404)
        scope.set_chaos_rules(db(), [])
        return _answer()


@blp.route("/api/v2/outgoing-smtp")
class V2OutgoingSmtp(MethodView):
    @reads_only
    @blp.response(200, description="the release relay, by name (empty without one); no "
                  "credentials", content_type=APPLICATION_JSON)
    def get(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: list outgoing SMTP servers (Burnbox's release relay)"""
        _scope(kind, scope_id, releases.RELEASE)
        relay = releases.release_relay(db(), runtime().settings)
        if relay is None:
            return _json({}, APPLICATION_JSON)
        return _json({RELAY_NAME: {
            "Name": RELAY_NAME, "Save": False, "Email": "", "Host": relay.relay.host,
            "Port": str(relay.relay.port), "Username": "", "Password": "", "Mechanism": ""}},
            APPLICATION_JSON)


@blp.route("/api/v2/websocket", websocket=True)
class V2WebSocket(MethodView):
    @blp.response(101, description="Switching Protocols: then one text message per new "
                  "message of the scope, its JSON in MailHog's shape; 403 from a browser page "
                  "of another origin, 429 when the key's creator holds websockets.max_per_user "
                  "streams")
    def get(self, kind: str, scope_id: str) -> Response:
        """MailHog v2: stream new messages (WebSocket)"""
        sockets.check_origin(runtime().settings)
        scope = _scope(kind, scope_id, VIEW)
        runtime_now = runtime()
        close_db()
        return streams.websocket(runtime_now, scope)
