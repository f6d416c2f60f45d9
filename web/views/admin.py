"""The system administrator's read side and user management: /api/v1/admin/{stats, orgs, health,
version, users}.

Every route is for system administrators only, read from the user row of this request (never
from the token); an API key never reaches them, not even one a system administrator created
(403). The rules are the admin context's (`models.admin`); changes are audited there.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from models.admin import health
from models.admin.orgs import org_page
from models.admin.stats import platform_stats
from models.admin.users import (
    AUTH_METHODS,
    MAX_MAX_SESSIONS,
    MIN_MAX_SESSIONS,
    UserFilters,
    admin_user_view,
    delete_user_as_admin,
    end_user_sessions,
    migrate_auth,
    update_user,
    users_query,
)
from models.admin.version import version_info
from models.identity.users import MAX_DISPLAY_NAME
from models.pagination import Page, paginate
from web.api import Blueprint, MessageSchema
from web.auth import protected
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import SYSTEM_ADMIN_ONLY, caller
from web.views.auth import UserSchema
from web.views.sessions import RevokedSchema

blp = Blueprint("admin", __name__, url_prefix="/api/v1/admin",
                description="Platform figures, orgs, datastore health, version and user "
                            "management (system administrators)")
F = TypeVar("F", bound=Callable[..., Any])


def _admin_only(view: F) -> F:
    """Signed-in system administrators only (403 for anyone else and for every API key), as
    the OpenAPI document says with `x-system-admin-only`."""
    return protected(blp, system_admin=True)(blp.doc(**{SYSTEM_ADMIN_ONLY: True})(view))


class AdminStatsSchema(Schema):
    """Platform-wide figures; the `admin.stats` WebSocket pushes exactly this object."""

    total_emails = fields.Integer(required=True, metadata={
        "description": "e-mails ever received (survives inbox cleanup)"})
    active_inboxes = fields.Integer(required=True, metadata={"description": "not expired"})
    total_domains = fields.Integer(required=True)
    total_users = fields.Integer(required=True)
    total_teams = fields.Integer(required=True)
    storage_used_bytes = fields.Integer(required=True, metadata={
        "description": "raw messages and attachments, each stored object once"})
    total_inboxes = fields.Integer(required=True, metadata={
        "description": "inboxes stored (expired ones until the cleanup removes them)"})
    total_sessions = fields.Integer(required=True, metadata={"description": "active sessions"})
    total_webhooks = fields.Integer(required=True)
    total_api_keys = fields.Integer(required=True, metadata={"description": "not revoked"})


class SearchArgsSchema(PageArgsSchema):
    q = Line(load_default="", validate=validate.Length(max=200),
             metadata={"description": "substring to look for, any case"})


class AdminOrgSchema(Schema):
    """An org with its counts."""

    id = fields.UUID(required=True)
    name = fields.String(required=True)
    slug = fields.String(required=True)
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)
    member_count = fields.Integer(required=True)
    team_count = fields.Integer(required=True, metadata={"description": "archived ones too"})
    domain_count = fields.Integer(required=True)


class DatastoreProbeSchema(Schema):
    """One datastore's probe."""

    status = fields.String(required=True, metadata={"description": "ok, or error: <kind>"})
    backend = fields.String(required=True, metadata={
        "description": "sqlite or postgresql; memory or redis; fs or s3"})
    latency = fields.String(required=True, metadata={"example": "1.2ms"})
    latency_ms = fields.Float(required=True)


class AdminHealthSchema(Schema):
    """Each datastore's state, and this process's uptime."""

    status = fields.String(required=True, metadata={"description": "ok or unavailable"})
    services = fields.Dict(keys=fields.String(), values=fields.Nested(DatastoreProbeSchema),
                           required=True, metadata={
                               "description": "database, key_value_store, object_storage"})
    uptime = fields.String(required=True, metadata={"example": "3h25m10s"})
    uptime_seconds = fields.Integer(required=True)


class AdminVersionSchema(Schema):
    """What is running."""

    version = fields.String(required=True)
    git_commit = fields.String(required=True, metadata={"description": "or unknown"})
    python_version = fields.String(required=True)
    migration_revision = fields.String(required=True, allow_none=True, metadata={
        "description": "the database's revision"})
    migration_head = fields.String(required=True, metadata={
        "description": "the newest revision this code knows; differs until the release step "
                       "has run"})


class UserArgsSchema(SearchArgsSchema):
    q = Line(load_default="", validate=validate.Length(max=200),
             metadata={"description": "substring of the e-mail or the display name, any case"})
    system_admin = fields.Boolean(metadata={"description": "only (true) or no (false) system "
                                                           "administrators"})
    disabled = fields.Boolean(metadata={"description": "only disabled (true) or enabled (false)"})
    sso_only = fields.Boolean(metadata={"description": "only accounts without a password (true) "
                                                       "or with one (false)"})


class AdminUserSchema(UserSchema):
    """A user account as administrators see it."""

    disabled = fields.Boolean(required=True)
    disabled_at = Timestamp(required=True, allow_none=True)
    auth_method = fields.String(required=True, metadata={"description": "password or sso"})


