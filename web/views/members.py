"""Org members: /api/v1/orgs/:id/members...

`POST /members` adds an existing account by `email` (an address with no account is a 404), or
by `user_id` a user with a pending invite to the org (any other id is the same 404, whether an
account has it or not, so an id discloses no one's address). `POST /members/add` is the
forgiving form for people who type an address: it adds the account when one exists (201, the
member) and otherwise invites the address on the same role (202, the invite; this also needs
`org.members.invite`). Deactivating a member removes them from the org and from all of its
teams.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from flask import Response, jsonify
from flask.views import MethodView
from marshmallow import fields, validate

from models.lifecycle import memberships
from models.pagination import Page
from models.tenancy import invites, members
from models.tenancy.access import OrgAccess
from models.tenancy.invites import Invited
from models.tenancy.roster import MemberView, member_view
from tasks.mail import send_mails
from web.api import Blueprint, MessageSchema
from web.context import db, runtime
from web.fields import Line
from web.pagination import PageArgsSchema, page_schema
from web.permissions import require_org
from web.views.schemas import InviteSchema, MemberAddSchema, MemberSchema, RoleChangeSchema

blp = Blueprint("members", __name__, url_prefix="/api/v1/orgs/<uuid:org_id>/members",
                description="Members of an org and their org roles")


class MyMembershipSchema(MemberSchema):
    """The caller's own membership, with the org permissions it grants."""

    permissions = fields.List(fields.String(), required=True)


class SearchArgsSchema(PageArgsSchema):
    q = Line(required=True, validate=validate.Length(min=1, max=members.MAX_QUERY),
                      metadata={"description": "part of an e-mail address or display name"})


@blp.route("")
class Members(MethodView):
    @require_org("org.members.add")
    @blp.arguments(MemberAddSchema)
    @blp.response(201, MemberSchema)
    @blp.alt_response(404, description="no account has the address, or the user_id names no "
                                       "user with a pending invite to the org")
    @blp.alt_response(409, description="already a member")
    def post(self, body: dict[str, Any], org: OrgAccess) -> MemberView:
        """Add an existing user to the org with an org role (by user_id: an invited user)"""
        view = invites.add_existing_member(db(), org, **body)
        return view

    @require_org("org.members.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(MemberSchema))
    def get(self, args: dict[str, Any], org: OrgAccess) -> Page[MemberView]:
        """List the org's members"""
        return members.list_members(db(), org.org.id, args["page"], args["per_page"])


@blp.route("/add")
class AddOrInvite(MethodView):
    @require_org("org.members.add")
    @blp.arguments(MemberAddSchema)
    @blp.response(201, MemberSchema)
    @blp.alt_response(202, schema=InviteSchema, success=True,
                      description="no account has the address: it was invited instead")
    @blp.alt_response(409, description="already a member, or already invited")
    def post(self, body: dict[str, Any], org: OrgAccess) -> MemberView | Response:
        """Add a user by e-mail, inviting the address when it has no account yet"""
        outcome = invites.add_or_invite(db(), runtime().settings, org, **body)
        if not isinstance(outcome, Invited):
            return outcome
        send_mails(outcome.mails)
        response = jsonify(InviteSchema().dump(outcome.invite))
        response.status_code = 202
        return response


@blp.route("/me")
class MyMembership(MethodView):
    @require_org("org.view")
    @blp.response(200, MyMembershipSchema)
    def get(self, org: OrgAccess) -> dict[str, Any]:
        """The caller's membership of the org and the permissions it grants"""
        mine = member_view(db(), members.get_member(db(), org.org.id, org.caller.user_id))
        return {**dataclasses.asdict(mine), "permissions": sorted(org.permissions)}


@blp.route("/search")
class MemberSearch(MethodView):
    @require_org("org.members.view")
    @blp.arguments(SearchArgsSchema, location="query")
    @blp.response(200, page_schema(MemberSchema))
    def get(self, args: dict[str, Any], org: OrgAccess) -> Page[MemberView]:
        """Find the org's members by e-mail or display name"""
        return members.search_members(db(), org.org.id, args["q"], args["page"],
                                      args["per_page"])


@blp.route("/<uuid:user_id>")
class Member(MethodView):
    @require_org("org.members.role")
    @blp.arguments(RoleChangeSchema)
    @blp.response(200, MemberSchema)
    @blp.alt_response(409, description="the last owner cannot be demoted")
    def patch(self, body: dict[str, Any], org: OrgAccess, user_id: uuid.UUID) -> MemberView:
        """Change a member's org role (needs a higher rank than theirs)"""
        view = members.change_member_role(db(), org, user_id, body["role"])
        return view


@blp.route("/<uuid:user_id>/deactivate")
class MemberDeactivation(MethodView):
    @require_org("org.members.remove")
    @blp.response(200, MessageSchema)
    @blp.alt_response(409, description="the last owner cannot leave")
    def post(self, org: OrgAccess, user_id: uuid.UUID) -> dict[str, str]:
        """Remove a member from the org and all its teams"""
        memberships.deactivate_member(db(), org, user_id)
        return {"message": "Member deactivated"}
