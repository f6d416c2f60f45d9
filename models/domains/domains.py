"""Domains: registered per org, verified through DNS, assigned to teams.

A domain name is globally unique (two orgs cannot both receive a name's mail), stored as
lower-case IDNA A-labels without the final dot, exactly as DNS and SMTP carry it. Its verification
state (`status`, `txt_verified`, `mx_verified`, `spf_verified`, `dns_last_checked_at`) is written
only by `models.domains.verification`; the rules live there.

Checks run in the worker: actions here only *request* one by recording a `domain.check_requested`
event, which the tasks layer turns into a `check_domain` message after commit (outbox).

Deleting a domain removes what hangs on it. The modules that own those rows (inboxes, e-mails)
plug their counts into `domain_impact` with `count_domain_impact` (this module cannot import
them: they import it), and a count named `active_inboxes` blocks deletion unless forced. What
the database cascade cannot do for them (the stored objects of the e-mails) they do in an
`on_domain_deleting` hook, in the deleting transaction.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, UniqueConstraint, delete, func, or_, select
from sqlalchemy.orm import Mapped, Session, mapped_column, relationship

from burnbox.dns import to_ascii_hostname
from burnbox.settings import Settings
from models.db import Base, Timestamps, UUIDKey
from models.errors import Conflict, NotFound, ValidationFailed
from models.events import record_event
from models.pagination import Page, paginate
from models.tenancy.access import Caller, audit
from models.tenancy.orgs import Org
from models.tenancy.policy import (
    ASSIGNMENT,
    DOMAIN,
    effective_settings,
    register_layer,
    validate_layer,
)
from models.tenancy.rbac import Grants
from models.tenancy.roster import flush_or_conflict
from models.tenancy.teams import (
    Team,
    TeamDependent,
    ensure_team_active,
    register_team_dependent,
    team_ids_with_permission,
)

# Verification status, derived from the flags by models.domains.verification.
PENDING = "pending"
PARTIALLY_VERIFIED = "partially_verified"
VERIFIED = "verified"
FAILED = "failed"
STATUSES = (PENDING, PARTIALLY_VERIFIED, VERIFIED, FAILED)

# What started a check.
MANUAL = "manual"
AUTO_CREATE = "auto_create"
BACKGROUND = "background"
TRIGGERS = (MANUAL, AUTO_CREATE, BACKGROUND)

# What a team may do with an assigned domain.
FULL = "full"
CREATE_INBOX = "create_inbox"
READ_ONLY = "read_only"
ACCESS_LEVELS = (FULL, CREATE_INBOX, READ_ONLY)

CHECK_REQUESTED = "domain.check_requested"
# The permission that lets a team member see (and so use) the team's domains.
VIEW_ASSIGNMENTS = "team.domains.view"
VERIFY_PREFIX = "burnbox-verify="
MAX_NAME = 253
MAX_DESCRIPTION = 500
MAX_BULK = 50

# Counts of what deleting a domain removes. Assignments are counted here; the inbox and e-mail
# modules register the others (a count nobody registered is 0). active_inboxes > 0 blocks an
# unforced delete.
IMPACT_KEYS = ("assignments", "inboxes", "active_inboxes", "emails")
ImpactCounter = Callable[[Session, uuid.UUID], int]
_impact_counters: dict[str, ImpactCounter] = {}
# Called as hook(session, domain, target_org_id) before a domain moves to another org, for the
# modules whose rows on the domain belong to the old org (its inboxes).
TransferHook = Callable[[Session, "Domain", uuid.UUID], None]
_transfer_hooks: list[TransferHook] = []
# Called as hook(session, domain) right before a domain is deleted (its rows cascade after).
DeletionHook = Callable[[Session, "Domain"], None]
_deletion_hooks: list[DeletionHook] = []


class Domain(UUIDKey, Timestamps, Base):
    """A mail domain of one org, with its current DNS verification state."""

    __tablename__ = "domains"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    domain_name: Mapped[str] = mapped_column(String(MAX_NAME), unique=True)
    description: Mapped[str] = mapped_column(String(MAX_DESCRIPTION), default="")
    status: Mapped[str] = mapped_column(String(32), default=PENDING)
    txt_verified: Mapped[bool] = mapped_column(default=False)
    mx_verified: Mapped[bool] = mapped_column(default=False)
    spf_verified: Mapped[bool] = mapped_column(default=False)
    verification_token: Mapped[str] = mapped_column(String(64))
    # The last time DNS gave a definite answer to a check (look-up errors do not count).
    dns_last_checked_at: Mapped[datetime | None]
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)

    __table_args__ = (Index("ix_domains_org_id_domain_name", "org_id", "domain_name"),)

    @property
    def verification_record(self) -> str:
        """The TXT record to publish on the domain itself."""
        return VERIFY_PREFIX + self.verification_token


class DomainAssignment(UUIDKey, Timestamps, Base):
    """A domain made available to one team of its org, at an access level."""

    __tablename__ = "domain_assignments"

    domain_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"),
                                                 index=True)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    access_level: Mapped[str] = mapped_column(String(16))
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)

    domain: Mapped[Domain] = relationship(lazy="joined", innerjoin=True)
    team: Mapped[Team] = relationship(lazy="joined", innerjoin=True)

    __table_args__ = (UniqueConstraint("team_id", "domain_id"),)

    @property
    def domain_name(self) -> str:
        """The assigned domain's name."""
        return self.domain.domain_name


