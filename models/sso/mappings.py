"""SSO domain mappings: users whose e-mail domain is `domain`, signing in through the mapping's
provider, join an org with a role and, optionally, one of its teams with a team role
(POST/GET /admin/sso/providers/:pid/domain-mappings, PUT/DELETE .../:mid), and the preview of what a
sign-in would do (POST /admin/sso/domain-mappings/preview).

Domains match exactly (`corp.example` does not cover `eu.corp.example`): a suffix match would
let whoever controls a subdomain's mailboxes into the org. A mapping names its org and team by
id; the team must belong to the org, and the roles must exist in their scopes. One provider has
at most one mapping per (domain, org, team). A mapping goes with its provider, org or team
(foreign keys ON DELETE CASCADE), and with its team when the team moves to another org
(`drop_team_mappings`, called by models.lifecycle.teams). Changes are audited as critical, like
provider changes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ForeignKey, String, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from models.db import Base, Timestamps, UUIDKey
from models.errors import Conflict, NotFound
from models.platform.audit import Origin, record_audit
from models.sso.providers import (
    DOMAIN,
    SsoProvider,
    find_provider,
    get_provider,
    invalid_field,
)
from models.tenancy.orgs import Org
from models.tenancy.rbac import ORG_SCOPE, TEAM_SCOPE, Role
from models.tenancy.teams import Team

MAPPING_CREATED = "sso.mapping_create"
MAPPING_UPDATED = "sso.mapping_update"
MAPPING_DELETED = "sso.mapping_delete"
FIELDS = ("domain", "org_id", "org_role", "team_id", "team_role")


class SsoDomainMapping(UUIDKey, Timestamps, Base):
    """Where users of one e-mail domain land when they sign in through one provider."""

    __tablename__ = "sso_domain_mappings"

    provider_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("sso_providers.id", ondelete="CASCADE"), index=True)
    domain: Mapped[str] = mapped_column(String(253))
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              index=True)
    org_role: Mapped[str] = mapped_column(String(32))
    team_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    team_role: Mapped[str | None] = mapped_column(String(32))


@dataclass(frozen=True)
class MappingDraft:
    """The values an administrator gives; None: not given (kept on update). On update,
    `clear_team` removes the team and its role."""

    domain: str | None = None
    org_id: uuid.UUID | None = None
    org_role: str | None = None
    team_id: uuid.UUID | None = None
    team_role: str | None = None
    clear_team: bool = False


def _role_exists(session: Session, scope: str, name: str) -> bool:
    return session.scalar(select(Role.id).where(Role.scope == scope, Role.name == name)) is not None


def _checked(session: Session, values: dict[str, Any]) -> dict[str, Any]:
    """`values` validated: the domain, the org, the team inside that org, the roles."""
    domain = (values["domain"] or "").strip().lower().rstrip(".")
    if not DOMAIN.fullmatch(domain):
        raise invalid_field("domain", "a domain name such as corp.example.com")
    if values["org_id"] is None or session.get(Org, values["org_id"]) is None:
        raise invalid_field("org_id", "an existing org")
    if not _role_exists(session, ORG_SCOPE, values["org_role"] or ""):
        raise invalid_field("org_role", "an existing org role")
    if values["team_id"] is None:
        if values["team_role"]:
            raise invalid_field("team_role", "only with a team_id")
        return {**values, "domain": domain, "team_role": None}
    team = session.get(Team, values["team_id"])
    # A team of another org would place users in an org the mapping does not name.
    if team is None or team.org_id != values["org_id"]:
        raise invalid_field("team_id", "a team of the mapping's org")
    role = values["team_role"] or "member"
    if not _role_exists(session, TEAM_SCOPE, role):
        raise invalid_field("team_role", "an existing team role")
    return {**values, "domain": domain, "team_role": role}


def mapping_view(session: Session, mapping: SsoDomainMapping) -> dict[str, Any]:
    """What administrators see of a mapping, with the org's and team's names."""
    team = session.get(Team, mapping.team_id) if mapping.team_id else None
    org = session.get(Org, mapping.org_id)
    return {"id": mapping.id, "provider_id": mapping.provider_id,
            **{name: getattr(mapping, name) for name in FIELDS},
            "org_name": org.name if org else None, "team_name": team.name if team else None,
            "created_at": mapping.created_at, "updated_at": mapping.updated_at}


def _snapshot(mapping: SsoDomainMapping) -> dict[str, Any]:
    return {"provider_id": str(mapping.provider_id), "domain": mapping.domain,
            "org_id": str(mapping.org_id), "org_role": mapping.org_role,
            "team_id": str(mapping.team_id) if mapping.team_id else None,
            "team_role": mapping.team_role}


def list_mappings(session: Session, provider_id: uuid.UUID) -> list[SsoDomainMapping]:
    """The provider's mappings by domain; NotFound for an unknown provider."""
    get_provider(session, provider_id)
    return list(session.scalars(select(SsoDomainMapping)
                                .where(SsoDomainMapping.provider_id == provider_id)
                                .order_by(SsoDomainMapping.domain, SsoDomainMapping.created_at)))


