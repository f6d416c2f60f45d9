"""Domains: registered per org, verified through DNS (their assignments to teams are
`models.domains.assignments`).

A domain name is globally unique (two orgs cannot both receive a name's mail), stored as
lower-case IDNA A-labels without the final dot, exactly as DNS and SMTP carry it. Its verification
state (`status`, `txt_verified`, `mx_verified`, `spf_verified`, `dns_last_checked_at`) is written
by the DNS checks of `models.domains.verification`, where their rules live, and by `record_trust`
here, for the names the operator trusts.

Checks run in the worker: actions here only *request* one by recording a `domain.check_requested`
event, which the tasks layer turns into a `check_domain` message after commit (outbox).

Operator-trusted domains: the names in the `domains.trusted` setting count as verified without
DNS (a laptop, a CI job or an air-gapped network has no DNS zone to publish in). Only the operator
decides this: the setting lists the names, and only a system administrator (or the first-run
setup and bootstrap, which act as one) may register a listed name in an org, so no org can claim
a name by registering it first. A trusted domain is verified at once on registration, in the
same transaction, and every later check of it records an `operator` check instead of looking DNS
up, so DNS (or its absence) never downgrades it. Removing a name from the setting ends the trust:
the next check asks DNS again.

Deleting or transferring a domain reaches what other contexts keep on it (assignments, inboxes,
e-mails): those actions are `models.lifecycle.domains`, which runs each context's step and then
this module's part (`remove_domain`, `move_domain`).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, func, or_, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.dns import to_ascii_hostname
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import Base, Timestamps, UUIDKey
from models.errors import Conflict, Forbidden, NotFound, ValidationFailed
from models.events import record_event
from models.pagination import Page, paginate
from models.search import contains
from models.tenancy.access import Caller, audit
from models.tenancy.orgs import Org
from models.tenancy.roster import flush_or_conflict
from models.tenancy.settings_cascade import DOMAIN, effective_settings, stored_layer, validate_layer

# Verification status, derived from the flags by models.domains.verification.
PENDING = "pending"
PARTIALLY_VERIFIED = "partially_verified"
VERIFIED = "verified"
FAILED = "failed"
STATUSES = (PENDING, PARTIALLY_VERIFIED, VERIFIED, FAILED)

# What started a check; `operator` marks a check of a trusted domain (no DNS look-up), whatever
# asked for it (`details.requested_by` says what did).
MANUAL = "manual"
AUTO_CREATE = "auto_create"
BACKGROUND = "background"
OPERATOR = "operator"
TRIGGERS = (MANUAL, AUTO_CREATE, BACKGROUND, OPERATOR)

CHECK_REQUESTED = "domain.check_requested"
VERIFY_PREFIX = "burnbox-verify="
MAX_NAME = 253
MAX_DESCRIPTION = 500
MAX_BULK = 50


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


class DomainCheck(UUIDKey, Base):
    """One verification check of a domain and the state it left the domain in."""

    __tablename__ = "domain_checks"

    domain_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"))
    trigger: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(32))
    txt_verified: Mapped[bool]
    mx_verified: Mapped[bool]
    spf_verified: Mapped[bool]
    details: Mapped[dict[str, Any]]
    checked_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (Index("ix_domain_checks_domain_id_checked_at", "domain_id", "checked_at"),)


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


def trusted_names(settings: Settings) -> frozenset[str]:
    """The names of `domains.trusted` in their stored form (entries that are not valid domain
    names trust nothing; the settings loader refuses them anyway)."""
    names = set()
    for entry in settings.domains.trusted:
        try:
            names.add(normalise_domain_name(entry))
        except ValidationFailed:
            continue
    return frozenset(names)


def is_trusted(settings: Settings, domain_name: str) -> bool:
    """True when the operator trusts the stored name `domain_name` (see the module docstring)."""
    return domain_name in trusted_names(settings)


def record_trust(session: Session, domain_id: uuid.UUID, requested_by: str
                 ) -> DomainCheck | None:
    """Mark the trusted domain verified (locked) and add its `operator` history row, with no DNS
    look-up; None when the domain was deleted meanwhile. The DNS flags and
    `dns_last_checked_at` keep what DNS last said. The caller commits."""
    domain = session.scalars(select(Domain).where(Domain.id == domain_id)
                             .with_for_update()).first()
    if domain is None:
        return None
    domain.status = VERIFIED
    check = DomainCheck(
        id=uuid.uuid4(), domain_id=domain.id, trigger=OPERATOR, status=VERIFIED,
        txt_verified=domain.txt_verified, mx_verified=domain.mx_verified,
        spf_verified=domain.spf_verified, checked_at=utcnow(),
        details={"trusted": True, "requested_by": requested_by,
                 "note": "the operator trusts this name (domains.trusted); DNS not consulted"})
    session.add(check)
    return check


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
    """Register `domain_name` for the org and request its first (auto_create) check; a name the
    operator trusts is verified at once instead (`record_trust`).

    Raise ValidationFailed for a malformed name or description, Forbidden when the name is
    trusted and the caller is not a system administrator, Conflict when the org is at its
    `max_domains` limit or when any org already has the name. The caller commits.
    """
    name = normalise_domain_name(domain_name)
    clean_description = _description(description)
    trusted = is_trusted(settings, name)
    if trusted and not caller.is_system_admin:
        # Otherwise the first org to register a trusted name would own a verified domain no
        # DNS record ever vouched for.
        raise Forbidden(f"the domain {name} is reserved by the operator: only a system "
                        "administrator may register it")
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
    if trusted:
        record_trust(session, domain.id, AUTO_CREATE)
    else:
        request_check(session, domain, AUTO_CREATE)
    return domain


def request_check(session: Session, domain: Domain, trigger: str) -> None:
    """Ask the worker to check the domain's DNS records once this transaction commits."""
    record_event(session, CHECK_REQUESTED, {"domain_id": str(domain.id), "trigger": trigger},
                 org_id=domain.org_id)


