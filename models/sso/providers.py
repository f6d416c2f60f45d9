"""SSO providers: the OpenID Connect clients of this platform, managed by system administrators
(GET/POST /admin/sso/providers, GET/PUT/DELETE /admin/sso/providers/:pid).

Every provider is generic OpenID Connect found through issuer discovery; `provider_type` only
fills in a known issuer (google: Google's issuer; azure: Microsoft's issuer of `tenant_id`), so
the presets are configuration sugar and no code path differs by type. The client secret is
write-only: sealed with `burnbox.secretbox` before it is stored, never shown (`has_client_secret`
says whether there is one), and an absent or empty secret on update keeps the stored one. Each
change is audited with the secret only as `secret_changed` (critical severity, see
models.platform.audit).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import JSON, String, Text, Uuid, column, func, select, table
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.secretbox import SecretBox, SecretsUnavailable
from burnbox.settings import Settings
from models.db import Base, Timestamps, UUIDKey
from models.errors import Conflict, NotFound, ValidationFailed
from models.platform.audit import Origin, record_audit
from models.sso.discovery import ProviderFailure, check_issuer_address
from models.tenancy.rbac import ORG_SCOPE, Role

PROVIDER_CREATED = "sso.provider_create"
PROVIDER_UPDATED = "sso.provider_update"
PROVIDER_DELETED = "sso.provider_delete"

OIDC, GOOGLE, AZURE, OKTA = "oidc", "google", "azure", "okta"
PROVIDER_TYPES = (OIDC, GOOGLE, AZURE, OKTA)
# The issuers the presets stand for; the others need `issuer_url`.
PRESET_ISSUERS = {GOOGLE: "https://accounts.google.com",
                  AZURE: "https://login.microsoftonline.com/{tenant_id}/v2.0"}
# The name is the provider's segment in /auth/sso/:provider, so it stays URL-safe and
# lower-case: two providers differing only in case would be one URL for people.
NAME = re.compile(r"[a-z][a-z0-9_-]{1,31}")
# Static segments beside /auth/sso/:provider (POST /auth/sso/exchange): a provider of that
# name could never be reached.
RESERVED_NAMES = ("exchange",)
TENANT_ID = re.compile(r"[A-Za-z0-9.-]{1,100}")
DOMAIN = re.compile(r"(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")
# The identities table as the provider view counts it (the entity, models.sso.identities,
# imports this module).
_identities = table("user_sso_identities", column("provider_id", Uuid()))
# The fields an administrator sets, besides the secret (the audit snapshots and the view).
FIELDS = ("name", "provider_type", "client_id", "issuer_url", "tenant_id", "redirect_url",
          "auto_provision", "default_org_role", "allowed_domains", "enabled")


class SsoProvider(UUIDKey, Timestamps, Base):
    """One OpenID Connect provider users can sign in with."""

    __tablename__ = "sso_providers"

    name: Mapped[str] = mapped_column(String(32), unique=True)
    provider_type: Mapped[str] = mapped_column(String(16))
    client_id: Mapped[str] = mapped_column(String(255))
    # `fernet:<token>` (burnbox.secretbox), never the secret itself; NULL: a public client.
    client_secret_sealed: Mapped[str | None] = mapped_column(Text)
    issuer_url: Mapped[str] = mapped_column(String(2048))
    tenant_id: Mapped[str] = mapped_column(String(100), default="")
    # Empty: the login part derives it from http.public_url.
    redirect_url: Mapped[str] = mapped_column(String(2048), default="")
    auto_provision: Mapped[bool] = mapped_column(default=False)
    default_org_role: Mapped[str] = mapped_column(String(32), default="member")
    allowed_domains: Mapped[list[str]] = mapped_column(JSON, default=list)
    enabled: Mapped[bool] = mapped_column(default=True)


@dataclass(frozen=True)
class ProviderDraft:
    """The values an administrator gives; None: not given (kept on update, default on create).
    An empty `client_secret` is "not given" too."""

    name: str | None = None
    provider_type: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    issuer_url: str | None = None
    tenant_id: str | None = None
    redirect_url: str | None = None
    auto_provision: bool | None = None
    default_org_role: str | None = None
    allowed_domains: list[str] | None = None
    enabled: bool | None = None


def invalid_field(field: str, problem: str) -> ValidationFailed:
    """The 400 naming `field` and what it must be."""
    return ValidationFailed(f"{field}: {problem}", details={field: [problem]})


def is_http_url(value: str) -> bool:
    """True for an absolute http(s) URL with a host and no credentials or fragment."""
    parts = urlsplit(value)
    return (parts.scheme in ("http", "https") and bool(parts.hostname)
            and parts.username is None and not parts.fragment)


def preset_issuer(provider_type: str, tenant_id: str) -> str | None:
    """The issuer a preset stands for (None: the type needs an explicit issuer_url, or the
    preset needs a tenant and none is given)."""
    template = PRESET_ISSUERS.get(provider_type)
    if template is None or ("{tenant_id}" in template and not tenant_id):
        return None
    return template.format(tenant_id=tenant_id)


def _checked(session: Session, settings: Settings, values: dict[str, Any]) -> dict[str, Any]:
    """`values` (every field) validated and normalised; ValidationFailed names the field."""
    if not NAME.fullmatch(values["name"] or ""):
        raise invalid_field("name", "a-z, 0-9, - and _, 2-32 characters, starting with a letter")
    if values["name"] in RESERVED_NAMES:
        raise invalid_field("name", f"{values['name']} is taken by a sign-in route")
    if values["provider_type"] not in PROVIDER_TYPES:
        raise invalid_field("provider_type", f"one of {', '.join(PROVIDER_TYPES)}")
    # Trimmed, and printable: a client_id of spaces (or one with invisible characters in it)
    # was stored once, and no provider ever issues one.
    client_id = (values["client_id"] or "").strip()
    if not client_id or not client_id.isprintable():
        raise invalid_field("client_id", "required: printable characters, not only blanks")
    tenant = values["tenant_id"] or ""
    if tenant and not TENANT_ID.fullmatch(tenant):
        raise invalid_field("tenant_id", "letters, digits, '.' and '-'")
    if values["provider_type"] == AZURE and not tenant:
        raise invalid_field("tenant_id", "required for azure (a tenant id, or organizations)")
    preset = preset_issuer(values["provider_type"], tenant)
    issuer = (values["issuer_url"] or preset or "").rstrip("/")
    if not issuer:
        raise invalid_field("issuer_url", f"required for {values['provider_type']}")
    if not is_http_url(issuer):
        raise invalid_field("issuer_url", "an absolute http(s) URL")
    try:
        check_issuer_address(settings, issuer)
    except ProviderFailure as exc:
        raise invalid_field("issuer_url", str(exc)) from exc
    if values["redirect_url"] and not is_http_url(values["redirect_url"]):
        raise invalid_field("redirect_url", "an absolute http(s) URL")
    role = session.scalar(select(Role.id).where(Role.scope == ORG_SCOPE,
                                                Role.name == values["default_org_role"]))
    if role is None:
        raise invalid_field("default_org_role", "an existing org role")
    domains = sorted({domain.strip().lower().rstrip(".") for domain in values["allowed_domains"]})
    bad = [domain for domain in domains if not DOMAIN.fullmatch(domain)]
    if bad:
        raise invalid_field("allowed_domains", f"not a domain name: {bad[0]}")
    return {**values, "client_id": client_id, "issuer_url": issuer, "tenant_id": tenant,
            "allowed_domains": domains}


def provider_view(session: Session, provider: SsoProvider) -> dict[str, Any]:
    """What administrators see of a provider: every field but the secret, whether one is
    stored, and how many users have linked an account at it."""
    linked = session.scalar(select(func.count()).select_from(_identities)
                            .where(_identities.c.provider_id == provider.id)) or 0
    return {"id": provider.id, **{name: getattr(provider, name) for name in FIELDS},
            "allowed_domains": list(provider.allowed_domains),
            "has_client_secret": bool(provider.client_secret_sealed),
            "linked_user_count": linked,
            "created_at": provider.created_at, "updated_at": provider.updated_at}


def _snapshot(provider: SsoProvider) -> dict[str, Any]:
    return {name: getattr(provider, name) for name in FIELDS} | {
        "allowed_domains": list(provider.allowed_domains)}


def _seal(box: SecretBox, secret: str) -> str:
    try:
        return box.seal(secret)
    except SecretsUnavailable as exc:
        raise ValidationFailed(f"cannot store client_secret: {exc}", details={
            "client_secret": ["set secrets.encryption_keys to store secrets"]}) from exc


def list_providers(session: Session) -> list[SsoProvider]:
    """Every provider, by name."""
    return list(session.scalars(select(SsoProvider).order_by(SsoProvider.name)))


def get_provider(session: Session, provider_id: uuid.UUID) -> SsoProvider:
    """The provider `provider_id`; NotFound when there is none."""
    provider = session.get(SsoProvider, provider_id)
    if provider is None:
        raise NotFound("no such SSO provider")
    return provider


def find_provider(session: Session, reference: str) -> SsoProvider:
    """The provider named `reference`, or whose id it is; NotFound when there is none."""
    provider = session.scalar(select(SsoProvider).where(SsoProvider.name == reference))
    if provider is None:
        try:
            return get_provider(session, uuid.UUID(reference))
        except ValueError:
            raise NotFound("no such SSO provider") from None
    return provider


def _store(session: Session, provider: SsoProvider, values: dict[str, Any]) -> None:
    """Write `values` into `provider` and flush in a savepoint: losing a race for the name to
    another request is a 409 like the check before it, not an IntegrityError (a 500)."""
    clash = session.scalar(select(SsoProvider.id).where(SsoProvider.name == values["name"],
                                                        SsoProvider.id != provider.id))
    if clash is not None:
        raise Conflict(f"an SSO provider named {values['name']} exists")
    try:
        with session.begin_nested():
            for name, value in values.items():
                setattr(provider, name, value)
            session.add(provider)
            session.flush()
    except IntegrityError as exc:
        raise Conflict(f"an SSO provider named {values['name']} exists") from exc


def create_provider(session: Session, settings: Settings, box: SecretBox, draft: ProviderDraft,
                    *, actor_id: uuid.UUID, origin: Origin) -> SsoProvider:
    """Add a provider; ValidationFailed for bad values or a secret with no encryption key,
    Conflict for a taken name. Audited; the caller commits."""
    given = {name: getattr(draft, name) for name in FIELDS}
    defaults = {"provider_type": OIDC, "tenant_id": "", "redirect_url": "",
                "auto_provision": False, "default_org_role": "member", "allowed_domains": [],
                "enabled": True}
    values = _checked(session, settings, {
        name: defaults.get(name) if given[name] is None else given[name] for name in FIELDS})
    provider = SsoProvider(id=uuid.uuid4(), client_secret_sealed=(
        _seal(box, draft.client_secret) if draft.client_secret else None))
    _store(session, provider, values)
    record_audit(session, PROVIDER_CREATED, actor_id=actor_id, resource_type="sso_provider",
                 resource_id=provider.id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel,
                 after=_snapshot(provider) | {"secret_changed": bool(draft.client_secret)})
    return provider


def update_provider(session: Session, settings: Settings, box: SecretBox,
                    provider_id: uuid.UUID, draft: ProviderDraft, *, actor_id: uuid.UUID,
                    origin: Origin) -> SsoProvider:
    """Change the fields given (an empty or absent secret keeps the stored one). Changing the
    type of a preset without an issuer_url takes the new preset's issuer. Raises as
    create_provider, and NotFound. Audited; the caller commits."""
    provider = get_provider(session, provider_id)
    before = _snapshot(provider)
    values = {name: getattr(draft, name) if getattr(draft, name) is not None else before[name]
              for name in FIELDS}
    if draft.issuer_url is None and before["issuer_url"] == preset_issuer(
            before["provider_type"], before["tenant_id"]):
        values["issuer_url"] = None  # it followed the preset: keep following it
    values = _checked(session, settings, values)
    if draft.client_secret:
        values["client_secret_sealed"] = _seal(box, draft.client_secret)
    _store(session, provider, values)
    record_audit(session, PROVIDER_UPDATED, actor_id=actor_id, resource_type="sso_provider",
                 resource_id=provider.id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, before=before,
                 after=_snapshot(provider) | {"secret_changed": bool(draft.client_secret)})
    return provider


def delete_provider(session: Session, provider_id: uuid.UUID, *, actor_id: uuid.UUID,
                    origin: Origin) -> None:
    """Remove a provider; NotFound when there is none. Audited; the caller commits."""
    provider = get_provider(session, provider_id)
    before = _snapshot(provider)
    session.delete(provider)
    session.flush()
    record_audit(session, PROVIDER_DELETED, actor_id=actor_id, resource_type="sso_provider",
                 resource_id=provider_id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, before=before)