def get_mapping(session: Session, provider_id: uuid.UUID,
                mapping_id: uuid.UUID) -> SsoDomainMapping:
    """The mapping `mapping_id` of provider `provider_id`; NotFound otherwise (a mapping is
    reached only through its own provider)."""
    get_provider(session, provider_id)
    mapping = session.get(SsoDomainMapping, mapping_id)
    if mapping is None or mapping.provider_id != provider_id:
        raise NotFound("no such domain mapping")
    return mapping


def _refuse_twin(session: Session, provider_id: uuid.UUID, values: dict[str, Any],
                 mapping_id: uuid.UUID) -> None:
    """Conflict when another mapping of the provider has the same domain, org and team. Checked
    on the values before they go into the entity, so the query cannot flush them early."""
    team = (SsoDomainMapping.team_id.is_(None) if values["team_id"] is None
            else SsoDomainMapping.team_id == values["team_id"])
    twin = session.scalar(select(SsoDomainMapping.id).where(
        SsoDomainMapping.provider_id == provider_id,
        SsoDomainMapping.domain == values["domain"],
        SsoDomainMapping.org_id == values["org_id"], team, SsoDomainMapping.id != mapping_id))
    if twin is not None:
        raise Conflict(f"the provider already maps {values['domain']} to that org and team")


def _flush(session: Session) -> None:
    """Flush in a savepoint: the provider, org or team removed by another request since they
    were checked breaks a foreign key, which is a 409 to report, not an IntegrityError (a
    500)."""
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError as exc:
        raise Conflict("the provider, org or team was removed meanwhile; try again") from exc


