"""Custom roles for system administrators: /api/v1/admin/roles. The built-in roles are listed by
GET /api/v1/roles with the custom ones; only custom roles can be changed or deleted."""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, pre_load, validate

from models.tenancy import roles
from web.api import Blueprint, MessageSchema
from web.auth import current_user, origin, protected
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Text, merge_aliases
from web.views.orgs import RoleSchema

blp = Blueprint("admin-roles", __name__, url_prefix="/api/v1/admin/roles",
                description="Custom org and team roles (system administrators)")


class RoleEditSchema(Schema):
    """The changeable fields of a role (all optional)."""

    label = Line(validate=validate.Length(max=64), metadata={"description": "name for people"})
    description = Text(validate=validate.Length(max=200))
    rank = fields.Integer(strict=True, metadata={
        "description": f"1-{roles.MAX_RANK}; changing someone's role needs a strictly higher "
                       "rank than theirs and than the role given"})
    permissions = fields.List(Line(validate=validate.Length(max=64)),
                              validate=validate.Length(max=200), metadata={
                                  "description": "permission keys of the role's scope (GET "
                                                 "/roles lists them); replaces the whole set"})
    grants_all_teams = JsonBoolean(metadata={
        "description": "org roles: act with every team permission in every team of the org"})


class RoleCreateSchema(RoleEditSchema):
    """A new custom role (`value` is accepted as another name for `name`)."""

    scope = Line(required=True, validate=validate.OneOf(roles.SCOPES))
    name = Line(required=True, validate=validate.Length(max=32), metadata={
        "description": "a-z, 0-9 and _, 2-32 characters, starting with a letter"})

    @pre_load
    def _aliases(self, data: Any, **kwargs: Any) -> Any:
        return merge_aliases(dict(data), {"value": "name"}) if isinstance(data, dict) else data


def _draft(args: dict[str, Any]) -> roles.RoleDraft:
    return roles.RoleDraft(label=args.get("label"), description=args.get("description"),
                           rank=args.get("rank"), permissions=args.get("permissions"),
                           grants_all_teams=args.get("grants_all_teams"))


@blp.route("")
class AdminRoles(MethodView):
    @protected(blp, system_admin=True)
    @blp.arguments(RoleCreateSchema)
    @blp.response(201, RoleSchema)
    @blp.alt_response(400, description="unknown scope, bad name or rank, unknown permission")
    @blp.alt_response(409, description="the scope has a role of that name")
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Create a custom role"""
        role = roles.create_role(db(), scope=args["scope"], name=args["name"],
                                 draft=_draft(args), actor_id=current_user().id,
                                 origin=origin(), store=runtime().store)
        snapshot = roles.role_snapshot(db(), role)
        return snapshot


@blp.route("/<uuid:role_id>")
class AdminRoleById(MethodView):
    @protected(blp, system_admin=True)
    @blp.arguments(RoleEditSchema)
    @blp.response(200, RoleSchema)
    @blp.alt_response(404, description="no such role")
    @blp.alt_response(409, description="a built-in role")
    def patch(self, args: dict[str, Any], role_id: uuid.UUID) -> dict[str, Any]:
        """Change a custom role; `permissions` replaces its permission set"""
        role = roles.update_role(db(), role_id, _draft(args), actor_id=current_user().id,
                                 origin=origin(), store=runtime().store)
        snapshot = roles.role_snapshot(db(), role)
        return snapshot

    @protected(blp, system_admin=True)
    @blp.response(200, MessageSchema)
    @blp.alt_response(404, description="no such role")
    @blp.alt_response(409, description="a built-in role, or members or invitations hold it")
    def delete(self, role_id: uuid.UUID) -> dict[str, str]:
        """Delete a custom role no member or invitation holds"""
        roles.delete_role(db(), role_id, actor_id=current_user().id, origin=origin(),
                          store=runtime().store)
        return {"message": "role deleted"}
