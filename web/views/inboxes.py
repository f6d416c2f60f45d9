"""Inboxes: /api/v1/inboxes... and a team's inboxes at /api/v1/orgs/:id/teams/:tid/inboxes.

An inbox is reached by its creator, or by a member holding the team permission in the inbox's
team (`team.inboxes.view`, `.create`, `.manage`); an API key only within its own team. Unknown
ids and inboxes of other orgs are 404. The rules (TTLs, quota, aliases, access levels) live in
`models.mail.inboxes`.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from models.errors import NotFound
from models.mail import inboxes
from models.mail.inboxes import STATUSES, Inbox, InboxAccess
from models.pagination import Page
from models.tenancy.teams import TeamAccess
from web.api import Blueprint, MessageSchema
from web.auth import current_principal
from web.context import db, reads_only, runtime
from web.fields import Duration, Line, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import (
    authorize_team,
    authorize_team_access,
    caller,
    declares,
    grants,
    require_inbox,
    require_team,
)

blp = Blueprint("inboxes", __name__, url_prefix="/api/v1", description="Disposable inboxes")

class InboxSchema(Schema):
    """An inbox. `address` is the local part; `full_address` is what mail is sent to."""

    id = fields.UUID(required=True)
    address = fields.String(required=True, metadata={"example": "signup-test"})
    full_address = fields.String(required=True,
                                 metadata={"example": "signup-test@mail.example.com"})
    domain_id = fields.UUID(required=True)
    domain_assignment_id = fields.UUID(required=True, allow_none=True, metadata={
        "description": "null once the assignment it was created through is removed"})
    team_id = fields.UUID(required=True)
    org_id = fields.UUID(required=True)
    created_by = fields.UUID(required=True, allow_none=True, metadata={
        "description": "null for demo inboxes"})
    is_active = fields.Boolean(required=True, metadata={
        "description": "false once expires_at has passed: the inbox refuses mail"})
    expires_at = Timestamp(required=True)
    created_at = Timestamp(required=True)
    email_count = fields.Integer(required=True)
    unread_count = fields.Integer(required=True)


class InboxCreateSchema(Schema):
    domain_assignment_id = fields.UUID(metadata={
        "description": "the domain assignment to create the inbox through; or give domain"})
    domain = Line(validate=validate.Length(min=1, max=253), metadata={
        "description": "a domain name assigned to exactly one of your teams"})
    alias = Line(validate=validate.Length(min=1, max=64), metadata={
        "description": "the local part: 2-64 of a-z 0-9 . _ -, alphanumeric at both ends; "
                       "random (10 characters) when absent"})
    ttl = Duration(purpose="the lifetime; the default ttl of the settings cascade when absent, "
                           "never above its max ttl")

    @validates_schema
    def target_named(self, data: dict[str, Any], **_kwargs: Any) -> None:
        """Exactly one of domain_assignment_id and domain names where the inbox goes."""
        if ("domain_assignment_id" in data) == ("domain" in data):
            raise ValidationError("give exactly one of domain_assignment_id and domain",
                                  "domain_assignment_id")


class InboxListArgsSchema(PageArgsSchema):
    status = Line(load_default="active", validate=validate.OneOf(STATUSES), metadata={
        "description": "active (default), expired (lapsed, not removed yet) or all"})
    q = Line(validate=validate.Length(max=320),
                      metadata={"description": "part of the address"})
    address = Line(validate=validate.Length(max=320), metadata={
        "description": "exactly this address (any case): the one inbox that has it, or none "
                       "(a client's way to name an inbox by its address)",
        "example": "signup@burnbox.test"})


class ExtendSchema(Schema):
    duration = Duration(purpose="how much longer; the default ttl when absent. The expiry "
                                "never goes past created_at + the max ttl")


def _page_args(args: dict[str, Any]) -> dict[str, Any]:
    return {"status": args["status"], "q": args.get("q"), "address": args.get("address"),
            "page": args["page"], "per_page": args["per_page"]}


@blp.route("/inboxes")
class Inboxes(MethodView):
    @declares(inboxes.CREATE)
    @blp.arguments(InboxCreateSchema)
    @blp.response(201, InboxSchema)
    @blp.alt_response(404, description="no such domain assignment, or none usable for domain")
    @blp.alt_response(409, description="address in use, domain not verified, team archived, "
                                       "or max_inboxes_per_domain reached (with limit)")
    def post(self, body: dict[str, Any]) -> Inbox:
        """Create an inbox"""
        key = current_principal().api_key
        target = inboxes.resolve_create_target(
            db(), grants(), caller(), assignment_id=body.get("domain_assignment_id"),
            domain=body.get("domain"), only_team=key.team_id if key else None)
        access = authorize_team_access(target.team, inboxes.CREATE)
        return inboxes.create_inbox(db(), runtime().settings, target.assignment,
                                    org=access.org.org, created_by=caller().user_id,
                                    alias=body.get("alias"), ttl=body.get("ttl"))

    @reads_only
    @declares(inboxes.VIEW)
    @blp.arguments(InboxListArgsSchema, location="query")
    @blp.response(200, page_schema(InboxSchema))
    def get(self, args: dict[str, Any]) -> Page[Inbox]:
        """List the inboxes you created or may view in your teams, newest first"""
        key = current_principal().api_key
        if key is not None:  # a key reaches its own team only
            access = authorize_team(key.org_id, key.team_id, inboxes.VIEW)
            return inboxes.list_team_inboxes(db(), access.team.id, **_page_args(args))
        return inboxes.list_inboxes(db(), grants(), caller(), **_page_args(args))


@blp.route("/inboxes/<uuid:inbox_id>")
class InboxById(MethodView):
    @reads_only
    @require_inbox(inboxes.VIEW)
    @blp.response(200, InboxSchema)
    def get(self, inbox: InboxAccess) -> Inbox:
        """Get an inbox"""
        return inbox.inbox

    @require_inbox(inboxes.MANAGE)
    @blp.response(200, MessageSchema)
    def delete(self, inbox: InboxAccess) -> dict[str, str]:
        """Delete an inbox with its emails and attachments"""
        inboxes.delete_inbox(db(), inbox)
        return {"message": "Inbox deleted"}


@blp.route("/inboxes/by-address/<string:address>")
class InboxByAddress(MethodView):
    @reads_only
    @declares(inboxes.VIEW)
    @blp.response(200, InboxSchema)
    @blp.alt_response(404, description="no inbox you may view has the address")
    def get(self, address: str) -> Inbox:
        """Get an inbox by its address (any case), live or lapsed (a Burnbox extension)"""
        args = {"status": "all", "q": None, "address": address, "page": 1, "per_page": 1}
        key = current_principal().api_key
        if key is not None:
            access = authorize_team(key.org_id, key.team_id, inboxes.VIEW)
            found = inboxes.list_team_inboxes(db(), access.team.id, **args)
        else:
            found = inboxes.list_inboxes(db(), grants(), caller(), **args)
        if not found.data:
            raise NotFound("inbox not found")
        return found.data[0]


@blp.route("/inboxes/<uuid:inbox_id>/extend")
class InboxExtend(MethodView):
    @require_inbox(inboxes.MANAGE)
    @blp.arguments(ExtendSchema, required=False)
    @blp.response(200, InboxSchema)
    @blp.alt_response(409, description="the inbox has expired, or lives as long as allowed")
    def post(self, body: dict[str, Any], inbox: InboxAccess) -> Inbox:
        """Extend an inbox's lifetime"""
        extended = inboxes.extend_inbox(db(), runtime().settings, inbox, body.get("duration"))
        return extended


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/inboxes")
class TeamInboxes(MethodView):
    @require_team(inboxes.VIEW)
    @blp.arguments(InboxListArgsSchema, location="query")
    @blp.response(200, page_schema(InboxSchema))
    def get(self, args: dict[str, Any], team: TeamAccess) -> Page[Inbox]:
        """List a team's inboxes, newest first"""
        return inboxes.list_team_inboxes(db(), team.team.id, **_page_args(args))