def _audit(session: Session, action: str, mapping: SsoDomainMapping, *, actor_id: uuid.UUID,
           origin: Origin, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
    record_audit(session, action, actor_id=actor_id, resource_type="sso_domain_mapping",
                 resource_id=mapping.id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, before=before, after=after,
                 resource_name=mapping.domain)


def create_mapping(session: Session, provider_id: uuid.UUID, draft: MappingDraft, *,
                   actor_id: uuid.UUID, origin: Origin) -> SsoDomainMapping:
    """Add a mapping to the provider (no org_role given: the provider's default_org_role);
    NotFound for an unknown provider, ValidationFailed for bad values, Conflict for a twin.
    Audited; the caller commits."""
    provider = get_provider(session, provider_id)
    values = _checked(session, {"domain": draft.domain, "org_id": draft.org_id,
                                "org_role": draft.org_role or provider.default_org_role,
                                "team_id": draft.team_id, "team_role": draft.team_role})
    mapping_id = uuid.uuid4()
    _refuse_twin(session, provider_id, values, mapping_id)
    mapping = SsoDomainMapping(id=mapping_id, provider_id=provider_id, **values)
    session.add(mapping)
    _flush(session)
    _audit(session, MAPPING_CREATED, mapping, actor_id=actor_id, origin=origin, before=None,
           after=_snapshot(mapping))
    return mapping


def update_mapping(session: Session, provider_id: uuid.UUID, mapping_id: uuid.UUID,
                   draft: MappingDraft, *, actor_id: uuid.UUID, origin: Origin
                   ) -> SsoDomainMapping:
    """Change the fields given. Raises as create_mapping, and NotFound for a mapping of
    another provider. Audited; the caller commits."""
    mapping = get_mapping(session, provider_id, mapping_id)
    before = _snapshot(mapping)
    values = {name: getattr(draft, name) if getattr(draft, name) is not None
              else getattr(mapping, name) for name in FIELDS}
    if draft.clear_team:
        values["team_id"] = values["team_role"] = None
    elif draft.org_id is not None and draft.team_id is None and draft.org_id != mapping.org_id:
        # The kept team belongs to the old org: moving the org without naming a team drops it.
        values["team_id"] = values["team_role"] = None
    values = _checked(session, values)
    _refuse_twin(session, provider_id, values, mapping.id)
    for name, value in values.items():
        setattr(mapping, name, value)
    _flush(session)
    _audit(session, MAPPING_UPDATED, mapping, actor_id=actor_id, origin=origin, before=before,
           after=_snapshot(mapping))
    return mapping


def delete_mapping(session: Session, provider_id: uuid.UUID, mapping_id: uuid.UUID, *,
                   actor_id: uuid.UUID, origin: Origin) -> None:
    """Remove a mapping; NotFound as get_mapping. Audited; the caller commits."""
    mapping = get_mapping(session, provider_id, mapping_id)
    before = _snapshot(mapping)
    session.delete(mapping)
    session.flush()
    _audit(session, MAPPING_DELETED, mapping, actor_id=actor_id, origin=origin, before=before,
           after=None)


def email_domain(email: str) -> str:
    """The domain part of an address as mappings store domains (lower-case, no final dot)."""
    return email.rsplit("@", 1)[-1].strip().lower().rstrip(".")


def matching_mappings(session: Session, provider_id: uuid.UUID,
                      domain: str) -> list[SsoDomainMapping]:
    """The provider's mappings of exactly `domain`, oldest first."""
    return list(session.scalars(select(SsoDomainMapping).where(
        SsoDomainMapping.provider_id == provider_id, SsoDomainMapping.domain == domain)
        .order_by(SsoDomainMapping.created_at, SsoDomainMapping.id)))


def org_roles(session: Session, rules: list[SsoDomainMapping]) -> dict[uuid.UUID, str]:
    """The org role `rules` give in each org: several mappings into one org give the
    highest-ranked role."""
    ranks = {name: rank for name, rank in session.execute(
        select(Role.name, Role.rank).where(Role.scope == ORG_SCOPE))}
    orgs: dict[uuid.UUID, str] = {}
    for rule in rules:
        held = orgs.get(rule.org_id)
        if held is None or ranks.get(rule.org_role, 0) > ranks.get(held, 0):
            orgs[rule.org_id] = rule.org_role
    return orgs


def domain_allowed(provider: SsoProvider, domain: str) -> bool:
    """Whether the provider may vouch for addresses of `domain` (its `allowed_domains`, when
    set, must list it)."""
    return not provider.allowed_domains or domain in provider.allowed_domains


def preview(session: Session, email: str, provider_reference: str) -> dict[str, Any]:
    """What a sign-in of `email` through the provider (its name or id) would do, changing
    nothing: the matching mappings, whether the provider accepts the domain, the org and team
    memberships it would give. A domain can map into several orgs, so the memberships are
    listed per org; several mappings into one org give the highest-ranked org role. NotFound
    for an unknown provider."""
    provider = find_provider(session, provider_reference)
    domain = email_domain(email)
    rules = matching_mappings(session, provider.id, domain)
    orgs = org_roles(session, rules)
    views = [mapping_view(session, rule) for rule in rules]
    allowed = domain_allowed(provider, domain)
    return {
        "email": email, "email_domain": domain, "provider": provider.name,
        "provider_enabled": provider.enabled, "domain_allowed": allowed,
        "matching_rules": views,
        # Mapped users join without an invitation; unmapped ones need one (or auto_provision).
        "would_bypass_invite": bool(rules) and provider.enabled and allowed,
        "org_assignments": [{"org_id": org_id, "org_name": session.get(Org, org_id).name,
                             "org_role": role} for org_id, role in orgs.items()],
        "team_assignments": [{"org_id": view["org_id"], "team_id": view["team_id"],
                              "team_name": view["team_name"], "team_role": view["team_role"]}
                             for view in views if view["team_id"] is not None],
    }


def drop_team_mappings(session: Session, team_id: uuid.UUID) -> None:
    """Delete the mappings naming the team, which is leaving its org: kept, they would place
    users in a team outside the mapping's org. Part of the team's transfer (audited there)."""
    session.execute(delete(SsoDomainMapping).where(SsoDomainMapping.team_id == team_id))
