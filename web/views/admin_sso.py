"""Single sign-on for system administrators: the providers (/api/v1/admin/sso/providers), their
domain mappings (.../:pid/domain-mappings) and the connectivity test /api/v1/admin/sso/test. The
client secret is write-only (GET shows `has_client_secret`); the rules are models.sso."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from burnbox.secretbox import SecretBox
from models.errors import ValidationFailed
from models.sso import discovery, mappings, providers
from web.api import Blueprint, MessageSchema
from web.auth import current_user, origin, protected
from web.context import db, runtime
from web.fields import Email, JsonBoolean, Line, Timestamp
from web.ratelimit import rate_limited

blp = Blueprint("admin-sso", __name__, url_prefix="/api/v1/admin/sso",
                description="Single sign-on providers (system administrators)")


class SsoProviderSchema(Schema):
    """An OpenID Connect provider; the client secret is never shown."""

    id = fields.UUID(required=True)
    name = fields.String(required=True, metadata={"description": "its segment in "
                                                   "/auth/sso/:provider"})
    provider_type = fields.String(required=True, metadata={
        "description": "oidc, or a preset filling in the issuer: google, azure, okta"})
    client_id = fields.String(required=True)
    has_client_secret = fields.Boolean(required=True)
    issuer_url = fields.String(required=True)
    tenant_id = fields.String(required=True)
    redirect_url = fields.String(required=True, metadata={
        "description": "empty: derived from http.public_url"})
    auto_provision = fields.Boolean(required=True)
    default_org_role = fields.String(required=True)
    allowed_domains = fields.List(fields.String(), required=True)
    enabled = fields.Boolean(required=True)
    linked_user_count = fields.Integer(required=True, metadata={
        "description": "users with an account at this provider linked"})
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class SsoProviderChangeSchema(Schema):
    """The fields of a provider to change (all optional); an absent or empty client_secret
    keeps the stored one."""

    name = Line(validate=validate.Length(max=32))
    provider_type = Line(validate=validate.OneOf(providers.PROVIDER_TYPES))
    client_id = Line(validate=validate.Length(max=255))
    client_secret = Line(validate=validate.Length(max=1024), load_only=True, metadata={
        "description": "write-only; sealed at rest (needs secrets.encryption_keys)"})
    issuer_url = Line(validate=validate.Length(max=2048), metadata={
        "description": "the OpenID issuer; empty for google and azure takes the preset's"})
    tenant_id = Line(validate=validate.Length(max=100), metadata={
        "description": "azure: the directory (tenant) id"})
    redirect_url = Line(validate=validate.Length(max=2048))
    auto_provision = JsonBoolean()
    default_org_role = Line(validate=validate.Length(max=32))
    allowed_domains = fields.List(Line(validate=validate.Length(max=253)),
                                  validate=validate.Length(max=100))
    enabled = JsonBoolean()


class SsoProviderCreateSchema(SsoProviderChangeSchema):
    """A new provider."""

    name = Line(required=True, validate=validate.Length(max=32), metadata={
        "description": "a-z, 0-9, - and _, 2-32 characters, starting with a letter"})
    client_id = Line(required=True, validate=validate.Length(max=255))


class SsoProviderTestSchema(Schema):
    """What to test: a stored provider, or an issuer (with the preset fields) before storing."""

    provider_id = fields.UUID()
    issuer_url = Line(validate=validate.Length(max=2048))
    provider_type = Line(validate=validate.OneOf(providers.PROVIDER_TYPES))
    tenant_id = Line(validate=validate.Length(max=100))

    @validates_schema
    def _one_target(self, data: dict[str, Any], **kwargs: Any) -> None:
        if "provider_id" not in data and not data.get("issuer_url") and not (
                providers.PRESET_ISSUERS.get(data.get("provider_type", ""))):
            raise ValidationError("give provider_id, issuer_url or a preset provider_type",
                                  "provider_id")


class SsoProviderCheckSchema(Schema):
    """The outcome of a provider test."""

    success = fields.Boolean(required=True)
    endpoint = fields.String(required=True, metadata={"description": "the last address tried"})
    status_code = fields.Integer(required=True, allow_none=True, metadata={
        "description": "its HTTP status; null when it gave no answer"})
    message = fields.String(required=True)
    response_time = fields.Integer(required=True, metadata={"description": "milliseconds"})


class SsoMappingSchema(Schema):
    """Where users of an e-mail domain land when they sign in through the provider."""

    id = fields.UUID(required=True)
    provider_id = fields.UUID(required=True)
    domain = fields.String(required=True, metadata={"description": "matched exactly"})
    org_id = fields.UUID(required=True)
    org_name = fields.String(required=True, allow_none=True)
    org_role = fields.String(required=True)
    team_id = fields.UUID(required=True, allow_none=True)
    team_name = fields.String(required=True, allow_none=True)
    team_role = fields.String(required=True, allow_none=True)
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class SsoMappingChangeSchema(Schema):
    """The fields of a mapping to change; `team_id: null` removes the team."""

    domain = Line(validate=validate.Length(max=253))
    org_id = fields.UUID()
    org_role = Line(validate=validate.Length(max=32))
    team_id = fields.UUID(allow_none=True, metadata={"description": "a team of the org"})
    team_role = Line(validate=validate.Length(max=32), metadata={
        "description": "with a team; default member"})


class SsoMappingCreateSchema(SsoMappingChangeSchema):
    """A new mapping (org_role defaults to member)."""

    domain = Line(required=True, validate=validate.Length(max=253))
    org_id = fields.UUID(required=True)


class SsoPreviewInputSchema(Schema):
    """Whose sign-in, through which provider."""

    email = Email(required=True, validate=validate.Length(max=254))
    provider = Line(required=True, validate=validate.Length(max=64), metadata={
        "description": "the provider's name or id"})


class SsoOrgAssignmentSchema(Schema):
    """An org a sign-in would join, with its role."""

    org_id = fields.UUID(required=True)
    org_name = fields.String(required=True)
    org_role = fields.String(required=True)


class SsoTeamAssignmentSchema(Schema):
    """A team a sign-in would join, with its role."""

    org_id = fields.UUID(required=True)
    team_id = fields.UUID(required=True)
    team_name = fields.String(required=True, allow_none=True)
    team_role = fields.String(required=True)


class SsoPreviewSchema(Schema):
    """What a sign-in would do; nothing was changed."""

    email = fields.String(required=True)
    email_domain = fields.String(required=True)
    provider = fields.String(required=True, metadata={"description": "the provider's name"})
    provider_enabled = fields.Boolean(required=True)
    domain_allowed = fields.Boolean(required=True, metadata={
        "description": "the provider's allowed_domains is empty or holds the domain"})
    matching_rules = fields.List(fields.Nested(SsoMappingSchema), required=True)
    would_bypass_invite = fields.Boolean(required=True, metadata={
        "description": "a mapping places the user: no invitation needed"})
    org_assignments = fields.List(fields.Nested(SsoOrgAssignmentSchema), required=True)
    team_assignments = fields.List(fields.Nested(SsoTeamAssignmentSchema), required=True)


def _mapping_draft(args: dict[str, Any]) -> mappings.MappingDraft:
    given = {k: v for k, v in args.items() if v is not None}
    return mappings.MappingDraft(**given, clear_team="team_id" in args and
                                 args["team_id"] is None)


def _box() -> SecretBox:
    return SecretBox.from_settings(runtime().settings)


def _draft(args: dict[str, Any]) -> providers.ProviderDraft:
    return providers.ProviderDraft(**args)


@blp.route("/providers")
class AdminSsoProviders(MethodView):
    @protected(blp, system_admin=True)
    @blp.response(200, SsoProviderSchema(many=True))
    def get(self) -> list[dict[str, Any]]:
        """Every SSO provider, by name"""
        return [providers.provider_view(db(), p) for p in providers.list_providers(db())]

    @protected(blp, system_admin=True)
    @blp.arguments(SsoProviderCreateSchema)
    @blp.response(201, SsoProviderSchema)
    @blp.alt_response(400, description="a bad value, or a client secret with no encryption key")
    @blp.alt_response(409, description="a provider of that name exists")
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Add an OpenID Connect provider"""
        provider = providers.create_provider(db(), runtime().settings, _box(), _draft(args),
                                             actor_id=current_user().id, origin=origin())
        shown = providers.provider_view(db(), provider)
        return shown