def verify_domain(session: Session, caller: Caller, domain: Domain) -> None:
    """Request a manual check of the domain that runs in the worker after commit (bulk verify;
    one domain's `POST .../verify` checks at once: `verification.check_domain_now`)."""
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
        needle = q.strip().lower()
        query = query.where(or_(contains(Domain.domain_name, needle),
                                contains(func.lower(Domain.description), needle)))
    if status:
        query = query.where(Domain.status == status)
    return paginate(session, query.order_by(Domain.domain_name, Domain.id), page, per_page)


def merged_settings(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
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
            DOMAIN, merged_settings(domain.settings or {}, domain_settings), above)
    audit(session, caller, "domain.update", org_id=domain.org_id, resource_type="domain",
          resource_id=domain.id, before=before, after=_snapshot(domain))
    return domain


def domain_layer(session: Session, org_id: uuid.UUID, domain_id: uuid.UUID) -> dict[str, Any]:
    """The domain level of the settings cascade: the typed overrides of the org's domain
    `domain_id`. Raise NotFound when it is missing or another org's."""
    row = session.execute(select(Domain.org_id, Domain.settings)
                          .where(Domain.id == domain_id)).one_or_none()
    if row is None or row[0] != org_id:
        raise NotFound(f"{DOMAIN} not found")
    return stored_layer(row[1] or {})


def remove_domain(session: Session, caller: Caller, domain: Domain, impact: dict[str, int]
                  ) -> None:
    """The domains context's part of a deletion: audit it with `impact` and delete the row (the
    database cascades). The whole action, with the other contexts' steps, is
    `models.lifecycle.domains.delete_domain`."""
    audit(session, caller, "domain.delete", org_id=domain.org_id, resource_type="domain",
          resource_id=domain.id, before={**_snapshot(domain), "impact": impact})
    session.delete(domain)
    session.flush()


def check_transfer(session: Session, domain: Domain, target_org_id: uuid.UUID) -> None:
    """Raise ValidationFailed when the domain already belongs to the target, NotFound when the
    target org does not exist."""
    if target_org_id == domain.org_id:
        raise ValidationFailed("the domain already belongs to this org",
                               details={"target_org_id": ["must be another org"]})
    if session.get(Org, target_org_id) is None:
        raise NotFound("target org not found")


def move_domain(session: Session, caller: Caller, domain: Domain, target_org_id: uuid.UUID,
                assignments_removed: int) -> Domain:
    """The domains context's part of a transfer (checked by `check_transfer`): give the domain
    to the target org, audited in both orgs. Its verification state stays: DNS did not change.
    The whole action is `models.lifecycle.domains.transfer_domain`."""
    before = _snapshot(domain)
    domain.org_id = target_org_id
    session.flush()
    after = {**_snapshot(domain), "assignments_removed": assignments_removed}
    for org_id in (uuid.UUID(before["org_id"]), target_org_id):
        audit(session, caller, "domain.transfer", org_id=org_id, resource_type="domain",
              resource_id=domain.id, before=before, after=after)
    return domain


def each_org_domain(session: Session, org_id: uuid.UUID, ids: Sequence[uuid.UUID],
                    act: Callable[[Domain], object]) -> list[BulkResult]:
    """Run `act` on each of the org's domains among `ids` (first-seen order, without repeats),
    each in a savepoint: one whose `act` raises Conflict is reported failed with the reason
    and its writes undone, and the others still run. Ids of other orgs or of nothing are
    reported not_found and never touched. ValidationFailed for more than MAX_BULK ids."""
    unique = list(dict.fromkeys(ids))
    if len(unique) > MAX_BULK:
        raise ValidationFailed(f"at most {MAX_BULK} ids per request",
                               details={"domain_ids": [f"at most {MAX_BULK} ids"]})
    found = {domain.id: domain for domain in session.scalars(
        select(Domain).where(Domain.org_id == org_id, Domain.id.in_(unique)))}
    results = []
    for domain_id in unique:
        domain = found.get(domain_id)
        if domain is None:
            results.append(BulkResult(domain_id, "not_found"))
            continue
        try:
            with session.begin_nested():
                act(domain)
        except Conflict as exc:
            results.append(BulkResult(domain_id, "failed", exc.message))
            continue
        results.append(BulkResult(domain_id, "ok"))
    return results


def bulk_verify(session: Session, caller: Caller, org_id: uuid.UUID,
                ids: Sequence[uuid.UUID]) -> list[BulkResult]:
    """Request a manual check of each of the org's domains among `ids` (see
    `each_org_domain`)."""
    return each_org_domain(session, org_id, ids,
                           lambda domain: verify_domain(session, caller, domain))


def all_domain_ids(session: Session) -> list[uuid.UUID]:
    """Every domain's id (the hourly re-check walks them all)."""
    return list(session.scalars(select(Domain.id).order_by(Domain.id)))