@dataclass(frozen=True)
class BulkResult:
    """The outcome of one id of a bulk request: ok, not_found or failed (with the reason)."""

    id: uuid.UUID
    status: str
    error: str | None = None


def normalise_domain_name(name: str) -> str:
    """The stored form of a domain name; raise ValidationFailed when it is not one.

    A-labels (UTS 46 mapping), lower case, no final dot, at most 253 characters, at least two
    labels of letters, digits and inner hyphens (1-63 characters each), and a top-level label
    that is not all digits (so an IP address is not a domain).
    """
    def refuse(reason: str) -> ValidationFailed:
        return ValidationFailed(f"invalid domain name: {reason}",
                                details={"domain_name": [reason]})

    try:
        ascii_name = to_ascii_hostname(name)
    except ValueError as exc:
        raise refuse(str(exc)) from None
    labels = ascii_name.split(".")
    if len(ascii_name) > MAX_NAME:
        raise refuse(f"longer than {MAX_NAME} characters")
    if len(labels) < 2:
        raise refuse("needs at least two labels, e.g. mail.example.com or example.com")
    if labels[-1].isdigit():
        raise refuse("the top-level label cannot be numeric")
    return ascii_name


def _description(text: str | None) -> str:
    clean = (text or "").strip()
    if len(clean) > MAX_DESCRIPTION:
        raise ValidationFailed("invalid description", details={
            "description": [f"at most {MAX_DESCRIPTION} characters"]})
    return clean


def _snapshot(domain: Domain) -> dict[str, Any]:
    return {"domain_name": domain.domain_name, "description": domain.description,
            "settings": dict(domain.settings or {}), "org_id": str(domain.org_id)}


def register_domain(session: Session, settings: Settings, caller: Caller, org_id: uuid.UUID,
                    domain_name: str, description: str | None = None) -> Domain:
    """Register `domain_name` for the org and request its first (auto_create) check.

    Raise ValidationFailed for a malformed name or description, Conflict when the org is at its
    `max_domains` limit or when any org already has the name. The caller commits.
    """
    name = normalise_domain_name(domain_name)
    clean_description = _description(description)
    # Serialise registrations per org so two concurrent ones cannot both pass the quota check.
    session.scalars(select(Org.id).where(Org.id == org_id).with_for_update()).one()
    limit = effective_settings(session, settings, org_id).max_domains
    count = session.scalar(select(func.count()).where(Domain.org_id == org_id)) or 0
    if limit and count >= limit:
        raise Conflict(f"this org may register at most {limit} domains",
                       extra={"limit": limit})
    if session.scalar(select(Domain.id).where(Domain.domain_name == name)) is not None:
        raise Conflict(f"the domain {name} is already registered")
    domain = Domain(id=uuid.uuid4(), org_id=org_id, domain_name=name,
                    description=clean_description, status=PENDING, txt_verified=False,
                    mx_verified=False, spf_verified=False,
                    verification_token=secrets.token_hex(16), settings={})
    # A concurrent registration in another org may have taken the name since the check.
    flush_or_conflict(session, f"the domain {name} is already registered", domain)
    audit(session, caller, "domain.create", org_id=org_id, resource_type="domain",
          resource_id=domain.id, after=_snapshot(domain))
    request_check(session, domain, AUTO_CREATE)
    return domain


