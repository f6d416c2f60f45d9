"""Org invitations: /api/v1/orgs/:id/invites..., and the invitee's /api/v1/invites/:token/...

The token travels only in the invitation mail (sent after commit). Anyone holding it may preview
the invite; accepting needs a signed-in account with the invited address.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from models.identity.users import MAX_EMAIL_LENGTH
from models.pagination import Page
from models.tenancy import invites
from models.tenancy.access import OrgAccess
from models.tenancy.invites import ANY, AUTH_METHODS, Invite, InvitePreview
from models.tenancy.orgs import Org
from models.tenancy.roster import MAX_BULK_ITEMS, BulkResult
from tasks.mail import send_mails
from web.api import Blueprint, MessageSchema
from web.auth import current_principal, protected
from web.context import db, runtime
from web.fields import Line, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import caller, require_org
from web.views.schemas import ROLE, BulkResultSchema, InviteSchema, TeamAssignmentSchema
from web.views.setup import OrgSchema

blp = Blueprint("invites", __name__, url_prefix="/api/v1",
                description="Invitations to join an org (and some of its teams)")

class InviteTermsSchema(Schema):
    role = Line(required=True, validate=ROLE)
    team_assignments = fields.List(fields.Nested(TeamAssignmentSchema), load_default=list,
                                   validate=validate.Length(max=MAX_BULK_ITEMS))
    auth_method = Line(load_default=ANY, validate=validate.OneOf(AUTH_METHODS),
                                metadata={"description": "how the invitee must sign in"})


class InviteCreateSchema(InviteTermsSchema):
    email = Line(required=True, validate=validate.Length(min=1, max=MAX_EMAIL_LENGTH))


class BulkInviteSchema(InviteTermsSchema):
    emails = fields.List(Line(validate=validate.Length(min=1, max=MAX_EMAIL_LENGTH)),
                         required=True, validate=validate.Length(min=1, max=MAX_BULK_ITEMS))


class InviteTeamSchema(Schema):
    team_id = fields.UUID(required=True)
    name = fields.String(required=True)
    role = fields.String(required=True)


class InvitePreviewSchema(Schema):
    """What an invite offers, for the invitee."""

    org_id = fields.UUID(required=True)
    org_name = fields.String(required=True)
    email = fields.String(required=True)
    role = fields.String(required=True)
    teams = fields.List(fields.Nested(InviteTeamSchema), required=True)
    auth_method = fields.String(required=True)
    invited_by_name = fields.String(required=True, allow_none=True)
    expires_at = Timestamp(required=True)


@blp.route("/orgs/<uuid:org_id>/invites")
class OrgInvites(MethodView):
    @require_org("org.members.invite")
    @blp.arguments(InviteCreateSchema)
    @blp.response(201, InviteSchema)
    @blp.alt_response(409, description="already a member, or already invited")
    def post(self, body: dict[str, Any], org: OrgAccess) -> Invite:
        """Invite someone by e-mail to the org (and teams)"""
        invited = invites.create_invite(db(), runtime().settings, org, **body)
        send_mails(invited.mails)
        return invited.invite

    @require_org("org.members.invite")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(InviteSchema))
    def get(self, args: dict[str, Any], org: OrgAccess) -> Page[Invite]:
        """List the org's pending invites"""
        return invites.list_invites(db(), org.org.id, args["page"], args["per_page"])


@blp.route("/orgs/<uuid:org_id>/invites/bulk")
class BulkInvites(MethodView):
    @require_org("org.members.invite")
    @blp.arguments(BulkInviteSchema)
    @blp.response(200, BulkResultSchema)
    def post(self, body: dict[str, Any], org: OrgAccess) -> BulkResult:
        """Invite many addresses on the same terms (created, skipped or failed each)"""
        invited = invites.bulk_invite(db(), runtime().settings, org, **body)
        send_mails(invited.mails)
        return invited.result


@blp.route("/orgs/<uuid:org_id>/invites/<uuid:invite_id>")
class OrgInvite(MethodView):
    @require_org("org.members.invite")
    @blp.response(200, MessageSchema)
    def delete(self, org: OrgAccess, invite_id: uuid.UUID) -> dict[str, str]:
        """Revoke an invite"""
        invites.revoke_invite(db(), org, invite_id)
        return {"message": "Invite deleted"}


@blp.route("/invites/<string:token>/preview")
class InvitePreviewView(MethodView):
    @blp.response(200, InvitePreviewSchema)
    @blp.alt_response(404, description="unknown, used, revoked or expired invite")
    def get(self, token: str) -> InvitePreview:
        """Preview an invite by its token (no sign-in needed)"""
        return invites.preview_invite(db(), token)


@blp.route("/invites/<string:token>/accept")
class InviteAccept(MethodView):
    @protected(blp)
    @blp.response(200, OrgSchema)
    @blp.alt_response(403, description="the invite is for another address or sign-in method")
    @blp.alt_response(404, description="unknown, used, revoked or expired invite")
    def post(self, token: str) -> Org:
        """Accept an invite as the signed-in user; joins the org and its teams"""
        org = invites.accept_invite(db(), caller(), current_principal().user, token)
        return org
