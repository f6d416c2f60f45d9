"""Mailpit's API v1, its view pages and its probes under a scope's base path
(`/compat/mailpit/inboxes/<inbox id>` or `/compat/mailpit/catch-all/<assignment id>`, then
Mailpit's own paths), for Mailpit's published clients pointed at that base URL.

Each view authenticates its scope with the permission the native route needs
(`compat.scopes`), calls the models' actions through the `Scope`, and answers in Mailpit's
shapes (`compat.mailpit.shapes`): 200 for every success, a plain `ok` where Mailpit answers so,
a 400 plain-text body for anything Mailpit refuses, its 404 texts. The request bodies are read
as Go's `encoding/json` reads them into Mailpit's structs: field names in any case, `null` as
absent, a body that is not an object (or not JSON) an error, which for `DELETE messages` means
"delete everything", inside the scope. docs/compat.md lists the routes and what differs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import Any
from urllib.parse import quote

import orjson
from apispec import APISpec
from flask import Flask, Response, request, send_file
from flask.blueprints import BlueprintSetupState
from flask_smorest.spec.plugins import FlaskPlugin
from sqlalchemy import bindparam, case, func, select
from werkzeug.exceptions import HTTPException

import burnbox
from compat import scopes
from compat.caches import read_through
from compat.mailpit import bodies, events, features, shapes, thumbs
from compat.mailpit.bodies import MailpitError
from compat.mailpit.search import translate
from compat.scopes import SCOPE_PATH, CompatError, Scope, ScopeRef, authenticate_scope
from compat.streams import serve_websocket
from models.errors import DomainError, Forbidden, RateLimited
from models.mail import emails as mail
from models.mail import inboxes as mail_inboxes
from models.mail import release as releases
from models.mail.checks.checksums import checksums_of, digest
from models.mail.checks.html_check import check_html
from models.mail.checks.link_check import Outbound, run_link_check
from models.mail.entities import Attachment, Email
from models.mail.inboxes import Inbox
from models.mail.ingest.compose import put_message
from models.mail.ingest.parse import original_html
from models.mail.query import filter_emails
from models.mail.tag_entities import EmailTag, Tag, has_tag, search_key, tag_key
from models.mail.tags import ADD, REMOVE, REPLACE, change_email_tags
from web import sockets
from web.api import Blueprint
from web.context import close_db, commit_db, db, reads_only, runtime
from web.health import readiness_checks
from web.mail_pages import FRAME_POLICY, frame_document, mail_page
from web.permissions import caller
from web.ratelimit import rate_exempt

JSON = "application/json"

blp = Blueprint("mailpit", __name__, url_prefix="/compat/mailpit" + SCOPE_PATH,
                description="Mailpit's API v1 over one scope's mail, for Mailpit's clients "
                            "(docs/compat.md)")
blp.record_once(scopes.install_converter)
blp.url_value_preprocessor(scopes.read_scope_ahead)

API = "/api/v1"
DEFAULT_LIMIT = 50
# Mailpit answers every message for `limit=0`; here a page holds at most this many.
MAX_LIMIT = 1000
NOT_FOUND = "404 page not found"
MESSAGE_NOT_FOUND = "Message not found"


def _text(body: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    response = Response(body, status=status, mimetype="text/plain", headers=headers)
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _json(value: Any) -> Response:
    return Response(orjson.dumps(value) + b"\n", mimetype=JSON)


def _ok() -> Response:
    return _text("ok")


@blp.errorhandler(CompatError)
def _refused(error: CompatError) -> Response:
    return _text(error.message, error.status, error.headers)


@blp.errorhandler(MailpitError)
def _mailpit_error(error: MailpitError) -> Response:
    return _text(error.message, error.status)


@blp.errorhandler(DomainError)
def _domain_error(error: DomainError) -> Response:
    if error.keeps_changes:
        commit_db()
    return _text(error.message, 404 if error.status == 404 else 400)


@blp.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> Response:
    status = error.code or 400
    return _text(error.description or "", status if status in (404, 405, 413, 429) else 400)


def _scope(kind: str, scope_id: str, permission: str = scopes.VIEW) -> Scope:
    return authenticate_scope(ScopeRef.parse(kind, scope_id), permission)


def _ids(texts: list[str]) -> list[Any]:
    return [found for text in texts if (found := scopes.email_id(text)) is not None]


# --- lists and searches ---------------------------------------------------------------------

def _page_args() -> tuple[int, int, datetime | None]:
    """`start`, `limit` and `before` as Mailpit reads them: a bad number is the default."""
    def number(name: str, default: int, least: int) -> int:
        try:
            value = int(request.args.get(name, ""))
        except ValueError:
            return default
        return value if value >= least else default

    start, limit = number("start", 0, 1), number("limit", DEFAULT_LIMIT, 0)
    limit = MAX_LIMIT if limit == 0 else min(limit, MAX_LIMIT)
    before = None
    if request.args.get("before"):
        try:
            before = datetime.fromisoformat(request.args["before"])
        except ValueError:
            before = None  # Mailpit ignores a date it cannot read
        if before is not None and before.tzinfo is None:
            before = before.replace(tzinfo=UTC)
    return start, limit, before


def _matching(scope: Scope, query: str, *columns: Any) -> Any:
    return filter_emails(scope.emails(*columns), translate(query))


def _tags_of(where: Any) -> Any:
    return (select(Tag.name).distinct().join(EmailTag, EmailTag.tag_id == Tag.id)
            .join(Email, Email.id == EmailTag.email_id).where(where))


# An inbox scope's first statements built once, its id bound (SQLAlchemy builds a statement's
# expression objects anew on every call: a list spent a tenth of its time on that).
_INBOX = bindparam("inbox_id")
_INBOX_TAGS = _tags_of(mail.inbox_scope(_INBOX))
_INBOX_PAGE = (select(*shapes.SUMMARY_COLUMNS).where(mail.inbox_scope(_INBOX))
               .order_by(*mail.NEWEST_FIRST).offset(bindparam("start"))
               .limit(bindparam("limit")))


def _scope_tags(scope: Scope) -> list[str]:
    if scope.inbox is not None:
        names = db().scalars(_INBOX_TAGS, {"inbox_id": scope.inbox.id})
    else:
        names = db().scalars(_tags_of(scope.where))
    return sorted(names, key=tag_key)


def _summaries(query: Any, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    session = db()
    rows = list(session.execute(query, params))
    logins = [row.inbox_id for row in rows if row.envelope_to is not None]
    addresses: dict[Any, str] = {}
    if logins:
        addresses = dict(session.execute(select(Inbox.id, Inbox.full_address)
                                         .where(Inbox.id.in_(set(logins)))).all())
    return [shapes.summary(row, addresses.get(row.inbox_id, "")) for row in rows]


def _listing(scope: Scope, query_text: str | None) -> dict[str, Any]:
    session = db()
    start, limit, before = _page_args()
    total, unread = scope.counts(session)
    if query_text is None:
        page = scope.emails(*shapes.SUMMARY_COLUMNS)
        matched, matched_unread = total, unread
    else:
        page = _matching(scope, query_text, *shapes.SUMMARY_COLUMNS)
        counted = _matching(scope, query_text, Email.id, Email.is_read).order_by(None).subquery()
        matched, matched_unread = session.execute(select(
            func.count(), func.coalesce(func.sum(case((counted.c.is_read.is_(False), 1),
                                                      else_=0)), 0))).one()
    if query_text is None and before is None and scope.inbox is not None:
        messages = _summaries(_INBOX_PAGE, {"inbox_id": scope.inbox.id, "start": start,
                                            "limit": limit})
    else:
        if before is not None:
            page = page.where(Email.received_at < before)
        messages = _summaries(page.offset(start).limit(limit))
    if query_text is None and start == 0 and len(messages) == total:
        # The page holds every message of the scope, so their tags are the scope's.
        tags = sorted({name for item in messages for name in item["Tags"]}, key=tag_key)
    else:
        tags = _scope_tags(scope)
    return {"total": total, "unread": unread, "count": len(messages),
            "messages_count": int(matched), "messages_unread": int(matched_unread),
            "start": start, "tags": tags, "messages": messages}


@blp.route(API + "/messages", methods=["GET"])
@reads_only
def list_messages(kind: str, scope_id: str) -> Response:
    """List the scope's messages, newest first (Mailpit's `GET /api/v1/messages`); an inbox's
    pages through `compat.caches` (what a client polling for its mail reads)"""
    scope = _scope(kind, scope_id)
    start, limit, before = _page_args()
    if before is not None:
        return _json(_listing(scope, None))
    # Kept encoded: the JSON of a listing costs a fifth of a cached answer's time.
    body = read_through(scope, ("mailpit listing", start, limit),
                        lambda: orjson.dumps(_listing(scope, None)) + b"\n", len)
    return Response(body, mimetype=JSON)


@blp.route(API + "/messages", methods=["PUT"])
def set_read_status(kind: str, scope_id: str) -> Response:
    """Mark messages read or unread: `IDs`, a `Search`, or (neither) all the scope's"""
    scope = _scope(kind, scope_id)
    body = bodies.decoded()
    read, search = bodies.typed(body, "Read", bool, False), bodies.string(body, "Search")
    ids = bodies.strings(body, "IDs", lines=False)
    if ids and search:
        raise MailpitError("You may specify either IDs or a search query, not both")
    session = db()
    if search:
        scope.mark(session, list(session.scalars(_matching(scope, search))), read)
    elif ids:
        scope.mark(session, scope.find(session, _ids(ids)), read)
    else:
        scope.mark_all(session, read)
    return _ok()


