"""Orgs, their settings, and the role catalogue: /api/v1/orgs..., /api/v1/roles.

Any signed-in user may create an org (they become its owner) and lists only the orgs they belong
to. Org settings hold the org level of the settings cascade
(`models.tenancy.settings_cascade`): PATCH merges (`null` clears a key), PUT replaces the whole
set; GET shows the org's own values (`null`: inherited) and the values in force under
`effective`. The reference system's names of the keys it names differently (`SETTING_ALIASES`)
work too: PATCH and PUT take either name, and answers carry both, at each level, since its
clients read them. The role catalogue is public.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, post_load, validate

from models.lifecycle import orgs as org_lifecycle
from models.pagination import Page
from models.tenancy import org_actions
from models.tenancy.access import OrgAccess
from models.tenancy.orgs import MAX_NAME, Org
from models.tenancy.rbac import Catalogue, role_catalogue
from web.api import Blueprint, MessageSchema
from web.auth import current_principal, protected
from web.context import db, runtime
from web.fields import Duration, JsonBoolean, Line, merge_aliases
from web.pagination import PageArgsSchema, page_schema
from web.permissions import caller, require_org
from web.views.setup import OrgSchema

blp = Blueprint("orgs", __name__, url_prefix="/api/v1",
                description="Organizations, their settings, and the roles members can hold")

LIMIT_HELP = "0 means no limit; null: inherit"
# The reference system's names of the org settings it names differently: alias -> ours.
SETTING_ALIASES = {"default_inbox_ttl": "inbox_default_ttl", "max_inbox_ttl": "inbox_max_ttl"}
REFERENCE_NAME_HELP = "the same as {} (the reference system's name)"


class OrgCreateSchema(Schema):
    name = Line(required=True, validate=validate.Length(min=1, max=MAX_NAME))


class OrgUpdateSchema(Schema):
    name = Line(validate=validate.Length(min=1, max=MAX_NAME))


class OrgDeleteSchema(Schema):
    password = Line(validate=validate.Length(max=4096), metadata={
        "description": "the caller's password; accounts without one (SSO) confirm by session"})


class SettingsValuesSchema(Schema):
    """The org level of the settings cascade."""

    inbox_default_ttl = Duration(allow_none=True, purpose="null: inherit")
    inbox_max_ttl = Duration(allow_none=True, purpose="null: inherit")
    max_domains = fields.Integer(allow_none=True, strict=True,
                                 metadata={"description": LIMIT_HELP})
    max_teams = fields.Integer(allow_none=True, strict=True, metadata={"description": LIMIT_HELP})
    max_inboxes_per_domain = fields.Integer(allow_none=True, strict=True,
                                            metadata={"description": LIMIT_HELP})
    enforce_sso = JsonBoolean(allow_none=True, metadata={
        "description": "refuse password sign-in to users of the e-mail domains SSO-mapped into "
                       "this org; null: inherit (the platform's enforce_sso)"})
    timezone = Line(allow_none=True, validate=validate.Length(max=64), metadata={
        "description": "IANA time zone name ('Europe/Paris') of the org's analytics days when "
                       "a request gives no tz; null: UTC"})
    default_inbox_ttl = Duration(allow_none=True,
                                 purpose=REFERENCE_NAME_HELP.format("inbox_default_ttl"))
    max_inbox_ttl = Duration(allow_none=True, purpose=REFERENCE_NAME_HELP.format("inbox_max_ttl"))


class SettingsChangeSchema(SettingsValuesSchema):
    """The org level of the settings cascade, as set: each key under either of its names
    (giving both names different values is a 400)."""

    @post_load
    def our_names(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        """The reference system's names read as ours."""
        return merge_aliases(data, SETTING_ALIASES)


class EffectiveSettingsSchema(Schema):
    """The values in force after the cascade (limits: 0 means no limit)."""

    inbox_default_ttl = fields.String(required=True)
    inbox_max_ttl = fields.String(required=True)
    max_domains = fields.Integer(required=True)
    max_teams = fields.Integer(required=True)
    max_inboxes_per_domain = fields.Integer(required=True)
    enforce_sso = fields.Boolean(required=True)
    timezone = fields.String(required=True)
    default_inbox_ttl = fields.String(required=True, metadata={
        "description": REFERENCE_NAME_HELP.format("inbox_default_ttl")})
    max_inbox_ttl = fields.String(required=True, metadata={
        "description": REFERENCE_NAME_HELP.format("inbox_max_ttl")})


class OrgSettingsSchema(SettingsValuesSchema):
    """The org's own values (null: inherited from the platform) and the values in force."""

    effective = fields.Nested(EffectiveSettingsSchema, required=True)


