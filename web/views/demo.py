"""The public try-it mode: /api/v1/try/... No account needed; rate limited per client IP (the
`demo` bucket). `GET /try/status` always answers 200 (`{"enabled": false}` while the mode is
off); with `demo.enabled` false the inbox routes answer 404 `not_found`.

`POST /try/inbox` returns the inbox and its `read_token` (shown once); `GET
/try/inbox/:inboxId/emails` lists its mail, and `GET /try/inbox/:inboxId/emails/:emailId` gives
one e-mail in full, for a request carrying the token in `X-Read-Token`. How the token is made and
kept, and what it reads: `models.mail.demo`.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import request
from flask.views import MethodView
from marshmallow import Schema, fields, post_dump, pre_dump

from burnbox.durations import format_duration
from models.mail import demo, emails
from models.mail.demo import DemoInbox
from models.mail.entities import Email
from models.pagination import Page
from web.api import Blueprint
from web.context import db, runtime
from web.pagination import PageArgsSchema, page_schema
from web.ratelimit import rate_limited
from web.views.emails import EmailDetailSchema, EmailSummarySchema
from web.views.inboxes import InboxSchema

blp = Blueprint("demo", __name__, url_prefix="/api/v1/try",
                description="The public try-it mode (no account needed)")

READ_TOKEN_HEADER = "X-Read-Token"  # noqa: S105 (a header name)


class DemoStatusSchema(Schema):
    enabled = fields.Boolean(required=True)
    domain = fields.String(metadata={"description": "where demo inboxes live (only when enabled)"})
    ttl = fields.Method("duration", metadata={
        "type": "string",
        "description": "lifetime of a demo inbox (Go duration; only when enabled)"})

    def duration(self, status: demo.DemoStatus) -> str | None:
        """The lifetime as a Go duration string (None while the mode is off)."""
        return None if status.ttl is None else format_duration(status.ttl)

    @post_dump
    def only_enabled_details(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        """Leave the domain and lifetime out while the mode is off: `{"enabled": false}`."""
        return {name: value for name, value in data.items() if value is not None}


class DemoInboxSchema(InboxSchema):
    """A new demo inbox with the token that reads its mail (returned only here, once)."""

    read_token = fields.String(required=True, metadata={
        "description": f"send it as the {READ_TOKEN_HEADER} header to read the inbox's mail"})

    @pre_dump
    def flatten(self, created: DemoInbox, **_kwargs: Any) -> dict[str, Any]:
        """The inbox's fields and the token side by side (no wrapping key)."""
        return {**{name: getattr(created.inbox, name) for name in self.fields
                   if name != "read_token"}, "read_token": created.read_token}


@blp.route("/status")
class DemoStatus(MethodView):
    @rate_limited("demo")
    @blp.response(200, DemoStatusSchema)
    def get(self) -> demo.DemoStatus:
        """Whether the demo mode is on, its domain and inbox lifetime (200 even when off)"""
        return demo.demo_status(db(), runtime().settings)


@blp.route("/inbox")
class DemoInboxes(MethodView):
    @rate_limited("demo")
    @blp.response(201, DemoInboxSchema)
    @blp.alt_response(404, description="the demo mode is off")
    @blp.alt_response(409, description="the demo domain is not verified, or is full")
    def post(self) -> DemoInbox:
        """Create a demo inbox (no account needed)"""
        created = demo.create_demo_inbox(db(), runtime().settings)
        return created


READ_TOKEN_PARAMETER = {"in": "header", "name": READ_TOKEN_HEADER, "required": True,
                        "schema": {"type": "string"},
                        "description": "the read_token from POST /try/inbox"}


@blp.route("/inbox/<uuid:inbox_id>/emails")
class DemoInboxEmails(MethodView):
    @rate_limited("demo")
    @blp.doc(parameters=[READ_TOKEN_PARAMETER])
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(EmailSummarySchema))
    @blp.alt_response(404, description="demo mode off, no such demo inbox, or a wrong token")
    def get(self, args: dict[str, Any], inbox_id: uuid.UUID) -> Page[dict[str, Any]]:
        """List a demo inbox's emails, newest first"""
        inbox = demo.demo_inbox(db(), runtime().settings, inbox_id,
                                request.headers.get(READ_TOKEN_HEADER))
        return emails.list_emails(db(), inbox.id, page=args["page"], per_page=args["per_page"])


@blp.route("/inbox/<uuid:inbox_id>/emails/<uuid:email_id>")
class DemoInboxEmail(MethodView):
    @rate_limited("demo")
    @blp.doc(parameters=[READ_TOKEN_PARAMETER])
    @blp.response(200, EmailDetailSchema)
    @blp.alt_response(404, description="demo mode off, no such demo inbox or e-mail in it, or a "
                                       "wrong token")
    def get(self, inbox_id: uuid.UUID, email_id: uuid.UUID) -> Email:
        """Get one e-mail of a demo inbox in full (bodies, links, headers)"""
        return demo.demo_email(db(), runtime().settings, inbox_id, email_id,
                               request.headers.get(READ_TOKEN_HEADER))
