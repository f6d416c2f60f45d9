"""Teams and team members: /api/v1/orgs/:id/teams/:tid...

A team's `settings` hold its level of the settings cascade (`inbox_default_ttl`,
`inbox_max_ttl`, `max_inboxes_per_domain`); PATCH merges them (`null` clears one). Archived teams
take no new members until restored. Transfer to another org is for system administrators.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import INCLUDE, Schema, fields, post_dump, validate

from models.lifecycle import memberships
from models.lifecycle import teams as team_lifecycle
from models.pagination import Page
from models.tenancy import teams
from models.tenancy.access import OrgAccess
from models.tenancy.roster import MAX_BULK_ITEMS, BulkResult, MemberView
from models.tenancy.teams import MAX_DESCRIPTION, MAX_NAME, Team, TeamAccess
from web.api import Blueprint, MessageSchema
from web.context import db, reads_only, runtime
from web.fields import Line, Text, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import require_org, require_team
from web.views.schemas import BulkResultSchema, MemberAddSchema, MemberSchema, RoleChangeSchema

blp = Blueprint("teams", __name__, url_prefix="/api/v1/orgs/<uuid:org_id>/teams",
                description="Teams of an org and their members")


class TeamSchema(Schema):
    """A team."""

    id = fields.UUID(required=True)
    org_id = fields.UUID(required=True)
    name = fields.String(required=True)
    slug = fields.String(required=True)
    description = fields.String(required=True)
    is_archived = fields.Boolean(required=True)
    archived_at = Timestamp(required=True, allow_none=True)
    settings = fields.Dict(required=True, metadata={
        "description": "the team's overrides of the settings cascade"})
    member_count = fields.Integer(required=True)
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class TeamCreateSchema(Schema):
    name = Line(required=True, validate=validate.Length(min=1, max=MAX_NAME))
    description = Text(load_default="", validate=validate.Length(max=MAX_DESCRIPTION))


class TeamUpdateSchema(Schema):
    name = Line(validate=validate.Length(min=1, max=MAX_NAME))
    description = Text(validate=validate.Length(max=MAX_DESCRIPTION))
    settings = fields.Dict(keys=Line(), metadata={
        "description": "inbox_default_ttl, inbox_max_ttl (Go durations), max_inboxes_per_domain "
                       "(0: no limit); merged into the stored ones, null clears one"})


class TeamImpactSchema(Schema):
    """What deleting the team would remove: one count per kind of thing the team owns
    (`members` always; `domain_assignments`, and later inboxes, webhooks and keys)."""

    class Meta:
        unknown = INCLUDE

    members = fields.Integer(required=True)

    @post_dump(pass_original=True)
    def every_count(self, data: dict[str, Any], original: dict[str, int],
                    **_kwargs: Any) -> dict[str, int]:
        """Keep the counts of every registered kind, not only the declared one."""
        return {**{name: int(count) for name, count in original.items()}, **data}


class TransferSchema(Schema):
    target_org_id = fields.UUID(required=True)


class BulkAddSchema(Schema):
    members = fields.List(fields.Nested(MemberAddSchema), required=True,
                          validate=validate.Length(min=1, max=MAX_BULK_ITEMS))


class BulkRemoveSchema(Schema):
    user_ids = fields.List(fields.UUID(), required=True,
                           validate=validate.Length(min=1, max=MAX_BULK_ITEMS))


@blp.route("")
class Teams(MethodView):
    @require_org("org.teams.create")
    @blp.arguments(TeamCreateSchema)
    @blp.response(201, TeamSchema)
    @blp.alt_response(409, description="the name is taken, or the org's max_teams is reached")
    def post(self, body: dict[str, Any], org: OrgAccess) -> Team:
        """Create a team; the caller becomes its lead"""
        team = teams.create_team(db(), runtime().settings, org, **body)
        return team

    @require_org("org.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(TeamSchema))
    def get(self, args: dict[str, Any], org: OrgAccess) -> Page[Team]:
        """List the org's teams (archived ones included)"""
        return teams.list_teams(db(), org.org.id, args["page"], args["per_page"])


@blp.route("/<uuid:team_id>")
class TeamById(MethodView):
    @reads_only
    @require_team("team.view")
    @blp.response(200, TeamSchema)
    def get(self, team: TeamAccess) -> Team:
        """Get a team"""
        return team.team

    @require_team("team.settings.manage")
    @blp.arguments(TeamUpdateSchema)
    @blp.response(200, TeamSchema)
    @blp.alt_response(409, description="the name is taken")
    def patch(self, body: dict[str, Any], team: TeamAccess) -> Team:
        """Rename a team, or change its description or settings"""
        updated = teams.update_team(db(), runtime().settings, team, name=body.get("name"),
                                    description=body.get("description"),
                                    overrides=body.get("settings"))
        return updated

    @require_team("org.teams.delete")
    @blp.response(200, MessageSchema)
    def delete(self, team: TeamAccess) -> dict[str, str]:
        """Delete a team and everything it owns"""
        team_lifecycle.delete_team(db(), team)
        return {"message": "Team deleted"}