@blp.route(API + "/messages", methods=["DELETE"])
def delete_messages(kind: str, scope_id: str) -> Response:
    """Delete messages by `IDs`; with none, or a body that cannot be read, all the scope's"""
    scope = _scope(kind, scope_id, scopes.MANAGE)
    session = db()
    try:
        ids = bodies.strings(bodies.decoded(), "IDs", lines=False)
    except MailpitError:
        ids = []  # Mailpit reads an unreadable body as "delete everything"
    if ids:
        scope.delete(session, scope.find(session, _ids(ids)))
    else:
        scope.delete_all(session)
    return _ok()


def _search_query() -> str:
    query = request.args.get("query", "").strip()
    if not query:
        raise MailpitError("Error: no search query")
    return bodies.line(query, "query")


@blp.route(API + "/search", methods=["GET"])
@reads_only
def search(kind: str, scope_id: str) -> Response:
    """Search the scope's messages with Mailpit's syntax (`query`), newest first"""
    return _json(_listing(_scope(kind, scope_id), _search_query()))


@blp.route(API + "/search", methods=["DELETE"])
def delete_search(kind: str, scope_id: str) -> Response:
    """Delete the scope's messages matching a search (`query`)"""
    scope = _scope(kind, scope_id, scopes.MANAGE)
    session = db()
    scope.delete(session, list(session.scalars(_matching(scope, _search_query()))))
    return _ok()


