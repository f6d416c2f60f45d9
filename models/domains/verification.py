"""Domain verification: what a check looks up, how the answers become the domain's state, and the
history of every check (`models.domains.domains.DomainCheck`).

The rules:

- TXT: a TXT record on the domain itself that reads exactly `burnbox-verify=<token>` ->
  `txt_verified`.
- MX: the domain has at least one MX record and *every* MX record names the configured
  `smtp.hostname` (one setting, read by every process: were it set only where the SMTP server
  runs, the verifying process would check against nothing). An MX elsewhere, even as a
  backup, would send part of the mail somewhere Burnbox never sees it.
- SPF is informational: any TXT record that is an SPF policy (`v=spf1`) -> `spf_verified`; it
  does not affect the status.
- status: verified (TXT and MX), partially_verified (one of them), failed (DNS has answered at
  least once and neither holds), pending (DNS never answered a check yet).
- A look-up that fails (timeout, SERVFAIL) proves nothing, so the flags it decides keep their
  previous values (TXT decides txt_verified and spf_verified, MX decides mx_verified), or a
  resolver's bad minute would downgrade verified domains; the error is written in the history
  row's details. `dns_last_checked_at` moves only when at least one look-up answered.

A check looks DNS up with no database transaction open (`observe`), then applies the answers to
the row under a lock (`record_check`), so slow DNS never holds a database lock. The worker runs
the checks on registration, bulk requests and the periodic re-check (`run_check`); a request
for one domain (`POST .../verify`) runs its check in the request (`check_domain_now`), through
the same `run_check`, so its answer carries the result. A domain whose
name the operator trusts (`domains.trusted`) is never looked up: its check is an `operator` one
(`models.domains.domains.record_trust`), so no DNS answer, error or outage can downgrade it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from burnbox.dns import LookupFailed, MxRecord, Resolver, make_resolver, to_ascii_hostname
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import end_read_only_transaction
from models.domains.domains import (
    FAILED,
    MANUAL,
    PARTIALLY_VERIFIED,
    PENDING,
    VERIFIED,
    Domain,
    DomainCheck,
    is_trusted,
    record_trust,
)
from models.errors import NotFound
from models.pagination import Page, paginate
from models.tenancy.access import Caller, audit

# Bounds on what a history row keeps of the records found (a zone can publish many TXT records).
MAX_RECORDS_KEPT = 20
MAX_RECORD_CHARS = 512


@dataclass(frozen=True)
class Observation:
    """What DNS said about a domain: the records, or None for a look-up that failed (`errors`
    then says why, keyed by record type)."""

    txt: list[str] | None
    mx: list[MxRecord] | None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckTarget:
    """What a check needs to know about a domain before it looks DNS up."""

    domain_id: uuid.UUID
    domain_name: str
    verification_record: str


def mx_target(settings: Settings) -> str:
    """The host every MX record must name: `smtp.hostname` as DNS writes it (A-labels, lower
    case, no final dot). Shown to users as the domain's `mx_target` and used by the check."""
    try:
        return to_ascii_hostname(settings.smtp.hostname)
    except ValueError:  # not a valid host name: no MX can match it, and users see it as set
        return settings.smtp.hostname.strip().rstrip(".").lower()


def is_spf(record: str) -> bool:
    """True for an SPF policy record (`v=spf1` alone or followed by a space, any case)."""
    text = record.strip().lower()
    return text == "v=spf1" or text.startswith("v=spf1 ")


def status_of(txt_verified: bool, mx_verified: bool, answered_before: bool) -> str:
    """The status the flags give (see the module docstring)."""
    if txt_verified and mx_verified:
        return VERIFIED
    if txt_verified or mx_verified:
        return PARTIALLY_VERIFIED
    return FAILED if answered_before else PENDING


def observe(resolver: Resolver, domain_name: str) -> Observation:
    """Look up the domain's TXT and MX records; a failed look-up is noted, never raised."""
    errors: dict[str, str] = {}
    txt: list[str] | None = None
    mx: list[MxRecord] | None = None
    try:
        txt = resolver.txt(domain_name)
    except LookupFailed as exc:
        errors["txt"] = str(exc)
    try:
        mx = resolver.mx(domain_name)
    except LookupFailed as exc:
        errors["mx"] = str(exc)
    return Observation(txt=txt, mx=mx, errors=errors)


