"""E-mails: /api/v1/inboxes/:id/emails..., /api/v1/emails/:id... Access follows the e-mail's
inbox (its creator, or `team.emails.view` / `team.emails.manage` in its team). Marking e-mails
read or unread is part of reading them (`team.emails.view`, one of the API-key scopes of
docs/api-keys.md); deleting one, or every e-mail of an inbox (`DELETE /inboxes/:id/emails`, a
Burnbox extension), needs `team.emails.manage`.

Attachments download with their stored content type, always as an attachment (never rendered
inline) and with `X-Content-Type-Options: nosniff`, so a hostile attachment cannot run in the
API's origin. On the s3 storage backend the download is a redirect (302) to a signed URL of the
bucket valid for `storage.signed_url_ttl`, so the bytes never pass through the web process.

The raw source (`GET /inboxes/:id/emails/:emailId/raw`, a Burnbox extension) is served
by the web process on every storage backend, as `message/rfc822` named `<email id>.eml`.

Waiting (`GET /inboxes/:id/emails/wait`, `GET /orgs/:id/teams/:tid/emails/wait`) answers 200
with `{"emails": [...detail...], "timed_out": false}` as soon as `count` matching e-mails are
stored, or `timed_out: true` with those found so far (possibly none) when `timeout` passes:
running out of time is an expected outcome for a test client, not an error. See `web.waits`.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from flask import Response, redirect, send_file
from flask.views import MethodView
from marshmallow import Schema, fields, pre_dump, validate
from sqlalchemy import ColumnElement, and_

from models.delivery.realtime import inbox_channel, team_channel
from models.errors import NotFound
from models.mail import emails
from models.mail.authentication import RESULTS as AUTH_RESULTS
from models.mail.authentication import auth_results_of
from models.mail.catchall import receiving_team
from models.mail.emails import (
    MAX_WAIT_COUNT,
    EmailAccess,
    WaitCriteria,
    email_summary,
    inbox_scope,
    resolve_after,
    team_scope,
    waited_emails,
)
from models.mail.entities import MAX_ADDRESS, Email
from models.mail.html_check import check_html
from models.mail.inboxes import EMAILS_MANAGE, EMAILS_VIEW, InboxAccess, parse_ttl
from models.mail.ingest import normalise_address
from models.mail.link_check import Outbound, last_link_check, run_link_check
from models.mail.parse import original_html
from models.mail.spam_reasons import spam_reasons
from models.tenancy.teams import TeamAccess
from web import waits
from web.api import Blueprint, MessageSchema
from web.context import db, inbox_caches, reads_only, runtime
from web.fields import JsonBoolean, Line, Timestamp
from web.pagination import PageArgsSchema, page_response, page_schema
from web.permissions import (
    authorize_team,
    declares,
    require_email,
    require_inbox,
    require_team,
)

blp = Blueprint("emails", __name__, url_prefix="/api/v1", description="Emails and attachments")


class EmailFieldsSchema(Schema):
    """The fields of an e-mail list item, shared by the list item and the detail."""

    id = fields.UUID(required=True)
    inbox_id = fields.UUID(required=True)
    message_id = fields.String(required=True, metadata={"description": "the Message-ID header"})
    from_address = fields.String(required=True)
    to_address = fields.String(required=True, metadata={
        "description": "the inbox address it was delivered to"})
    subject = fields.String(required=True)
    snippet = fields.String(required=True, metadata={"description": "start of the text body"})
    has_attachments = fields.Boolean(required=True)
    is_read = fields.Boolean(required=True)
    size_bytes = fields.Integer(required=True, metadata={"description": "raw message size"})
    received_at = Timestamp(required=True)


class EmailSummarySchema(EmailFieldsSchema):
    """An e-mail in a list."""

    @pre_dump
    def summary(self, email: Email | dict[str, Any], **_: Any) -> dict[str, Any]:
        """The values of `email_summary`, which the inbox stream sends too (a list's rows are
        those values already)."""
        return email if isinstance(email, dict) else email_summary(email)


class AttachmentSchema(Schema):
    """An attachment (executables are dropped on arrival)."""

    id = fields.UUID(required=True)
    email_id = fields.UUID(required=True)
    filename = fields.String(required=True)
    content_type = fields.String(required=True)
    size_bytes = fields.Integer(required=True)
    content_id = fields.String(required=True, allow_none=True, metadata={
        "description": "the part's Content-ID without angle brackets (null when it has none): "
                       "the HTML body shows it with `cid:<content_id>`"})
    inline = fields.Boolean(required=True, metadata={
        "description": "shown in place by the HTML body (a Content-ID, and not marked "
                       "`Content-Disposition: attachment`) rather than offered as a file"})
    created_at = Timestamp(required=True)


class LinkSchema(Schema):
    """A link found in an e-mail's bodies."""

    href = fields.String(required=True)
    text = fields.String(required=True, metadata={
        "description": "the link's text in the HTML body; empty for a URL of the text body"})