# --- one message ----------------------------------------------------------------------------

def _message(scope: Scope, message_id: str, missing: str = NOT_FOUND) -> Email:
    """The scope's message `message_id`, or its newest for `latest` (of a search when the
    request has a `query`); MailpitError 404 with `missing` (Mailpit's words) otherwise."""
    session = db()
    if message_id == "latest":
        query = bodies.line(request.args.get("query", "").strip(), "query")
        found = (session.scalars(_matching(scope, query).limit(1)).first() if query
                 else scope.latest(session))
        if found is None:
            raise MailpitError(MESSAGE_NOT_FOUND, 404)
        return found
    email = scope.get(session, message_id)
    if email is None:
        raise MailpitError(missing, 404)
    return email


def _raw(email: Email) -> bytes:
    with mail.open_object(runtime().storage, email.raw_key) as stream:
        return stream.read()


def _checksums(part: Attachment) -> dict[str, str]:
    known = checksums_of(part)
    if known is not None:
        return known
    with mail.open_object(runtime().storage, part.storage_key) as stream:
        return digest(stream)


def _read(scope: Scope, email: Email) -> Email:
    """Mark `email` read, as Mailpit does when a message is opened."""
    scope.mark(db(), [email], True)
    return email


@dataclass(frozen=True)
class Shown:
    """A message as `GET /api/v1/message/{ID}` answers it (the JSON, encoded: encoding is a
    fifth of a cached answer's time), its id, and whether it is read."""

    body: bytes
    id: uuid.UUID
    is_read: bool

    def weight(self) -> int:
        """What it holds, about: its JSON and 512 bytes."""
        return 512 + len(self.body)