@blp.route("/providers/<uuid:provider_id>")
class AdminSsoProviderById(MethodView):
    @protected(blp, system_admin=True)
    @blp.response(200, SsoProviderSchema)
    @blp.alt_response(404, description="no such provider")
    def get(self, provider_id: uuid.UUID) -> dict[str, Any]:
        """One SSO provider"""
        return providers.provider_view(db(), providers.get_provider(db(), provider_id))

    @protected(blp, system_admin=True)
    @blp.arguments(SsoProviderChangeSchema)
    @blp.response(200, SsoProviderSchema)
    @blp.alt_response(400, description="a bad value, or a client secret with no encryption key")
    @blp.alt_response(404, description="no such provider")
    @blp.alt_response(409, description="another provider has that name")
    def put(self, args: dict[str, Any], provider_id: uuid.UUID) -> dict[str, Any]:
        """Change a provider; absent fields (and an empty client_secret) keep their values"""
        provider = providers.update_provider(db(), runtime().settings, _box(), provider_id,
                                             _draft(args), actor_id=current_user().id,
                                             origin=origin())
        shown = providers.provider_view(db(), provider)
        return shown

    @protected(blp, system_admin=True)
    @blp.response(200, MessageSchema)
    @blp.alt_response(404, description="no such provider")
    def delete(self, provider_id: uuid.UUID) -> dict[str, str]:
        """Remove a provider"""
        providers.delete_provider(db(), provider_id, actor_id=current_user().id,
                                  origin=origin())
        return {"message": "SSO provider deleted"}


