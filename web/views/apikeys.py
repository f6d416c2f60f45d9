"""API keys of a team: /api/v1/orgs/:id/teams/:tid/api-keys...

The raw key (`bb_` + 64 hex) is in the create and rotate responses only; afterwards a key is
known by its 11-character `prefix`. Reads need `team.apikeys.view`, changes
`team.apikeys.manage`. DELETE revokes (the row stays, with `revoked_at` and `revoked_by`);
usage fields lag requests by up to `clock.api_key_usage_interval`.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, pre_dump, validate

from models.apikeys import keys as apikeys
from models.apikeys.keys import (
    MAX_ALLOWED_IPS,
    MAX_NAME,
    MAX_SCOPES,
    ApiKey,
    BulkRevoked,
    IssuedKey,
)
from models.pagination import Page
from models.tenancy.roster import MAX_BULK_ITEMS
from models.tenancy.teams import TeamAccess
from web.api import Blueprint, MessageSchema
from web.auth import current_principal
from web.context import db
from web.fields import Duration, JsonBoolean, Line, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import require_team

blp = Blueprint("api-keys", __name__,
                url_prefix="/api/v1/orgs/<uuid:org_id>/teams/<uuid:team_id>/api-keys",
                description="API keys of a team: scoped programmatic access")


class ApiKeySchema(Schema):
    """An API key (never its secret)."""

    id = fields.UUID(required=True)
    team_id = fields.UUID(required=True)
    org_id = fields.UUID(required=True)
    name = fields.String(required=True)
    prefix = fields.String(required=True, metadata={
        "description": "bb_ and the first 8 hex characters of the key, for display"})
    key_prefix = fields.String(required=True, attribute="prefix", dump_only=True,
                               metadata={"description": "the same as prefix"})
    scopes = fields.List(fields.String(), required=True)
    expires_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "null: the key never expires"})
    allowed_ips = fields.List(fields.String(), required=True, metadata={
        "description": "addresses and CIDR ranges the key may be used from; empty allows all"})
    is_active = fields.Boolean(required=True, metadata={
        "description": "false: disabled (or revoked, when revoked_at is set)"})
    request_count = fields.Integer(required=True)
    last_used_at = Timestamp(required=True, allow_none=True)
    last_used_ip = fields.String(required=True, allow_none=True)
    created_by = fields.UUID(required=True, allow_none=True, metadata={
        "description": "null once the creator's account is deleted"})
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)
    revoked_at = Timestamp(required=True, allow_none=True)
    revoked_by = fields.UUID(required=True, allow_none=True, metadata={
        "description": "null when the system revoked it (its creator left)"})


class IssuedKeySchema(ApiKeySchema):
    """A key just created or rotated, with its raw secret: shown this once, never again."""

    raw_key = fields.String(required=True)

    @pre_dump
    def flatten(self, issued: IssuedKey, **_kwargs: Any) -> dict[str, Any]:
        """The key's attributes next to raw_key."""
        return {**{field.attribute or name: getattr(issued.key, field.attribute or name)
                   for name, field in ApiKeySchema().fields.items()},
                "raw_key": issued.raw_key}


def _scopes(**options: Any) -> fields.List:
    return fields.List(Line(validate=validate.Length(min=1, max=64)),
                       validate=validate.Length(min=1, max=MAX_SCOPES), metadata={
                           "description": "team permission keys (GET /roles lists them)"},
                       **options)


def _allowed_ips(**options: Any) -> fields.List:
    return fields.List(Line(validate=validate.Length(min=1, max=64)),
                       validate=validate.Length(max=MAX_ALLOWED_IPS), metadata={
                           "description": "IPv4/IPv6 addresses and CIDR ranges; empty allows "
                                          "every address"}, **options)


class ApiKeyCreateSchema(Schema):
    name = Line(required=True, validate=validate.Length(min=1, max=MAX_NAME))
    scopes = _scopes(required=True)
    expires_in = Duration(load_default=None, allow_none=True,
                          purpose="after it the key expires (720h); absent or null: never")
    allowed_ips = _allowed_ips(load_default=list)