# --- Authentication results (issue #40: models.mail.authentication) ---------------------------

RESULT = {"description": "pass, fail, softfail, neutral, none, temperror or permerror",
          "enum": list(AUTH_RESULTS)}


class CheckResultSchema(Schema):
    result = fields.String(required=True, metadata=RESULT)
    domain = fields.String(required=True, metadata={"description": "the domain it is about"})
    reason = fields.String(required=True, metadata={
        "description": "why, in words (empty when there is nothing to add)"})


class SpfResultSchema(CheckResultSchema):
    """SPF of the connecting IP (RFC 7208) for the MAIL FROM domain, or the HELO name for an
    empty MAIL FROM."""

    identity = fields.String(required=True, metadata={
        "description": "which domain was checked: mailfrom or helo", "enum": ["mailfrom", "helo"]})
    ip = fields.String(required=True, metadata={"description": "the connecting IP address"})


class DkimResultSchema(CheckResultSchema):
    """One DKIM-Signature (RFC 6376); `domain` is its d=."""

    selector = fields.String(required=True, metadata={"description": "its s="})


class AlignmentSchema(Schema):
    spf = fields.String(required=True, metadata={"enum": ["relaxed", "strict"]})
    dkim = fields.String(required=True, metadata={"enum": ["relaxed", "strict"]})


class DmarcResultSchema(CheckResultSchema):
    """DMARC (RFC 7489); `domain` is the From domain."""

    record_domain = fields.String(required=True, metadata={
        "description": "where the policy record was found (the From domain or its "
                       "organisational domain); empty without one"})
    policy = fields.String(required=True, metadata={
        "description": "the published policy that applies (none, quarantine, reject); empty "
                       "without a record"})
    alignment = fields.Nested(AlignmentSchema, required=True, metadata={
        "description": "the record's alignment modes (relaxed without a record)"})
    spf_aligned = fields.Boolean(required=True)
    dkim_aligned = fields.Boolean(required=True)


class ArcResultSchema(CheckResultSchema):
    """The ARC chain (RFC 8617); `domain` is its latest sealer, `none` when there is no chain."""

    instances = fields.Integer(required=True, metadata={"description": "ARC sets in the chain"})


class AuthResultsSchema(Schema):
    """The authentication results, computed after the e-mail is stored."""

    status = fields.String(required=True, metadata={
        "enum": ["pending", "done", "unavailable"],
        "description": "pending until computed (usually within a second); unavailable for "
                       "e-mails stored before they existed"})
    spf = fields.Nested(SpfResultSchema, required=True, allow_none=True)
    dkim = fields.List(fields.Nested(DkimResultSchema), required=True, metadata={
        "description": "one per DKIM-Signature, top first; empty for an unsigned message"})
    dmarc = fields.Nested(DmarcResultSchema, required=True, allow_none=True)
    arc = fields.Nested(ArcResultSchema, required=True, allow_none=True)


class AuthResultsField(fields.Nested):
    """The e-mail's `auth_results`, or their pending shape while not computed."""

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return auth_results_of(obj)


# --- end of authentication results ------------------------------------------------------------


