"""Domain assignments: /api/v1/orgs/:id/teams/:tid/domains... and /api/v1/my/domains.

In `.../teams/:tid/domains/:did`, `:did` is the id of the *domain*, not of the assignment: a team
has at most one assignment per domain, so team and domain name it, and clients already hold the
domain id. `/my/domains` lists every assignment the caller can use across their orgs and teams;
with an API key, those of the key's team its creator can use, whatever the key's scopes (so any
key finds the `domain_assignment_id` to create inboxes through, as with the reference system).
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from models.domains import assignments
from models.domains.assignments import ACCESS_LEVELS, DomainAssignment
from models.pagination import Page
from models.tenancy.teams import TeamAccess
from web.api import Blueprint, MessageSchema
from web.auth import current_principal, current_user
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import declares, grants, require_team
from web.views.domains import SETTINGS_HELP

blp = Blueprint("domain-assignments", __name__, url_prefix="/api/v1",
                description="Domains assigned to teams, and the caller's usable domains")

ACCESS_HELP = ("full: create and manage inboxes; create_inbox: create inboxes; read_only: read "
               "existing inboxes")
CATCH_ALL_HELP = ("mail to any valid address of the domain creates its inbox in this team on the "
                  "first message (at most one catch-all assignment per domain; not read_only)")


class AssignmentSchema(Schema):
    """A domain assigned to a team."""

    id = fields.UUID(required=True)
    domain_id = fields.UUID(required=True)
    domain_name = fields.String(required=True)
    team_id = fields.UUID(required=True)
    access_level = fields.String(required=True, metadata={"enum": list(ACCESS_LEVELS),
                                                          "description": ACCESS_HELP})
    settings = fields.Dict(required=True, metadata={
        "description": "the assignment's overrides of the settings cascade"})
    catch_all = fields.Boolean(required=True, metadata={"description": CATCH_ALL_HELP})
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class MyAssignmentSchema(AssignmentSchema):
    """An assignment the caller can use, with its team's name and org."""

    team_name = fields.String(required=True, attribute="team.name")
    org_id = fields.UUID(required=True, attribute="team.org_id")


class AssignmentCreateSchema(Schema):
    domain_id = fields.UUID(required=True)
    access_level = Line(required=True, validate=validate.OneOf(ACCESS_LEVELS),
                                 metadata={"description": ACCESS_HELP})
    settings = fields.Dict(keys=Line(), load_default=dict,
                           metadata={"description": SETTINGS_HELP})
    catch_all = JsonBoolean(load_default=False, metadata={"description": CATCH_ALL_HELP})


class AssignmentUpdateSchema(Schema):
    access_level = Line(validate=validate.OneOf(ACCESS_LEVELS),
                                 metadata={"description": ACCESS_HELP})
    settings = fields.Dict(keys=Line(), metadata={"description": SETTINGS_HELP})
    catch_all = JsonBoolean(metadata={"description": CATCH_ALL_HELP})


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/domains")
class TeamDomains(MethodView):
    @require_team("team.domains.manage")
    @blp.arguments(AssignmentCreateSchema)
    @blp.response(201, AssignmentSchema)
    @blp.alt_response(409, description="the team already has the domain, or is archived, or "
                      "another team's assignment of the domain is catch-all")
    def post(self, body: dict[str, Any], team: TeamAccess) -> DomainAssignment:
        """Assign one of the org's domains to the team"""
        assignment = assignments.assign_domain(db(), runtime().settings, team.org.caller,
                                               team.team, body["domain_id"],
                                               body["access_level"], body["settings"],
                                               catch_all=body["catch_all"])
        return assignment

    @require_team("team.domains.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(AssignmentSchema))
    def get(self, args: dict[str, Any], team: TeamAccess) -> Page[DomainAssignment]:
        """List the team's domain assignments"""
        return assignments.list_assignments(db(), team.team, args["page"], args["per_page"])


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/domains/<uuid:domain_id>")
class TeamDomain(MethodView):
    @require_team("team.domains.manage")
    @blp.arguments(AssignmentUpdateSchema)
    @blp.response(200, AssignmentSchema)
    def patch(self, body: dict[str, Any], team: TeamAccess, domain_id: uuid.UUID
              ) -> DomainAssignment:
        """Change the access level, settings or catch-all of the team's assignment of a domain"""
        assignment = assignments.update_assignment(
            db(), runtime().settings, team.org.caller,
            assignments.get_assignment(db(), team.team, domain_id),
            access_level=body.get("access_level"), assignment_settings=body.get("settings"),
            catch_all=body.get("catch_all"))
        return assignment

    @require_team("team.domains.manage")
    @blp.response(200, MessageSchema)
    def delete(self, team: TeamAccess, domain_id: uuid.UUID) -> dict[str, str]:
        """Remove a domain from the team (the domain stays the org's)"""
        assignments.unassign_domain(db(), team.org.caller,
                                    assignments.get_assignment(db(), team.team, domain_id))
        return {"message": "Domain assignment deleted"}


@blp.route("/my/domains")
class MyDomains(MethodView):
    @declares(assignments.VIEW_ASSIGNMENTS, key_scope=False)
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(MyAssignmentSchema))
    def get(self, args: dict[str, Any]) -> Page[DomainAssignment]:
        """List every domain assignment the caller can use, across their orgs and teams

        The assignments of every active team in which the caller holds team.domains.view; for
        an API key, of the key's team only, where its creator holds it, whatever the key's
        scopes.
        """
        key = current_principal().api_key
        return assignments.usable_assignments(db(), grants(), current_user().id, args["page"],
                                              args["per_page"],
                                              only_team=key.team_id if key else None)