class RoleSchema(Schema):
    """A role and the permissions it grants."""

    id = fields.UUID(required=True)
    name = fields.String(required=True)
    # The same as `name`: the reference system's clients read a role's name from `value`.
    value = fields.String(attribute="name", dump_only=True, required=True, metadata={
        "description": "the role's name again (clients written for the reference read it)"})
    label = fields.String(required=True, metadata={"description": "the name for people"})
    scope = fields.String(required=True, metadata={"description": "org or team"})
    description = fields.String(required=True)
    rank = fields.Integer(required=True, metadata={
        "description": "changing someone's role needs a strictly higher rank"})
    is_builtin = fields.Boolean(required=True)
    grants_all_teams = fields.Boolean(required=True, metadata={
        "description": "org roles: act with every team permission in every team of the org"})
    permissions = fields.List(fields.String(), required=True, metadata={
        "description": "the permission keys it grants"})


class PermissionSchema(Schema):
    """A permission key and what it allows."""

    key = fields.String(required=True)
    description = fields.String(required=True)


class RoleCatalogueSchema(Schema):
    """Every role (built-in and custom) and every permission, by scope."""

    org_roles = fields.List(fields.Nested(RoleSchema), required=True)
    team_roles = fields.List(fields.Nested(RoleSchema), required=True)
    org_permissions = fields.List(fields.Nested(PermissionSchema), required=True)
    team_permissions = fields.List(fields.Nested(PermissionSchema), required=True, metadata={
        "description": "also the valid API-key scopes"})


def _with_reference_names(values: dict[str, Any]) -> dict[str, Any]:
    """`values` with each aliased key also under the reference system's name."""
    return {**values, **{alias: values[ours] for alias, ours in SETTING_ALIASES.items()}}


def _settings_body(org: Org) -> dict[str, Any]:
    own, effective = org_actions.org_settings(db(), runtime().settings, org)
    return {**_with_reference_names(own),
            "effective": _with_reference_names(effective.as_json())}


@blp.route("/orgs")
class Orgs(MethodView):
    @protected(blp)
    @blp.arguments(OrgCreateSchema)
    @blp.response(201, OrgSchema)
    def post(self, body: dict[str, Any]) -> Org:
        """Create an org; the caller becomes its owner"""
        org = org_actions.add_org(db(), caller(), body["name"])
        return org

    @protected(blp)
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(OrgSchema))
    def get(self, args: dict[str, Any]) -> Page[Org]:
        """List the orgs the caller is a member of"""
        return org_actions.list_user_orgs(db(), current_principal().user.id, args["page"],
                                          args["per_page"])


@blp.route("/orgs/<uuid:org_id>")
class OrgById(MethodView):
    @require_org("org.view")
    @blp.response(200, OrgSchema)
    def get(self, org: OrgAccess) -> Org:
        """Get an org"""
        return org.org

    @require_org("org.settings.manage")
    @blp.arguments(OrgUpdateSchema)
    @blp.response(200, OrgSchema)
    def patch(self, body: dict[str, Any], org: OrgAccess) -> Org:
        """Rename an org"""
        if "name" in body:
            org_actions.rename_org(db(), org, body["name"])
        return org.org

    @require_org("org.delete")
    @blp.arguments(OrgDeleteSchema, required=False)
    @blp.response(200, MessageSchema)
    def delete(self, body: dict[str, Any], org: OrgAccess) -> dict[str, str]:
        """Delete an org and everything in it (confirm with your password)"""
        rt = runtime()
        principal = current_principal()
        org_lifecycle.delete_org(db(), rt.store, rt.settings, org, principal.user,
                                 password=body.get("password"),
                                 signed_in=principal.session_id is not None)
        return {"message": "Org deleted"}


@blp.route("/orgs/<uuid:org_id>/settings")
class OrgSettings(MethodView):
    @require_org("org.settings.view")
    @blp.response(200, OrgSettingsSchema)
    def get(self, org: OrgAccess) -> dict[str, Any]:
        """Get the org's settings and the values in force"""
        return _settings_body(org.org)

    @require_org("org.settings.manage")
    @blp.arguments(SettingsChangeSchema)
    @blp.response(200, OrgSettingsSchema)
    def patch(self, body: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """Change some org settings (null clears one)"""
        org_actions.update_org_settings(db(), runtime().settings, org, body, replace=False)
        return _settings_body(org.org)

    @require_org("org.settings.manage")
    @blp.arguments(SettingsChangeSchema)
    @blp.response(200, OrgSettingsSchema)
    def put(self, body: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """Replace the org's settings (keys left out are inherited)"""
        org_actions.update_org_settings(db(), runtime().settings, org, body, replace=True)
        return _settings_body(org.org)


@blp.route("/roles")
class Roles(MethodView):
    @blp.response(200, RoleCatalogueSchema)
    def get(self) -> Catalogue:
        """List the roles (org and team) with their permissions, and every permission

        Public: no sign-in needed. Custom roles appear as soon as they are created.
        """
        return role_catalogue(db())