def _shown(email: Email) -> Shown:
    checksums = {part.id: _checksums(part) for part in email.attachments}
    message = shapes.message(email, original_html(_raw(email)), checksums)
    return Shown(orjson.dumps(message) + b"\n", email.id, email.is_read)


def _mark_read(scope: Scope, email_id: uuid.UUID) -> None:
    """Mark the scope's e-mail `email_id` read in a transaction of its own: the request that
    reads it is read-only, so that a message read again (read already) is answered from the
    process's cache without a write."""
    with runtime().db.transaction() as session:
        scope.mark(session, scope.find(session, [email_id]), True)


@blp.route(API + "/message/<compat_text:message_id>", methods=["GET"])
@reads_only
def get_message(kind: str, scope_id: str, message_id: str) -> Response:
    """A message's summary, bodies and parts (`latest`: the newest); it is marked read. An
    inbox scope's message is kept in `compat.caches` while unchanged (a client polling one
    message reads it from there)"""
    if message_id == "latest":
        scope = _scope(kind, scope_id)
        shown = _shown(_message(scope, message_id))
    else:
        scope, email = scopes.authenticate_scope_of_email(ScopeRef.parse(kind, scope_id),
                                                          scopes.VIEW, message_id)
        if email is None:
            raise MailpitError(NOT_FOUND, 404)
        shown = read_through(scope, ("mailpit message", email.id), lambda: _shown(email),
                             Shown.weight)
    if not shown.is_read:
        _mark_read(scope, shown.id)
    return Response(shown.body, mimetype=JSON)