class ApiKeyUpdateSchema(Schema):
    name = Line(validate=validate.Length(min=1, max=MAX_NAME))
    scopes = _scopes()
    allowed_ips = _allowed_ips()
    is_active = JsonBoolean(metadata={
        "description": "false disables the key; true enables a disabled key again"})


class BulkRevokeSchema(Schema):
    key_ids = fields.List(fields.UUID(), required=True,
                          validate=validate.Length(min=1, max=MAX_BULK_ITEMS))


class BulkRevokedSchema(Schema):
    """How many keys were revoked; the ids skipped (not a key of this team, or revoked
    already)."""

    revoked = fields.Integer(required=True)
    skipped = fields.List(fields.UUID(), required=True)


@blp.route("")
class ApiKeys(MethodView):
    @require_team("team.apikeys.manage")
    @blp.arguments(ApiKeyCreateSchema)
    @blp.response(201, IssuedKeySchema)
    @blp.alt_response(409, description="the team is archived")
    def post(self, body: dict[str, Any], team: TeamAccess) -> IssuedKey:
        """Create an API key (its raw_key is shown this once)"""
        issued = apikeys.create_key(db(), team, **body, acting=current_principal().api_key)
        return issued

    @require_team("team.apikeys.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(ApiKeySchema))
    def get(self, args: dict[str, Any], team: TeamAccess) -> Page[ApiKey]:
        """List the team's API keys (revoked ones included), newest first"""
        return apikeys.list_keys(db(), team.team.id, args["page"], args["per_page"])


@blp.route("/bulk-revoke")
class ApiKeysBulkRevoke(MethodView):
    @require_team("team.apikeys.manage")
    @blp.arguments(BulkRevokeSchema)
    @blp.response(200, BulkRevokedSchema)
    def post(self, body: dict[str, Any], team: TeamAccess) -> BulkRevoked:
        """Revoke many keys; ids of other teams' keys are skipped, never touched"""
        result = apikeys.bulk_revoke(db(), team, body["key_ids"])
        return result


@blp.route("/<uuid:key_id>")
class ApiKeyById(MethodView):
    @require_team("team.apikeys.view")
    @blp.response(200, ApiKeySchema)
    def get(self, team: TeamAccess, key_id: uuid.UUID) -> ApiKey:
        """Get an API key with its usage"""
        return apikeys.get_key(db(), team.team.id, key_id)

    @require_team("team.apikeys.manage")
    @blp.arguments(ApiKeyUpdateSchema)
    @blp.response(200, ApiKeySchema)
    @blp.alt_response(409, description="the key is revoked")
    def patch(self, body: dict[str, Any], team: TeamAccess, key_id: uuid.UUID) -> ApiKey:
        """Rename a key, change its scopes or allowlist, disable or enable it"""
        key = apikeys.update_key(db(), team, key_id, **body, acting=current_principal().api_key)
        return key

    @require_team("team.apikeys.manage")
    @blp.response(200, MessageSchema)
    def delete(self, team: TeamAccess, key_id: uuid.UUID) -> dict[str, str]:
        """Revoke an API key (the row is kept, with revoked_at and revoked_by)"""
        apikeys.revoke_key(db(), team, key_id)
        return {"message": "API key revoked"}


@blp.route("/<uuid:key_id>/rotate")
class ApiKeyRotate(MethodView):
    @require_team("team.apikeys.manage")
    @blp.response(200, IssuedKeySchema)
    @blp.alt_response(409, description="the key is revoked or expired")
    def post(self, team: TeamAccess, key_id: uuid.UUID) -> IssuedKey:
        """Give a key a new secret; the old one stops working at once"""
        issued = apikeys.rotate_key(db(), team, key_id, acting=current_principal().api_key)
        return issued