def request_check(session: Session, domain: Domain, trigger: str) -> None:
    """Ask the worker to check the domain's DNS records once this transaction commits."""
    record_event(session, CHECK_REQUESTED, {"domain_id": str(domain.id), "trigger": trigger},
                 org_id=domain.org_id)


def verify_domain(session: Session, caller: Caller, domain: Domain) -> None:
    """Request a manual check of the domain (it runs in the worker after commit)."""
    audit(session, caller, "domain.verify", org_id=domain.org_id, resource_type="domain",
          resource_id=domain.id)
    request_check(session, domain, MANUAL)


def get_domain(session: Session, org_id: uuid.UUID, domain_id: uuid.UUID) -> Domain:
    """The org's domain `domain_id`; raise NotFound when it is missing or another org's."""
    domain = session.get(Domain, domain_id)
    if domain is None or domain.org_id != org_id:
        raise NotFound("domain not found")
    return domain


def list_domains(session: Session, org_id: uuid.UUID, page: int, per_page: int, *,
                 q: str | None = None, status: str | None = None) -> Page[Domain]:
    """One page of the org's domains by name; `q` matches a part of the name or description
    (case-insensitive), `status` keeps one verification status."""
    query = select(Domain).where(Domain.org_id == org_id)
    if q and q.strip():
        pattern = "%" + _escape_like(q.strip().lower()) + "%"
        query = query.where(or_(Domain.domain_name.like(pattern, escape="\\"),
                                func.lower(Domain.description).like(pattern, escape="\\")))
    if status:
        query = query.where(Domain.status == status)
    return paginate(session, query.order_by(Domain.domain_name, Domain.id), page, per_page)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _merged_settings(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """Stored overrides with `changes` applied; a None value removes a key (inherit again)."""
    return {**current, **changes}


def update_domain(session: Session, settings: Settings, caller: Caller, domain: Domain, *,
                  description: str | None = None,
                  domain_settings: Mapping[str, Any] | None = None) -> Domain:
    """Change the description and/or settings overrides (merged; None removes a key). The name
    cannot change. Raise ValidationFailed for a bad value or a setting above the org's."""
    before = _snapshot(domain)
    if description is not None:
        domain.description = _description(description)
    if domain_settings is not None:
        above = effective_settings(session, settings, domain.org_id)
        domain.settings = validate_layer(
            DOMAIN, _merged_settings(domain.settings or {}, domain_settings), above)
    audit(session, caller, "domain.update", org_id=domain.org_id, resource_type="domain",
          resource_id=domain.id, before=before, after=_snapshot(domain))
    return domain


def count_domain_impact(name: str) -> Callable[[ImpactCounter], ImpactCounter]:
    """Register the counter of one IMPACT_KEYS entry: `(session, domain_id) -> int`."""
    if name not in IMPACT_KEYS or name == "assignments":
        raise ValueError(f"not a pluggable domain impact count: {name}")

    def register(counter: ImpactCounter) -> ImpactCounter:
        _impact_counters[name] = counter
        return counter

    return register


def on_domain_transfer(hook: TransferHook) -> TransferHook:
    """Call `hook(session, domain, target_org_id)` before every domain transfer, while the
    domain still belongs to its old org; it must drop or stop what would otherwise keep the old
    org's rows on a domain it no longer owns."""
    if hook not in _transfer_hooks:
        _transfer_hooks.append(hook)
    return hook


def on_domain_deleting(hook: DeletionHook) -> DeletionHook:
    """Call `hook(session, domain)` in the deleting transaction before every domain delete, for
    what the database cascade leaves behind (the inboxes' stored objects)."""
    if hook not in _deletion_hooks:
        _deletion_hooks.append(hook)
    return hook


def domain_impact(session: Session, domain: Domain) -> dict[str, int]:
    """What deleting the domain would remove, one count per IMPACT_KEYS entry."""
    counts = {name: 0 for name in IMPACT_KEYS}
    counts["assignments"] = session.scalar(
        select(func.count()).where(DomainAssignment.domain_id == domain.id)) or 0
    for name, counter in _impact_counters.items():
        counts[name] = counter(session, domain.id)
    return counts


def delete_domain(session: Session, caller: Caller, domain: Domain, *, force: bool = False
                  ) -> None:
    """Delete the domain with its assignments, history, inboxes and e-mails (the database
    cascades; the `on_domain_deleting` hooks run first: the e-mails' objects go after commit).

    Raise Conflict, with the impact counts in the body, when the domain still has active inboxes
    and `force` is false.
    """
    impact = domain_impact(session, domain)
    if impact["active_inboxes"] and not force:
        raise Conflict(f"the domain has {impact['active_inboxes']} active inboxes; "
                       "delete with force=true to remove them too", extra={"impact": impact})
    audit(session, caller, "domain.delete", org_id=domain.org_id, resource_type="domain",
          resource_id=domain.id, before={**_snapshot(domain), "impact": impact})
    for hook in list(_deletion_hooks):
        hook(session, domain)
    session.delete(domain)
    session.flush()


def transfer_domain(session: Session, caller: Caller, domain: Domain, target_org_id: uuid.UUID
                    ) -> Domain:
    """Move the domain to another org (system administrators only; the view checks that),
    dropping its team assignments after the `on_domain_transfer` hooks ran. Its verification
    state stays: DNS did not change.

    Raise ValidationFailed when the domain already belongs to the target, NotFound when the
    target org does not exist.
    """
    if target_org_id == domain.org_id:
        raise ValidationFailed("the domain already belongs to this org",
                               details={"target_org_id": ["must be another org"]})
    if session.get(Org, target_org_id) is None:
        raise NotFound("target org not found")
    before = _snapshot(domain)
    for hook in list(_transfer_hooks):
        hook(session, domain, target_org_id)
    dropped = session.execute(
        delete(DomainAssignment).where(DomainAssignment.domain_id == domain.id)).rowcount
    domain.org_id = target_org_id
    session.flush()
    after = {**_snapshot(domain), "assignments_removed": dropped}
    for org_id in (uuid.UUID(before["org_id"]), target_org_id):
        audit(session, caller, "domain.transfer", org_id=org_id, resource_type="domain",
              resource_id=domain.id, before=before, after=after)
    return domain


def _org_domains(session: Session, org_id: uuid.UUID, ids: Sequence[uuid.UUID]
                 ) -> tuple[list[uuid.UUID], dict[uuid.UUID, Domain]]:
    """The ids in first-seen order without repeats, and those of them that are the org's."""
    unique = list(dict.fromkeys(ids))
    if len(unique) > MAX_BULK:
        raise ValidationFailed(f"at most {MAX_BULK} ids per request",
                               details={"domain_ids": [f"at most {MAX_BULK} ids"]})
    found = session.scalars(select(Domain).where(Domain.org_id == org_id,
                                                 Domain.id.in_(unique)))
    return unique, {domain.id: domain for domain in found}


def bulk_verify(session: Session, caller: Caller, org_id: uuid.UUID,
                ids: Sequence[uuid.UUID]) -> list[BulkResult]:
    """Request a manual check of each of the org's domains among `ids`; ids of other orgs or of
    nothing are reported not_found and never touched."""
    unique, domains = _org_domains(session, org_id, ids)
    results = []
    for domain_id in unique:
        domain = domains.get(domain_id)
        if domain is None:
            results.append(BulkResult(domain_id, "not_found"))
            continue
        verify_domain(session, caller, domain)
        results.append(BulkResult(domain_id, "ok"))
    return results


def bulk_delete(session: Session, caller: Caller, org_id: uuid.UUID,
                ids: Sequence[uuid.UUID], *, force: bool = False) -> list[BulkResult]:
    """Delete each of the org's domains among `ids` as `delete_domain` would; one that cannot be
    deleted is reported failed with the reason and the others still go. Ids of other orgs or of
    nothing are reported not_found and never touched."""
    unique, domains = _org_domains(session, org_id, ids)
    results = []
    for domain_id in unique:
        domain = domains.get(domain_id)
        if domain is None:
            results.append(BulkResult(domain_id, "not_found"))
            continue
        try:
            with session.begin_nested():
                delete_domain(session, caller, domain, force=force)
        except Conflict as exc:
            results.append(BulkResult(domain_id, "failed", exc.message))
            continue
        results.append(BulkResult(domain_id, "ok"))
    return results


def all_domain_ids(session: Session) -> list[uuid.UUID]:
    """Every domain's id (the hourly re-check walks them all)."""
    return list(session.scalars(select(Domain.id).order_by(Domain.id)))


# -- assignments ------------------------------------------------------------------------------

def _assignment_snapshot(assignment: DomainAssignment) -> dict[str, Any]:
    return {"domain_id": str(assignment.domain_id), "team_id": str(assignment.team_id),
            "access_level": assignment.access_level,
            "settings": dict(assignment.settings or {})}


def _check_access_level(access_level: str) -> str:
    if access_level not in ACCESS_LEVELS:
        raise ValidationFailed("invalid access level", details={
            "access_level": [f"must be one of {', '.join(ACCESS_LEVELS)}"]})
    return access_level


def assign_domain(session: Session, settings: Settings, caller: Caller, team: Team,
                  domain_id: uuid.UUID, access_level: str,
                  assignment_settings: Mapping[str, Any] | None = None) -> DomainAssignment:
    """Make the org's domain `domain_id` available to `team`.

    Raise ValidationFailed for an unknown access level, a domain that is not the team's org's
    (it is not named, so another org's domain is indistinguishable from none) or settings above
    what the levels above allow; Conflict when the team is archived or already has the domain.
    """
    level = _check_access_level(access_level)
    ensure_team_active(team)
    domain = session.get(Domain, domain_id)
    if domain is None or domain.org_id != team.org_id:
        raise ValidationFailed("domain not found in this org",
                               details={"domain_id": ["no such domain in this org"]})
    existing = select(DomainAssignment.id).where(DomainAssignment.team_id == team.id,
                                                 DomainAssignment.domain_id == domain_id)
    if session.scalar(existing) is not None:
        raise Conflict("the domain is already assigned to this team")
    above = effective_settings(session, settings, team.org_id, team_id=team.id,
                               domain_id=domain_id)
    clean = validate_layer(ASSIGNMENT, dict(assignment_settings or {}), above)
    assignment = DomainAssignment(id=uuid.uuid4(), domain_id=domain_id, team_id=team.id,
                                  access_level=level, settings=clean)
    flush_or_conflict(session, "the domain is already assigned to this team", assignment)
    audit(session, caller, "domain_assignment.create", org_id=team.org_id,
          resource_type="domain_assignment", resource_id=assignment.id,
          after=_assignment_snapshot(assignment))
    return assignment


def get_assignment(session: Session, team: Team, domain_id: uuid.UUID) -> DomainAssignment:
    """The team's assignment of domain `domain_id`; raise NotFound."""
    assignment = session.scalars(select(DomainAssignment).where(
        DomainAssignment.team_id == team.id, DomainAssignment.domain_id == domain_id)).first()
    if assignment is None:
        raise NotFound("domain assignment not found")
    return assignment


def list_assignments(session: Session, team: Team, page: int, per_page: int
                     ) -> Page[DomainAssignment]:
    """One page of the team's assignments, by domain name."""
    query = (select(DomainAssignment).join(DomainAssignment.domain)
             .where(DomainAssignment.team_id == team.id)
             .order_by(Domain.domain_name, DomainAssignment.id))
    return paginate(session, query, page, per_page)


def update_assignment(session: Session, settings: Settings, caller: Caller,
                      assignment: DomainAssignment, *, access_level: str | None = None,
                      assignment_settings: Mapping[str, Any] | None = None
                      ) -> DomainAssignment:
    """Change the access level and/or the settings overrides (merged; None removes a key)."""
    before = _assignment_snapshot(assignment)
    if access_level is not None:
        assignment.access_level = _check_access_level(access_level)
    if assignment_settings is not None:
        above = effective_settings(session, settings, assignment.team.org_id,
                                   team_id=assignment.team_id, domain_id=assignment.domain_id)
        assignment.settings = validate_layer(
            ASSIGNMENT, _merged_settings(assignment.settings or {}, assignment_settings), above)
    audit(session, caller, "domain_assignment.update", org_id=assignment.team.org_id,
          resource_type="domain_assignment", resource_id=assignment.id, before=before,
          after=_assignment_snapshot(assignment))
    return assignment


def unassign_domain(session: Session, caller: Caller, assignment: DomainAssignment) -> None:
    """Remove the assignment (the domain stays registered to the org)."""
    audit(session, caller, "domain_assignment.delete", org_id=assignment.team.org_id,
          resource_type="domain_assignment", resource_id=assignment.id,
          before=_assignment_snapshot(assignment))
    session.delete(assignment)
    session.flush()


def usable_assignments(session: Session, grants: Grants, user_id: uuid.UUID, page: int,
                       per_page: int) -> Page[DomainAssignment]:
    """One page of every assignment the user can use across their orgs: those of the active
    teams in which they hold `team.domains.view`, by domain name then team."""
    team_ids = team_ids_with_permission(session, grants, user_id, VIEW_ASSIGNMENTS)
    query = (select(DomainAssignment).join(DomainAssignment.domain).join(DomainAssignment.team)
             .where(DomainAssignment.team_id.in_(team_ids), Team.is_archived.is_(False))
             .order_by(Domain.domain_name, DomainAssignment.team_id, DomainAssignment.id))
    return paginate(session, query, page, per_page)


def _count_team_assignments(session: Session, team_id: uuid.UUID) -> int:
    return session.scalar(select(func.count()).where(DomainAssignment.team_id == team_id)) or 0


def _drop_team_assignments(session: Session, team: Team, _target_org_id: uuid.UUID) -> None:
    # The team's assignments name its old org's domains, which do not move with it.
    session.execute(delete(DomainAssignment).where(DomainAssignment.team_id == team.id))


def _domain_layer(session: Session, domain_id: uuid.UUID
                  ) -> tuple[uuid.UUID, Mapping[str, Any]] | None:
    row = session.execute(select(Domain.org_id, Domain.settings)
                          .where(Domain.id == domain_id)).one_or_none()
    return None if row is None else (row[0], row[1] or {})


def _assignment_layer(session: Session, assignment_id: uuid.UUID
                      ) -> tuple[uuid.UUID, Mapping[str, Any]] | None:
    row = session.execute(select(Domain.org_id, DomainAssignment.settings)
                          .join(Domain, Domain.id == DomainAssignment.domain_id)
                          .where(DomainAssignment.id == assignment_id)).one_or_none()
    return None if row is None else (row[0], row[1] or {})


register_layer(DOMAIN, _domain_layer)
register_layer(ASSIGNMENT, _assignment_layer)
register_team_dependent(TeamDependent("domain_assignments", _count_team_assignments,
                                      _drop_team_assignments))
