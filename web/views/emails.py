"""E-mails: /api/v1/inboxes/:id/emails..., /api/v1/emails/:id... Access follows the e-mail's
inbox (its creator, or `team.emails.view` / `team.emails.manage` in its team). Marking e-mails
read or unread is part of reading them (`team.emails.view`, one of the API-key scopes of
docs/api-keys.md); deleting one, or every e-mail of an inbox (`DELETE /inboxes/:id/emails`, a
Burnbox extension), needs `team.emails.manage`.

The e-mail's schemas live here (the list item and the detail, which the waits, the demo, the
inbox overview and the CLI answer with too); waiting for e-mails is `web.views.email_waits`,
downloading attachments and raw messages `web.views.email_downloads`, the checks of a message
and its authentication results `web.views.email_checks`.
"""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.views import MethodView
from marshmallow import Schema, fields, pre_dump, validate

from models.mail import emails
from models.mail.checks.spam import spam_reasons
from models.mail.emails import EmailAccess, email_summary
from models.mail.entities import Email
from models.mail.inboxes import EMAILS_MANAGE, EMAILS_VIEW, InboxAccess
from web.api import Blueprint, MessageSchema
from web.context import db, inbox_caches, reads_only
from web.fields import JsonBoolean, Line, Timestamp
from web.pagination import PageArgsSchema, page_response, page_schema
from web.permissions import require_email, require_inbox
from web.views.check_schemas import ChecksumsField, ListUnsubscribeField, SpamEngineField
from web.views.email_checks import AuthResultsField, AuthResultsSchema

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
    tags = fields.List(fields.String(), required=True, metadata={
        "description": "its tags' names, in alphabetical order (docs/mail.md \"Tags\")"})


class ListThumbnailSchema(Schema):
    """The image a list item shows: its first attachment with a thumbnail."""

    attachment_id = fields.UUID(required=True, metadata={
        "description": "its thumbnail is `GET /emails/:id/attachments/:attachment_id/thumbnail`"})
    filename = fields.String(required=True)


class EmailSummarySchema(EmailFieldsSchema):
    """An e-mail in a list."""

    thumbnail = fields.Nested(ListThumbnailSchema, required=True, allow_none=True, metadata={
        "description": "its first image attachment that has a thumbnail; null when none has "
                       "one (yet: the worker makes them after the e-mail is stored)"})

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
    checksums = ChecksumsField()
    created_at = Timestamp(required=True)
    has_thumbnail = fields.Function(lambda part: part.thumbnail_key is not None, required=True,
                                    metadata={"type": "boolean", "description": (
        "an image whose thumbnail is made: GET .../attachments/:id/thumbnail (made by the "
        "worker within moments of arrival)")})


class LinkSchema(Schema):
    """A link found in an e-mail's bodies."""

    href = fields.String(required=True)
    text = fields.String(required=True, metadata={
        "description": "the link's text in the HTML body; empty for a URL of the text body"})


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
    spam_engine = SpamEngineField()
    list_unsubscribe = ListUnsubscribeField()
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
                       "subject, sender and text body; from:, to:, cc:, subject:, addressed: "
                       "(substrings), message-id:<id>, has:attachment, has:inline, is:read, "
                       "is:unread, is:tagged, larger:/smaller:<size such as 20k or 1M>, "
                       "before:/after:YYYY-MM-DD, code:<code>, "
                       "spf:/dkim:/dmarc:<result or pending>, tag:<tag>; -term "
                       "negates. "
                       "A malformed query is a 400 validation_error naming the offset of the "
                       "fault"})


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