class EmailDetailSchema(EmailFieldsSchema):
    """An e-mail with its bodies, headers and attachments."""

    cc = fields.List(fields.String(), required=True)
    envelope_to = fields.List(fields.String(), required=True, allow_none=True, metadata={
        "description": "the envelope recipients (RCPT TO) of a message sent with the inbox's "
                       "SMTP capture credentials, stored once whoever it named; null for mail "
                       "delivered to the inbox's own address"})
    body_text = fields.String(required=True)
    body_html = fields.String(required=True, metadata={
        "description": "sanitised HTML: no scripts, event handlers, forms or remote frames"})
    headers = fields.Method("header_objects", required=True, metadata={
        "type": "array", "description": "every header line, in message order (names repeat)",
        "items": {"type": "object", "required": ["name", "value"],
                  "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}})
    spam_score = fields.Float(required=True, metadata={"description": "0 (clean) to 10"})
    # --- Issue #40 (checks): the spam score explained ---
    spam_reasons = fields.Method("explained_spam_score", required=True, allow_none=True,
                                 metadata={
        "type": "array", "nullable": True,
        "description": "the heuristics that made `spam_score` (the sum of their points, capped "
                       "at 10), in the order found; empty for a score of 0, null for e-mails "
                       "stored before they were kept",
        "items": {"type": "object", "required": ["name", "count", "points", "description"],
                  "properties": {"name": {"type": "string"}, "count": {"type": "integer"},
                                 "points": {"type": "number"},
                                 "description": {"type": "string"}}}})
    # --- end of issue #40 (checks) ---
    expires_at = Timestamp(required=True, metadata={"description": "removed with its inbox"})
    attachments = fields.List(fields.Nested(AttachmentSchema), required=True)
    links = fields.List(fields.Nested(LinkSchema), required=True, metadata={
        "description": "http(s) links of the HTML and text bodies, each once, in document "
                       "order; empty for e-mails stored before links were extracted"})
    codes = fields.List(fields.String(), required=True, metadata={
        "description": "one-time codes (4-8 digits or nine in three groups, short "
                       "letter-and-digit tokens, or grouped capital consonants such as "
                       "BKTX-QRMZ, next to words like code, OTP, PIN, verification, コード), "
                       "in order; search with `q=code:<code>`"})
    auth_results = AuthResultsField(AuthResultsSchema, required=True, metadata={
        "description": "SPF, DKIM, DMARC and ARC; search with `q=spf:`, `dkim:`, `dmarc:`"})

    def header_objects(self, email: Email) -> list[dict[str, str]]:
        """The stored [name, value] pairs as objects."""
        return [{"name": name, "value": value} for name, value in email.headers]

    def explained_spam_score(self, email: Email) -> list[dict[str, Any]] | None:
        """The spam signals kept at ingest, with their points and meaning."""
        return spam_reasons(email.spam_signals)


class EmailListArgsSchema(PageArgsSchema):
    q = Line(validate=validate.Length(max=500), metadata={
        "description": "search: plain words and \"phrases\" as full text (whole words) in "
                       "subject, sender and text body; from:, to:, subject: (substrings), "
                       "has:attachment, is:read, is:unread, before:/after:YYYY-MM-DD, "
                       "code:<code>, spf:/dkim:/dmarc:<result or pending>; -term negates. "
                       "A malformed query is a 400 validation_error naming the offset of the "
                       "fault"})


DEFAULT_WAIT = timedelta(seconds=30)


class WaitArgsSchema(Schema):
    from_address = Line(data_key="from", validate=validate.Length(max=MAX_ADDRESS), metadata={
        "description": "only e-mails whose From address contains this (case-blind)"})
    subject = Line(validate=validate.Length(max=500), metadata={
        "description": "only e-mails whose subject contains this (case-blind)"})
    q = Line(validate=validate.Length(max=500), metadata={
        "description": "only e-mails matching this full-text search (as the list's `q`)"})
    after = Line(validate=validate.Length(max=64), metadata={
        "description": "only e-mails received after this one (an e-mail id among those waited "
                       "for) or this ISO 8601 timestamp; without it, mail already there counts"})
    count = fields.Integer(load_default=1, validate=validate.Range(1, MAX_WAIT_COUNT), metadata={
        "description": "how many matching e-mails to wait for"})
    timeout = Line(validate=validate.Length(max=32), metadata={
        "description": "how long to wait, a Go duration (`30s` by default, at most the "
                       "`wait.max_timeout` setting, 5m by default)"})


class WaitResultSchema(Schema):
    emails = fields.List(fields.Nested(EmailDetailSchema), required=True, metadata={
        "description": "the first `count` matching e-mails, oldest first (fewer on a timeout)"})
    timed_out = fields.Boolean(required=True, metadata={
        "description": "true when `timeout` passed before `count` e-mails matched"})


def _wait(scope: ColumnElement[bool], channels: list[str], args: dict[str, Any]
          ) -> dict[str, Any]:
    """Wait for the e-mails `args` describe among `scope`, woken by `channels`, where mailin
    publishes new mail right after its commit (or the worker's fan-out, when mailin could
    not)."""
    ceiling = runtime().settings.wait.max_timeout
    timeout = parse_ttl(args.get("timeout"), "timeout", min(DEFAULT_WAIT, ceiling), ceiling)
    after = args.get("after")
    criteria = WaitCriteria(
        count=args["count"], from_address=args.get("from_address"), subject=args.get("subject"),
        q=args.get("q"), after=resolve_after(db(), scope, after) if after else None)
    found, timed_out = waits.wait_for(channels, lambda: waited_emails(db(), scope, criteria),
                                      criteria.count, timeout)
    return {"emails": found, "timed_out": timed_out}


class EmailUpdateSchema(Schema):
    is_read = JsonBoolean(required=True)


class MarkedReadSchema(Schema):
    marked = fields.Integer(required=True, metadata={"description": "e-mails marked read"})


class EmailsDeletedSchema(MessageSchema):
    deleted = fields.Integer(required=True, metadata={"description": "e-mails deleted"})


@blp.route("/inboxes/<uuid:inbox_id>/emails")
class InboxEmails(MethodView):
    @reads_only
    @require_inbox(EMAILS_VIEW)
    @blp.arguments(EmailListArgsSchema, location="query")
    @blp.response(200, page_schema(EmailSummarySchema))
    def get(self, args: dict[str, Any], inbox: InboxAccess) -> Response:
        """List an inbox's emails, newest first"""
        found = emails.list_emails(db(), inbox.inbox.id, q=args.get("q"), page=args["page"],
                                   per_page=args["per_page"], cache=inbox_caches())
        return page_response(found)

    @require_inbox(EMAILS_MANAGE)
    @blp.response(200, EmailsDeletedSchema)
    def delete(self, inbox: InboxAccess) -> dict[str, Any]:
        """Delete every email of an inbox, keeping the inbox (a Burnbox extension)"""
        deleted = emails.delete_all_emails(db(), inbox.inbox)
        return {"message": "Emails deleted", "deleted": deleted}


@blp.route("/inboxes/<uuid:inbox_id>/emails/wait")
class InboxEmailWait(MethodView):
    @require_inbox(EMAILS_VIEW)
    @blp.arguments(WaitArgsSchema, location="query")
    @blp.response(200, WaitResultSchema)
    def get(self, args: dict[str, Any], inbox: InboxAccess) -> dict[str, Any]:
        """Wait until matching emails arrive in an inbox (or the timeout passes)"""
        inbox_id = inbox.inbox.id
        return _wait(inbox_scope(inbox_id), [inbox_channel(inbox_id)], args)


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/emails/wait")
class TeamEmailWait(MethodView):
    @require_team(EMAILS_VIEW)
    @blp.arguments(WaitArgsSchema, location="query")
    @blp.response(200, WaitResultSchema)
    def get(self, args: dict[str, Any], team: TeamAccess) -> dict[str, Any]:
        """Wait until matching emails arrive in any inbox of a team (or the timeout passes)"""
        team_id = team.team.id
        return _wait(team_scope(team_id), [team_channel(team_id)], args)


@blp.route("/inboxes/by-address/<string:address>/emails/wait")
class AddressEmailWait(MethodView):
    @declares(EMAILS_VIEW)
    @blp.arguments(WaitArgsSchema, location="query")
    @blp.response(200, WaitResultSchema)
    @blp.alt_response(404, description="no live inbox has the address and no catch-all "
                                       "assignment of a team of yours catches its domain")
    def get(self, args: dict[str, Any], address: str) -> dict[str, Any]:
        """Wait until matching emails arrive at an address, also one whose inbox does not exist
        yet and is created by its first message at a catch-all domain (a Burnbox extension)"""
        normalised = normalise_address(address)
        team = receiving_team(db(), normalised) if normalised else None
        if normalised is None or team is None:
            raise NotFound("no inbox or catch-all domain receives mail at this address")
        org_id, team_id = team
        authorize_team(org_id, team_id, EMAILS_VIEW)
        return _wait(and_(team_scope(team_id), Email.to_address == normalised),
                     [team_channel(team_id)], args)


@blp.route("/inboxes/<uuid:inbox_id>/emails/mark-all-read")
class InboxMarkAllRead(MethodView):
    @require_inbox(EMAILS_VIEW)
    @blp.response(200, MarkedReadSchema)
    def post(self, inbox: InboxAccess) -> dict[str, int]:
        """Mark every email of an inbox read"""
        marked = emails.mark_all_read(db(), inbox.inbox)
        return {"marked": marked}


@blp.route("/emails/<uuid:email_id>")
class EmailById(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.response(200, EmailDetailSchema)
    def get(self, email: EmailAccess) -> Email:
        """Get an email with its bodies, headers and attachments"""
        return email.email

    @require_email(EMAILS_VIEW)
    @blp.arguments(EmailUpdateSchema)
    @blp.response(200, EmailDetailSchema)
    def patch(self, body: dict[str, Any], email: EmailAccess) -> Email:
        """Mark an email read or unread"""
        updated = emails.set_read(db(), email.email, body["is_read"])
        return updated

    @require_email(EMAILS_MANAGE)
    @blp.response(200, MessageSchema)
    def delete(self, email: EmailAccess) -> dict[str, str]:
        """Delete an email and its attachments"""
        emails.delete_email(db(), email.email)
        return {"message": "Email deleted"}


@blp.route("/emails/<uuid:email_id>/attachments/<uuid:attachment_id>")
class EmailAttachment(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.response(200, description="the attachment's bytes, as a download",
                  content_type="application/octet-stream")
    @blp.alt_response(302, description="s3 backend: a redirect to a short-lived signed URL")
    def get(self, email: EmailAccess, attachment_id: uuid.UUID) -> Response:
        """Download an attachment"""
        attachment = emails.get_attachment(email.email, attachment_id)
        return download(attachment.storage_key, attachment.content_type, attachment.filename)


@blp.route("/inboxes/<uuid:inbox_id>/emails/<uuid:email_id>/raw")
class EmailRaw(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="message/rfc822",
                  description="the message exactly as received over SMTP, as a download named "
                  "`<email id>.eml`")
    @blp.alt_response(404, description="no such e-mail in this inbox, or none you may read")
    def get(self, email: EmailAccess, inbox_id: uuid.UUID) -> Response:
        """Download an email's raw source (a Burnbox extension)"""
        found = email.email
        # The e-mail is authorized through its own inbox; the inbox of the path must be that
        # one too, or any readable inbox id would open every e-mail id the caller can guess.
        if found.inbox_id != inbox_id:
            raise NotFound("email not found")
        # Always through the web process, even on s3: a redirect to the bucket would drop the
        # promised headers, and the UI's fetch may only reach its own origin (CSP connect-src).
        # Streamed in blocks (send_file wraps the stream): a 25 MiB message is never held whole.
        response = _safe_download(send_file(emails.open_object(runtime().storage, found.raw_key),
                                            mimetype="message/rfc822"))
        response.headers["Content-Disposition"] = attachment(f"{found.id}.eml")
        return response


def _safe_download(response: Response) -> Response:
    """`response` (stored mail bytes) made harmless in the API's origin: never sniffed, never
    framed, never scripted."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


def attachment(filename: str) -> str:
    """A `Content-Disposition` offering the body as a file named `filename` (RFC 6266): the
    name always quoted, every character but printable ASCII (and `"`, `\\` and `/`) as "_"
    there, plus `filename*` in UTF-8 when that changed the name."""
    plain = "".join(char if " " <= char <= "~" and char not in '"\\/' else "_"
                    for char in filename)
    value = f'attachment; filename="{plain}"'
    if plain != filename:
        value += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return value


def download(key: str, content_type: str, filename: str) -> Response:
    """The stored object `key` as a download: a redirect to a signed URL when the storage has
    them (s3), else the bytes with exactly `content_type`, `Content-Disposition` as
    `attachment` writes it, never sniffed, never framed or scripted."""
    storage = runtime().storage
    url = storage.signed_url(key, runtime().settings.storage.signed_url_ttl)
    if url is not None:
        return redirect(url, 302)
    response = _safe_download(send_file(emails.open_object(storage, key), mimetype=content_type))
    # Set here, not by send_file: it appends "; charset=utf-8" to every text/* type, even one
    # naming its charset (the audit export's file said it twice), and leaves a plain name
    # unquoted.
    response.headers["Content-Type"] = content_type
    response.headers["Content-Disposition"] = attachment(filename)
    return response


# --- Issue #40 (checks): HTML compatibility and link check ----------------------------------


class FamilyScoreSchema(Schema):
    family = fields.String(required=True, metadata={
        "description": "a caniemail.com client family: apple-mail, gmail, outlook, yahoo..."})
    score = fields.Float(required=True, metadata={
        "description": "0-100: the share of the features used that the family supports, "
                       "partial support counting half (100 when it has data on none)"})
    supported = fields.Integer(required=True)
    partial = fields.Integer(required=True)
    unsupported = fields.Integer(required=True)


class HtmlIssueSchema(Schema):
    slug = fields.String(required=True, metadata={"description": "the caniemail feature"})
    title = fields.String(required=True)
    category = fields.String(required=True, metadata={"enum": ["html", "css", "image",
                                                               "others"]})
    url = fields.String(required=True, metadata={"description": "its caniemail.com page"})
    unsupported = fields.List(fields.String(), required=True, metadata={
        "description": "families that do not support it"})
    partial = fields.List(fields.String(), required=True, metadata={
        "description": "families that support it partly or on some platforms only"})
    notes = fields.Dict(keys=fields.String(), values=fields.List(fields.String()),
                        required=True, metadata={"description": "caniemail's notes by family"})


class HtmlCheckSchema(Schema):
    html = fields.Boolean(required=True, metadata={
        "description": "false for an e-mail without an HTML body (nothing else is then given)"})
    features_used = fields.Integer(metadata={
        "description": "distinct caniemail features the HTML uses"})
    scores = fields.List(fields.Nested(FamilyScoreSchema))
    issues = fields.List(fields.Nested(HtmlIssueSchema), metadata={
        "description": "features used that some family does not fully support, the most "
                       "unsupported first"})


class LinkResultSchema(Schema):
    href = fields.String(required=True)
    ok = fields.Boolean(required=True, metadata={
        "description": "answered below 400 at the end of its redirects"})
    status = fields.Integer(required=True, allow_none=True, metadata={
        "description": "the first answer's status; null when there was none (see error)"})
    method = fields.String(required=True, allow_none=True, metadata={
        "description": "HEAD, or GET when the server refused HEAD (405, 501)"})
    redirect_to = fields.String(required=True, allow_none=True, metadata={
        "description": "the first answer's redirect target, absolute"})
    final_url = fields.String(required=True, metadata={
        "description": "the URL asked last, after following at most 5 redirects"})
    final_status = fields.Integer(required=True, allow_none=True)
    redirects = fields.Integer(required=True, metadata={"description": "redirects followed"})
    elapsed_ms = fields.Integer(required=True)
    error = fields.String(required=True, allow_none=True, metadata={
        "description": "why there was no answer: `address refused: ...` (the webhooks' SSRF "
                       "rules), `timeout`, a connection failure"})


class LinkCheckSchema(Schema):
    checked_at = fields.String(required=True, allow_none=True, metadata={
        "format": "date-time", "description": "when the last check ran; null when none did"})
    elapsed_ms = fields.Integer(required=True)
    skipped = fields.Integer(required=True, metadata={
        "description": "links beyond the first 50, not asked"})
    links = fields.List(fields.Nested(LinkResultSchema), required=True, metadata={
        "description": "one per link of the e-mail, in its order; empty when it has none"})


@blp.route("/emails/<uuid:email_id>/html-check")
class EmailHtmlCheck(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.response(200, HtmlCheckSchema)
    def get(self, email: EmailAccess) -> dict[str, Any]:
        """Check an email's HTML against caniemail.com's client support data (a Burnbox
        extension)

        The HTML as sent (style blocks included) is read from the raw message each time: the
        check is deterministic and takes milliseconds, so nothing is stored. An e-mail
        without HTML answers `{"html": false}`."""
        with emails.open_object(runtime().storage, email.email.raw_key) as raw:
            markup = original_html(raw.read())
        return check_html(markup)


@blp.route("/emails/<uuid:email_id>/link-check")
class EmailLinkCheck(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.response(200, LinkCheckSchema)
    def get(self, email: EmailAccess) -> dict[str, Any]:
        """Read the result of an email's last link check (a Burnbox extension)"""
        return last_link_check(db(), email.email)

    @require_email(EMAILS_VIEW)
    @blp.arguments(Schema, required=False)
    @blp.response(200, LinkCheckSchema)
    def post(self, _body: dict[str, Any], email: EmailAccess) -> dict[str, Any]:
        """Check every link of an email now and keep the result (a Burnbox extension)

        HEAD, then GET where HEAD is refused; redirects followed (at most 5); at most 4 links
        at once, 5 s per link and 10 s in all; the first 50 links. Targets follow the SSRF
        rules of webhooks (internal addresses refused unless
        `webhooks.allow_private_targets`). Counted as one request of the caller's rate
        limit."""
        return run_link_check(db(), email.email, Outbound.of(runtime().settings))