def check_target(session: Session, domain_id: uuid.UUID) -> CheckTarget | None:
    """The name and expected record of the domain, or None when it no longer exists."""
    domain = session.get(Domain, domain_id)
    if domain is None:
        return None
    return CheckTarget(domain.id, domain.domain_name, domain.verification_record)


def _kept(records: list[str]) -> list[str]:
    return [record[:MAX_RECORD_CHARS] for record in records[:MAX_RECORDS_KEPT]]


def record_check(session: Session, domain_id: uuid.UUID, observation: Observation,
                 target_host: str, trigger: str) -> DomainCheck | None:
    """Apply a check's observation to the domain (locked) and add its history row; None when
    the domain was deleted meanwhile. The caller commits."""
    domain = session.scalars(select(Domain).where(Domain.id == domain_id)
                             .with_for_update()).first()
    if domain is None:
        return None
    now = utcnow()
    details: dict[str, Any] = {
        "expected": {"txt": domain.verification_record, "mx": target_host},
        "found": {"txt": None, "mx": None},
    }
    kept: list[str] = []
    if observation.txt is None:
        kept += ["txt_verified", "spf_verified"]
    else:
        domain.txt_verified = any(record.strip() == domain.verification_record
                                  for record in observation.txt)
        domain.spf_verified = any(is_spf(record) for record in observation.txt)
        details["found"]["txt"] = _kept(observation.txt)
    if observation.mx is None:
        kept.append("mx_verified")
    else:
        domain.mx_verified = bool(observation.mx) and all(
            record.exchange == target_host for record in observation.mx)
        details["found"]["mx"] = [{"preference": record.preference, "exchange": record.exchange}
                                  for record in observation.mx[:MAX_RECORDS_KEPT]]
    if observation.txt is not None or observation.mx is not None:
        domain.dns_last_checked_at = now
    if observation.errors:
        details["errors"] = dict(observation.errors)
        details["kept_previous"] = kept
    domain.status = status_of(domain.txt_verified, domain.mx_verified,
                              domain.dns_last_checked_at is not None)
    check = DomainCheck(id=uuid.uuid4(), domain_id=domain.id, trigger=trigger,
                        status=domain.status, txt_verified=domain.txt_verified,
                        mx_verified=domain.mx_verified, spf_verified=domain.spf_verified,
                        details=details, checked_at=now)
    session.add(check)
    return check


def run_check(session: Session, settings: Settings, domain_id: uuid.UUID, trigger: str
              ) -> DomainCheck | None:
    """One check of the domain: an `operator` check when its name is trusted, else DNS looked
    up with no transaction open and the answers recorded. None when the domain is gone. The
    session must hold no writes (its read transaction is ended before the look-ups); the
    caller commits."""
    target = check_target(session, domain_id)
    # On SQLite every transaction holds the database's write lock, and DNS can take
    # dns.timeout per look-up.
    end_read_only_transaction(session)
    if target is None:
        return None
    if is_trusted(settings, target.domain_name):
        return record_trust(session, target.domain_id, trigger)
    observation = observe(make_resolver(settings), target.domain_name)
    return record_check(session, target.domain_id, observation, mx_target(settings), trigger)


def check_domain_now(session: Session, settings: Settings, caller: Caller,
                     domain_id: uuid.UUID) -> DomainCheck:
    """A `manual` check of the domain run at once, as the worker runs one (`run_check`: an
    `operator` check for a trusted name), recorded in its history and audited; each look-up is
    bounded by `dns.timeout`. Raise NotFound when the domain was deleted meanwhile. The
    session must hold no writes yet, since its read transaction ends before DNS is asked; the
    caller commits."""
    check = run_check(session, settings, domain_id, MANUAL)
    if check is None:
        raise NotFound("domain not found")
    domain = session.get(Domain, domain_id)
    assert domain is not None  # locked by the check just recorded
    audit(session, caller, "domain.verify", org_id=domain.org_id, resource_type="domain",
          resource_id=domain.id)
    return check


def list_checks(session: Session, domain: Domain, page: int, per_page: int) -> Page[DomainCheck]:
    """One page of the domain's checks, newest first."""
    query = (select(DomainCheck).where(DomainCheck.domain_id == domain.id)
             .order_by(DomainCheck.checked_at.desc(), DomainCheck.id.desc()))
    return paginate(session, query, page, per_page)