class UserChangeSchema(Schema):
    display_name = Line(validate=validate.Length(min=1, max=MAX_DISPLAY_NAME))
    is_system_admin = JsonBoolean(metadata={
        "description": "not your own: nobody demotes themselves"})
    email_verified = JsonBoolean()
    max_sessions = fields.Integer(strict=True, allow_none=True, validate=validate.Range(
        min=MIN_MAX_SESSIONS, max=MAX_MAX_SESSIONS), metadata={
        "description": "this user's session limit; null: the platform default"})
    disabled = JsonBoolean(metadata={
        "description": "true ends every session and refuses sign-ins, refreshes and the "
                       "user's API keys; not yourself"})


class MigrateAuthSchema(Schema):
    target = Line(required=True, validate=validate.OneOf(AUTH_METHODS))
    new_password = Line(validate=validate.Length(max=4096), metadata={
        "description": "to password: required when the account has none; checked against "
                       "the password policy"})


@blp.route("/stats")
class Stats(MethodView):
    @_admin_only
    @blp.response(200, AdminStatsSchema)
    def get(self) -> dict[str, int]:
        """Platform-wide figures (the same as the admin-stats WebSocket pushes)"""
        return platform_stats(db())


@blp.route("/orgs")
class Orgs(MethodView):
    @_admin_only
    @blp.arguments(SearchArgsSchema, location="query")
    @blp.response(200, page_schema(AdminOrgSchema))
    def get(self, args: dict[str, Any]) -> Page[Any]:
        """Every org, oldest first, searchable by name or slug, with its counts"""
        return org_page(db(), args["q"], args["page"], args["per_page"])


@blp.route("/health")
class Health(MethodView):
    @_admin_only
    @blp.response(200, AdminHealthSchema)
    @blp.alt_response(503, schema=AdminHealthSchema, description="a datastore is unavailable")
    def get(self) -> Any:
        """Each datastore's status and latency; 503 when one is down"""
        probes = health.probe_datastores(runtime())
        ok = all(probe.ok for probe in probes.values())
        services = {name: {"status": probe.status, "backend": probe.backend,
                           "latency": f"{probe.latency_ms:g}ms",
                           "latency_ms": probe.latency_ms} for name, probe in probes.items()}
        body = {"status": "ok" if ok else "unavailable", "services": services,
                "uptime": health.uptime(), "uptime_seconds": int(health.uptime_seconds())}
        return body, 200 if ok else 503


@blp.route("/version")
class Version(MethodView):
    @_admin_only
    @blp.response(200, AdminVersionSchema)
    def get(self) -> dict[str, Any]:
        """The release, source commit, Python version and migration revisions"""
        return version_info(db())


@blp.route("/users")
class Users(MethodView):
    @_admin_only
    @blp.arguments(UserArgsSchema, location="query")
    @blp.response(200, page_schema(AdminUserSchema))
    def get(self, args: dict[str, Any]) -> Page[Any]:
        """Every user, oldest first: search by e-mail or name, filter by flags"""
        filters = UserFilters(q=args["q"], system_admin=args.get("system_admin"),
                              disabled=args.get("disabled"), sso_only=args.get("sso_only"))
        page = paginate(db(), users_query(filters), args["page"], args["per_page"])
        page.data = [admin_user_view(user) for user in page.data]
        return page


@blp.route("/users/<uuid:user_id>")
class UserById(MethodView):
    @_admin_only
    @blp.arguments(UserChangeSchema)
    @blp.response(200, AdminUserSchema)
    @blp.alt_response(404, description="no such user")
    def patch(self, args: dict[str, Any], user_id: uuid.UUID) -> dict[str, Any]:
        """Change a user's name, flags or session limit; disable or enable the account"""
        user = update_user(db(), caller(), user_id, args)
        return admin_user_view(user)

    @_admin_only
    @blp.response(200, MessageSchema)
    @blp.alt_response(404, description="no such user")
    @blp.alt_response(409, description="the only owner of an org (`org_ids`)")
    def delete(self, user_id: uuid.UUID) -> dict[str, str]:
        """Delete a user (not yourself): their sessions end and their API keys are revoked"""
        delete_user_as_admin(db(), caller(), user_id)
        return {"message": "User deleted"}


@blp.route("/users/<uuid:user_id>/sessions")
class UserSessions(MethodView):
    @_admin_only
    @blp.response(200, RevokedSchema)
    @blp.alt_response(404, description="no such user")
    def delete(self, user_id: uuid.UUID) -> dict[str, Any]:
        """End every session of a user; their access tokens stop at once"""
        count = end_user_sessions(db(), caller(), user_id)
        return {"message": "Sessions deleted", "revoked": count}


@blp.route("/users/<uuid:user_id>/migrate-auth")
class MigrateAuth(MethodView):
    @_admin_only
    @blp.arguments(MigrateAuthSchema)
    @blp.response(200, AdminUserSchema)
    @blp.alt_response(404, description="no such user")
    @blp.alt_response(409, description="already signs in that way, or (to sso) no SSO identity")
    def post(self, args: dict[str, Any], user_id: uuid.UUID) -> dict[str, Any]:
        """Switch a user between password and SSO sign-in; every session ends"""
        user = migrate_auth(db(), runtime().settings, caller(), user_id, target=args["target"],
                            new_password=args.get("new_password"))
        return admin_user_view(user)