@blp.route(API + "/message/<compat_text:message_id>/headers", methods=["GET"])
@reads_only
def get_headers(kind: str, scope_id: str, message_id: str) -> Response:
    """A message's headers as sent: each name with its values"""
    email = _message(_scope(kind, scope_id), message_id)
    parsed = BytesHeaderParser(policy=compat32).parsebytes(_raw(email))
    pairs = [(name, str(value).encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
             for name, value in parsed.items()]
    return _json(shapes.header_map(pairs))


def _sandboxed(response: Response) -> Response:
    """`response` (a message's or a part's bytes) never sniffed, framed or scripted."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@blp.route(API + "/message/<compat_text:message_id>/raw", methods=["GET"])
@reads_only
def get_raw(kind: str, scope_id: str, message_id: str) -> Response:
    """A message's source as received (`dl=1`: as a download)"""
    email = _message(_scope(kind, scope_id), message_id)
    response = send_file(mail.open_object(runtime().storage, email.raw_key),
                         mimetype="text/plain")
    response.headers["Content-Type"] = "text/plain; charset=utf-8"
    if request.args.get("dl") == "1":
        response.headers["Content-Disposition"] = f'attachment; filename="{email.id}.eml"'
    return _sandboxed(response)


def _part(email: Email, part_id: str) -> Attachment:
    part = next((part for part in email.attachments if shapes.part_id(part) == part_id), None)
    if part is None:
        raise MailpitError(NOT_FOUND, 404)
    return part


@blp.route(API + "/message/<compat_text:message_id>/part/<compat_text:part_id>",
           methods=["GET"])
@reads_only
def get_part(kind: str, scope_id: str, message_id: str, part_id: str) -> Response:
    """An attachment or inline part of a message by its `PartID`"""
    part = _part(_message(_scope(kind, scope_id), message_id), part_id)
    response = send_file(mail.open_object(runtime().storage, part.storage_key),
                         mimetype=part.content_type)
    name = part.filename or part.content_id or ""
    response.headers["Content-Disposition"] = f'inline; filename="{quote(name)}"'
    return _sandboxed(response)


@blp.route(API + "/message/<compat_text:message_id>/part/<compat_text:part_id>/thumb",
           methods=["GET"])
@reads_only
def get_part_thumbnail(kind: str, scope_id: str, message_id: str, part_id: str) -> Response:
    """A part's 180x120 JPEG thumbnail; blank for a part that is no image (or whose thumbnail
    the worker has not made yet)"""
    part = _part(_message(_scope(kind, scope_id), message_id), part_id)
    stored = None
    if part.thumbnail_key is not None:
        with mail.open_object(runtime().storage, part.thumbnail_key) as stream:
            stored = stream.read()
    response = Response(thumbs.mailpit_thumbnail(stored), mimetype=thumbs.MIME_TYPE)
    response.cache_control.private = True
    return _sandboxed(response)


@blp.route(API + "/message/<compat_text:message_id>/html-check", methods=["GET"])
@reads_only
def html_check(kind: str, scope_id: str, message_id: str) -> Response:
    """The native HTML check of a message's HTML as sent, in Mailpit's shape"""
    email = _message(_scope(kind, scope_id), message_id)
    markup = original_html(_raw(email))
    if not markup.strip():
        raise MailpitError("message does not contain HTML")
    return _json(features.html_check(check_html(markup)))


@blp.route(API + "/message/<compat_text:message_id>/link-check", methods=["GET"])
def link_check(kind: str, scope_id: str, message_id: str) -> Response:
    """The native link check of a message's links (`follow`: statuses after redirects)"""
    email = _message(_scope(kind, scope_id), message_id)
    result = run_link_check(db(), email, Outbound.of(runtime().settings))
    return _json(features.link_check(result, request.args.get("follow") in ("true", "1")))


@blp.route(API + "/message/<compat_text:message_id>/release", methods=["POST"])
def release(kind: str, scope_id: str, message_id: str) -> Response:
    """Release a message to `To` through the native release (its relay and guard rails)"""
    scope = _scope(kind, scope_id)
    recipients = bodies.strings(bodies.decoded(), "To")
    if not recipients:
        raise MailpitError("No valid addresses found")
    scope.release(db(), _message(scope, message_id), recipients)
    return _ok()


@blp.route(API + "/send", methods=["POST"])
def send(kind: str, scope_id: str) -> Response:
    """Put a message into the scope's inbox as though it came over SMTP; answers its `ID`"""
    scope = _scope(kind, scope_id)
    scope.authorize(mail_inboxes.MANAGE)
    try:
        if scope.inbox is None:
            raise MailpitError("send needs an inbox scope: a catch-all has no one inbox")
        composition = features.composition(bodies.decoded())
        rt = runtime()
        email_id = put_message(rt.db, rt.storage, rt.settings, db(), caller(), scope.inbox,
                               composition)
    except (MailpitError, DomainError) as refused:
        response = _json({"Error": refused.message})
        response.status_code = 400
        return response
    return _json({"ID": str(email_id)})


@blp.route(API + "/chaos", methods=["GET"])
@reads_only
def get_chaos(kind: str, scope_id: str) -> Response:
    """The scope's chaos rules as Mailpit's triggers"""
    scope = _scope(kind, scope_id)
    return _json(features.chaos_triggers(scope.chaos_rules(db())))


@blp.route(API + "/chaos", methods=["PUT"])
def set_chaos(kind: str, scope_id: str) -> Response:
    """Set Mailpit's triggers as the scope's chaos rules (replacing them)"""
    scope = _scope(kind, scope_id)
    rules = scope.set_chaos_rules(db(), features.chaos_rules(bodies.decoded()))
    return _json(features.chaos_triggers(rules))


# --- tags -----------------------------------------------------------------------------------

@blp.route(API + "/tags", methods=["GET"])
@reads_only
def get_tags(kind: str, scope_id: str) -> Response:
    """Every tag of the scope's messages, sorted"""
    return _json(_scope_tags(_scope(kind, scope_id)))


@blp.route(API + "/tags", methods=["PUT"])
def set_tags(kind: str, scope_id: str) -> Response:
    """Give the messages `IDs` exactly the tags `Tags` (none: untag them)"""
    scope = _scope(kind, scope_id)
    body = bodies.decoded()
    tags, ids = bodies.strings(body, "Tags"), bodies.strings(body, "IDs", lines=False)
    session = db()
    for email in scope.find(session, _ids(ids)):
        change_email_tags(session, email, scope.team_id, tags, REPLACE)
    return _ok()


def _tagged(scope: Scope, tag: str) -> list[Email]:
    """The scope's e-mails carrying the path's `tag` (a 400 for a tag no e-mail can carry)."""
    return list(db().scalars(scope.emails().where(has_tag(search_key(bodies.line(tag, "tag"))))))


@blp.route(API + "/tags/<compat_text:tag>", methods=["PUT"])
def rename_tag(kind: str, scope_id: str, tag: str) -> Response:
    """Rename a tag on the scope's messages (`Name`); other scopes' keep theirs"""
    scope = _scope(kind, scope_id)
    name = bodies.string(bodies.decoded(), "Name")
    if not name.strip():
        raise MailpitError("Tag name cannot be empty")
    session = db()
    for email in _tagged(scope, tag):
        change_email_tags(session, email, scope.team_id, [tag], REMOVE)
        change_email_tags(session, email, scope.team_id, [name], ADD)
    return _ok()


@blp.route(API + "/tags/<compat_text:tag>", methods=["DELETE"])
def delete_tag(kind: str, scope_id: str, tag: str) -> Response:
    """Take a tag off the scope's messages"""
    scope = _scope(kind, scope_id)
    session = db()
    for email in _tagged(scope, tag):
        change_email_tags(session, email, scope.team_id, [tag], REMOVE)
    return _ok()


# --- the application ------------------------------------------------------------------------

@blp.route("/api/events", methods=["GET"], websocket=True)
def live_events(kind: str, scope_id: str) -> Response:
    """Mailpit's live events (WebSocket): `{"Type", "Data"}` text messages for each new
    message of the scope and each change of its mail (`new`, `update`, `delete`, `truncate`,
    `prune`, `stats`); 403 from a browser page of another origin, 429 when the key's creator
    holds websockets.max_per_user streams"""
    try:
        # A page of another origin is a 403, as Mailpit's own upgrader answers it.
        sockets.check_origin(runtime().settings)
    except Forbidden as refused:
        raise MailpitError(refused.message, 403) from None
    scope = _scope(kind, scope_id)
    runtime_now = runtime()
    close_db()
    try:
        shaper = events.ScopeEvents(runtime_now, scope.where, scope.inbox_ids,
                                    one_inbox=scope.inbox is not None)
        return serve_websocket(runtime_now, scope, "compat_mailpit", shaper, changes=True)
    except RateLimited as refused:  # a 429, not the 400 of Mailpit's refusals
        raise MailpitError(refused.message, 429) from None


@blp.route(API + "/info", methods=["GET"])
@reads_only
def info(kind: str, scope_id: str) -> Response:
    """Figures of the scope, in the shape of Mailpit's application information"""
    scope = _scope(kind, scope_id)
    session = db()
    total, unread = scope.counts(session)
    tag_counts = dict(session.execute(
        select(Tag.name, func.count()).join(EmailTag, EmailTag.tag_id == Tag.id)
        .join(Email, Email.id == EmailTag.email_id).where(scope.where).group_by(Tag.name)).all())
    size = session.scalar(select(func.coalesce(func.sum(Email.size_bytes), 0))
                          .where(scope.where))
    return _json({"Version": burnbox.__version__, "LatestVersion": "", "Database": "",
                  "DatabaseSize": int(size or 0),
                  "Messages": total, "Unread": unread, "Tags": tag_counts,
                  "RuntimeStats": {"Uptime": 0, "Memory": 0, "MessagesDeleted": 0,
                                   "SMTPAccepted": 0, "SMTPAcceptedSize": 0, "SMTPRejected": 0,
                                   "SMTPIgnored": 0}})


@blp.route(API + "/webui", methods=["GET"])
@reads_only
def webui(kind: str, scope_id: str) -> Response:
    """Which of Mailpit's optional features this scope offers (its web UI's settings)"""
    _scope(kind, scope_id)
    settings = runtime().settings
    relay = releases.release_relay(db(), settings)
    return _json({"Label": "Burnbox",
                  "MessageRelay": {"Enabled": relay is not None, "SMTPServer": "",
                                   "ReturnPath": "",
                                   "AllowedRecipients": "", "BlockedRecipients": "",
                                   "OverrideFrom": "", "PreserveMessageIDs": False,
                                   "RecipientAllowlist": ""},
                  # sa-check is not served: Burnbox's spam engine verdict is its own field.
                  "SpamAssassin": False, "ChaosEnabled": True, "DuplicatesIgnored": False,
                  "HideDeleteAllButton": False})


# --- pages and probes -----------------------------------------------------------------------

def _view(kind: str, scope_id: str, message_id: str,
          render: Callable[[Email], Response]) -> Response:
    scope = _scope(kind, scope_id)
    return render(_read(scope, _message(scope, message_id, MESSAGE_NOT_FOUND)))


def _html_page(email: Email) -> Response:
    if not email.body_html:
        raise MailpitError("This message does not contain a HTML part", 404)
    return mail_page(frame_document(email.body_html, FRAME_POLICY), "text/html", FRAME_POLICY)


def _text_page(email: Email) -> Response:
    return mail_page(email.body_text, "text/plain", "default-src 'none'")


@blp.route("/view/<compat_text:message_id>.html", methods=["GET"])
def view_html(kind: str, scope_id: str, message_id: str) -> Response:
    """A message's HTML body as a page (sanitised, behind the native view page's walls)"""
    return _view(kind, scope_id, message_id, _html_page)


@blp.route("/view/<compat_text:message_id>.txt", methods=["GET"])
def view_text(kind: str, scope_id: str, message_id: str) -> Response:
    """A message's text body as a page"""
    return _view(kind, scope_id, message_id, _text_page)


def _serve_doubled_view_paths(state: BlueprintSetupState) -> None:
    """Mailpit answers `//view/...` as `/view/...`: a client joining a base URL that ends in
    "/" with "/view/..." asks for it. The router would redirect it to the one-slash path, and
    a blueprint's rule cannot begin with two slashes (they are joined to the prefix as one),
    so the app gets these rules, with slashes kept, under endpoints of this blueprint (its
    error handlers and preprocessors apply to them)."""
    for suffix, view in ((".html", view_html), (".txt", view_text)):
        state.app.add_url_rule(
            f"{blp.url_prefix}//view/<compat_text:message_id>{suffix}",
            endpoint=f"{blp.name}.{view.__name__}_doubled", view_func=view, methods=["GET"],
            merge_slashes=False, defaults={})  # {}: the OpenAPI plugin reads the defaults


blp.record_once(_serve_doubled_view_paths)


def document_doubled_view_paths(app: Flask, spec: APISpec) -> None:
    """Give the `//view/...` paths of `app` the one-slash pages' documentation in `spec` (the
    app's OpenAPI document, once this blueprint is registered): every route served is
    documented."""
    paths = spec.to_dict()["paths"]
    for view in (view_html, view_text):
        single = next(app.url_map.iter_rules(f"{blp.name}.{view.__name__}"))
        item = dict(paths[FlaskPlugin.flaskpath2openapi(single.rule)])
        parameters = item.pop("parameters", None)
        for doubled in app.url_map.iter_rules(f"{blp.name}.{view.__name__}_doubled"):
            spec.path(rule=doubled, operations=item, parameters=parameters)


@blp.route("/livez", methods=["GET"])
@rate_exempt
def livez(kind: str, scope_id: str) -> Response:
    """Liveness, as Mailpit answers it: 200 with an empty body (no credentials needed)"""
    return _text("")


@blp.route("/readyz", methods=["GET"])
@rate_exempt
def readyz(kind: str, scope_id: str) -> Response:
    """Readiness: 200 while the database, Redis and storage answer, else 503"""
    if all(value == "ok" for value in readiness_checks().values()):
        return _text("")
    return _text("Service Unavailable\n", 503)