@blp.route("/<uuid:team_id>/archive")
class TeamArchive(MethodView):
    @require_team("org.teams.manage")
    @blp.response(200, TeamSchema)
    def post(self, team: TeamAccess) -> Team:
        """Archive a team (it takes no new members, inboxes, webhooks or keys)"""
        archived = teams.set_archived(db(), team, True)
        return archived


@blp.route("/<uuid:team_id>/restore")
class TeamRestore(MethodView):
    @require_team("org.teams.manage")
    @blp.response(200, TeamSchema)
    def post(self, team: TeamAccess) -> Team:
        """Restore an archived team"""
        restored = teams.set_archived(db(), team, False)
        return restored


@blp.route("/<uuid:team_id>/impact")
class TeamImpact(MethodView):
    @require_team("team.view")
    @blp.response(200, TeamImpactSchema)
    def get(self, team: TeamAccess) -> dict[str, int]:
        """Count what deleting the team would remove"""
        return team_lifecycle.team_impact(db(), team.team)


@blp.route("/<uuid:team_id>/leave")
class TeamLeave(MethodView):
    @require_team("team.view")
    @blp.response(200, MessageSchema)
    @blp.alt_response(409, description="the last lead cannot leave")
    def post(self, team: TeamAccess) -> dict[str, str]:
        """Leave a team"""
        memberships.leave_team(db(), team)
        return {"message": "Left the team"}


@blp.route("/<uuid:team_id>/transfer")
class TeamTransfer(MethodView):
    @require_team(None, system_admin=True)
    @blp.arguments(TransferSchema)
    @blp.response(200, TeamSchema)
    @blp.alt_response(409, description="the target org has a team of that name")
    def post(self, body: dict[str, Any], team: TeamAccess) -> Team:
        """Move a team to another org (system administrators)"""
        moved = team_lifecycle.transfer_team(db(), team, body["target_org_id"])
        return moved


@blp.route("/<uuid:team_id>/members")
class TeamMembers(MethodView):
    @require_team("team.members.manage")
    @blp.arguments(MemberAddSchema)
    @blp.response(201, MemberSchema)
    @blp.alt_response(409, description="already a member, or the team is archived")
    def post(self, body: dict[str, Any], team: TeamAccess) -> MemberView:
        """Add an org member to the team with a team role"""
        view = teams.add_team_member(db(), team, **body)
        return view

    @require_team("team.members.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(MemberSchema))
    def get(self, args: dict[str, Any], team: TeamAccess) -> Page[MemberView]:
        """List the team's members"""
        return teams.list_team_members(db(), team.team.id, args["page"], args["per_page"])


@blp.route("/<uuid:team_id>/members/bulk-add")
class TeamBulkAdd(MethodView):
    @require_team("team.members.manage")
    @blp.arguments(BulkAddSchema)
    @blp.response(200, BulkResultSchema)
    def post(self, body: dict[str, Any], team: TeamAccess) -> BulkResult:
        """Add many org members (each added, skipped or failed)"""
        result = teams.bulk_add_team_members(db(), team, body["members"])
        return result


@blp.route("/<uuid:team_id>/members/bulk-remove")
class TeamBulkRemove(MethodView):
    @require_team("team.members.manage")
    @blp.arguments(BulkRemoveSchema)
    @blp.response(200, BulkResultSchema)
    def post(self, body: dict[str, Any], team: TeamAccess) -> BulkResult:
        """Remove many members (each removed, skipped or failed)"""
        result = memberships.bulk_remove_team_members(db(), team, body["user_ids"])
        return result


@blp.route("/<uuid:team_id>/members/<uuid:user_id>")
class TeamMember(MethodView):
    @require_team("team.members.role")
    @blp.arguments(RoleChangeSchema)
    @blp.response(200, MemberSchema)
    @blp.alt_response(409, description="the last lead cannot be demoted")
    def patch(self, body: dict[str, Any], team: TeamAccess, user_id: uuid.UUID) -> MemberView:
        """Change a member's team role (needs a higher rank than theirs)"""
        view = teams.change_team_member_role(db(), team, user_id, body["role"])
        return view

    @require_team("team.members.manage")
    @blp.response(200, MessageSchema)
    @blp.alt_response(409, description="the last lead cannot be removed")
    def delete(self, team: TeamAccess, user_id: uuid.UUID) -> dict[str, str]:
        """Remove a member from the team"""
        memberships.remove_team_member(db(), team, user_id)
        return {"message": "Member deleted"}