@blp.route("/providers/<uuid:provider_id>/domain-mappings")
class AdminSsoMappings(MethodView):
    @protected(blp, system_admin=True)
    @blp.response(200, SsoMappingSchema(many=True))
    @blp.alt_response(404, description="no such provider")
    def get(self, provider_id: uuid.UUID) -> list[dict[str, Any]]:
        """The provider's domain mappings, by domain"""
        return [mappings.mapping_view(db(), m) for m in mappings.list_mappings(db(), provider_id)]

    @protected(blp, system_admin=True)
    @blp.arguments(SsoMappingCreateSchema)
    @blp.response(201, SsoMappingSchema)
    @blp.alt_response(400, description="a bad domain, an unknown org, role, or a team of "
                                       "another org")
    @blp.alt_response(404, description="no such provider")
    @blp.alt_response(409, description="the provider maps the domain to that org and team")
    def post(self, args: dict[str, Any], provider_id: uuid.UUID) -> dict[str, Any]:
        """Map an e-mail domain to an org (and optionally a team) for this provider"""
        mapping = mappings.create_mapping(db(), provider_id, _mapping_draft(args),
                                          actor_id=current_user().id, origin=origin())
        shown = mappings.mapping_view(db(), mapping)
        return shown


@blp.route("/providers/<uuid:provider_id>/domain-mappings/<uuid:mapping_id>")
class AdminSsoMappingById(MethodView):
    @protected(blp, system_admin=True)
    @blp.arguments(SsoMappingChangeSchema)
    @blp.response(200, SsoMappingSchema)
    @blp.alt_response(400, description="a bad domain, an unknown org, role, or a team of "
                                       "another org")
    @blp.alt_response(404, description="no such provider, or no such mapping of it")
    @blp.alt_response(409, description="the provider maps the domain to that org and team")
    def put(self, args: dict[str, Any], provider_id: uuid.UUID,
            mapping_id: uuid.UUID) -> dict[str, Any]:
        """Change a mapping; absent fields keep their values"""
        mapping = mappings.update_mapping(db(), provider_id, mapping_id, _mapping_draft(args),
                                          actor_id=current_user().id, origin=origin())
        shown = mappings.mapping_view(db(), mapping)
        return shown

    @protected(blp, system_admin=True)
    @blp.response(200, MessageSchema)
    @blp.alt_response(404, description="no such provider, or no such mapping of it")
    def delete(self, provider_id: uuid.UUID, mapping_id: uuid.UUID) -> dict[str, str]:
        """Remove a mapping"""
        mappings.delete_mapping(db(), provider_id, mapping_id, actor_id=current_user().id,
                                origin=origin())
        return {"message": "domain mapping deleted"}


@blp.route("/domain-mappings/preview")
class AdminSsoMappingPreview(MethodView):
    @protected(blp, system_admin=True)
    @blp.arguments(SsoPreviewInputSchema)
    @blp.response(200, SsoPreviewSchema)
    @blp.alt_response(404, description="no such provider")
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Say what a sign-in of `email` through `provider` would do, without doing it"""
        return mappings.preview(db(), args["email"], args["provider"])


@blp.route("/test")
class AdminSsoTest(MethodView):
    @protected(blp, system_admin=True)
    @rate_limited("auth")
    @blp.arguments(SsoProviderTestSchema)
    @blp.response(200, SsoProviderCheckSchema)
    @blp.alt_response(400, description="nothing to test, or an issuer that is not an http(s) URL")
    @blp.alt_response(404, description="no such provider")
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Fetch a provider's discovery document and JWKS through the outbound guard (internal
        addresses refused unless sso.allow_private_issuers), within 10 s each"""
        if "provider_id" in args:
            issuer = providers.get_provider(db(), args["provider_id"]).issuer_url
        else:
            issuer = (args.get("issuer_url") or providers.preset_issuer(
                args.get("provider_type", ""), args.get("tenant_id", "")) or "")
            if not providers.is_http_url(issuer):
                raise ValidationFailed("issuer_url: an absolute http(s) URL",
                                       details={"issuer_url": ["an absolute http(s) URL"]})
        db().rollback()  # nothing held open while the provider answers
        return dataclasses.asdict(discovery.check_provider(runtime().settings, issuer))
