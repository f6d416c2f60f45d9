"""The analytics figures of an org or of one of its teams: totals, e-mails per day, insights and
per-domain daily series.

Every figure of mail received and inboxes created comes from the append-only counters
(`MailCounter`, `InboxCounter`), so neither the cleanup of expired inboxes nor a deletion lowers
it. A team's query is the org's with `team_id` added, over the same rows, so the teams' figures
add up to the org's (counters stay with the org they were counted in, also after a team moves
to another org). The few "right now" figures (inboxes stored and active, members, domains,
storage in use) are live counts and say so in their names.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.admin.stats import storage_used_bytes
from models.analytics.window import Window
from models.domains.domains import Domain
from models.mail.counters import InboxCounter, MailCounter
from models.mail.inboxes import Inbox
from models.tenancy.orgs import OrgMember
from models.tenancy.teams import Team, TeamMember

TOP = 10
HOURS = 24
Counted = type[MailCounter] | type[InboxCounter]


@dataclass(frozen=True)
class Scope:
    """Whose counters: an org's, or one team's within it."""

    org_id: uuid.UUID
    team_id: uuid.UUID | None = None

    def of(self, entity: Counted) -> list[Any]:
        """The criteria selecting this scope's rows of a counter table."""
        criteria = [entity.org_id == self.org_id]
        if self.team_id is not None:
            criteria.append(entity.team_id == self.team_id)
        return criteria


def _within(entity: Counted, window: Window) -> Any:
    """The rows of `entity` whose UTC hour lies in the window (the day range first, so the
    (org_id, day) and (team_id, day) indexes narrow the scan)."""
    start, end = window.bounds
    return and_(entity.day >= start.date(), entity.day <= end.date(),
                or_(entity.day > start.date(), entity.hour >= start.hour),
                or_(entity.day < end.date(), entity.hour < end.hour))


def _hourly(session: Session, entity: Counted, measures: tuple[Any, ...], scope: Scope,
            window: Window, *group: Any) -> Iterator[tuple[datetime, tuple[Any, ...]]]:
    """The sums of `measures` per UTC hour (and `group`) of the window, each with the local time
    of its hour."""
    query = (select(entity.day, entity.hour, *group, *(func.sum(m) for m in measures))
             .where(*scope.of(entity), _within(entity, window))
             .group_by(entity.day, entity.hour, *group))
    for row in session.execute(query):
        yield window.local(row[0], row[1]), tuple(row[2:])


def _zero_filled(window: Window, counts: Counter[date]) -> list[dict[str, Any]]:
    return [{"date": day, "count": counts[day]} for day in window.dates]


def emails_per_day(session: Session, scope: Scope, window: Window) -> list[dict[str, Any]]:
    """One point per local day of the window, oldest first, zero-filled: e-mails received
    (`count` and `emails_received`, the two names clients use), inboxes created, and the bytes
    of the e-mails received."""
    emails: Counter[date] = Counter()
    size: Counter[date] = Counter()
    for moment, (count, total) in _hourly(session, MailCounter,
                                          (MailCounter.emails, MailCounter.bytes), scope, window):
        emails[moment.date()] += count
        size[moment.date()] += total
    created = _inboxes_created(session, scope, window)
    return [{"date": day, "count": emails[day], "emails_received": emails[day],
             "inboxes_created": created[day], "storage_bytes": size[day]}
            for day in window.dates]


def _inboxes_created(session: Session, scope: Scope, window: Window) -> Counter[date]:
    created: Counter[date] = Counter()
    for moment, (count,) in _hourly(session, InboxCounter, (InboxCounter.inboxes,), scope,
                                    window):
        created[moment.date()] += count
    return created


def _top(session: Session, column: Any, scope: Scope, window: Window | None,
         *exclude: Any) -> list[tuple[Any, int]]:
    """The `TOP` values of a mail counter `column` with the most e-mails (all time when
    `window` is None), busiest first."""
    total = func.sum(MailCounter.emails)
    criteria = [*scope.of(MailCounter), *exclude]
    if window is not None:
        criteria.append(_within(MailCounter, window))
    query = (select(column, total).where(*criteria).group_by(column)
             .order_by(total.desc(), column).limit(TOP))
    return [(value, int(count)) for value, count in session.execute(query)]


def _sender_domains(session: Session, scope: Scope, window: Window | None
                    ) -> list[dict[str, Any]]:
    """The busiest sender domains (mail without a From domain left out)."""
    return [{"domain": domain, "count": count}
            for domain, count in _top(session, MailCounter.sender_domain, scope, window,
                                      MailCounter.sender_domain != "")]


def _domain_names(session: Session, ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The names of the domains still stored (a removed domain's counters stay, nameless)."""
    rows = session.execute(select(Domain.id, Domain.domain_name).where(Domain.id.in_(ids)))
    return {domain_id: name for domain_id, name in rows}


def insights(session: Session, scope: Scope, window: Window) -> dict[str, Any]:
    """Inboxes created per local day, e-mails per local hour of the day (all 24), the busiest
    receiving domains and the busiest sender domains of the window."""
    peak = [0] * HOURS
    for moment, (count,) in _hourly(session, MailCounter, (MailCounter.emails,), scope, window):
        peak[moment.hour] += count
    domains = _top(session, MailCounter.domain_id, scope, window)
    names = _domain_names(session, [domain_id for domain_id, _ in domains])
    return {
        "inboxes_per_day": _zero_filled(window, _inboxes_created(session, scope, window)),
        "peak_hours": [{"hour": hour, "count": count} for hour, count in enumerate(peak)],
        "domain_breakdown": [{"domain_id": domain_id, "domain": names.get(domain_id),
                              "count": count} for domain_id, count in domains],
        "top_senders": _sender_domains(session, scope, window),
    }


def domain_series(session: Session, scope: Scope, window: Window) -> list[dict[str, Any]]:
    """For each receiving domain with mail in the window (busiest first), its e-mails per local
    day, zero-filled."""
    per_domain: dict[uuid.UUID, Counter[date]] = {}
    for moment, (domain_id, count) in _hourly(session, MailCounter, (MailCounter.emails,), scope,
                                              window, MailCounter.domain_id):
        per_domain.setdefault(domain_id, Counter())[moment.date()] += count
    names = _domain_names(session, list(per_domain))
    ranked = sorted(per_domain.items(), key=lambda item: (-item[1].total(), str(item[0])))
    return [{"domain_id": domain_id, "domain": names.get(domain_id), "total": counts.total(),
             "series": _zero_filled(window, counts)} for domain_id, counts in ranked]


def _counted(session: Session, scope: Scope) -> dict[str, int]:
    """The all-time totals of the counters."""
    emails, size = session.execute(
        select(func.coalesce(func.sum(MailCounter.emails), 0),
               func.coalesce(func.sum(MailCounter.bytes), 0)).where(*scope.of(MailCounter))).one()
    created = session.scalar(select(func.coalesce(func.sum(InboxCounter.inboxes), 0))
                             .where(*scope.of(InboxCounter)))
    return {"total_emails": int(emails), "total_emails_received": int(emails),
            "total_inboxes_created": int(created or 0), "total_storage_bytes": int(size)}


def _count(session: Session, entity: Any, *criteria: Any) -> int:
    return session.scalar(select(func.count()).select_from(entity).where(*criteria)) or 0


def _live_inboxes(session: Session, *criteria: Any) -> dict[str, int]:
    """Inboxes stored now (expired ones until the cleanup takes them) and those still active."""
    return {"total_inboxes": _count(session, Inbox, *criteria),
            "active_inboxes": _count(session, Inbox, *criteria, Inbox.expires_at > utcnow())}


def org_summary(session: Session, org_id: uuid.UUID) -> dict[str, Any]:
    """The org's totals: counted ones (all time) and live ones (now)."""
    scope = Scope(org_id)
    return {
        **_counted(session, scope),
        **_live_inboxes(session, Inbox.org_id == org_id),
        "total_domains": _count(session, Domain, Domain.org_id == org_id),
        "total_teams": _count(session, Team, Team.org_id == org_id),
        "total_members": _count(session, OrgMember, OrgMember.org_id == org_id),
        "storage_used_bytes": storage_used_bytes(session, org_id),
        "top_sender_domains": _sender_domains(session, scope, None),
    }


def team_summary(session: Session, org_id: uuid.UUID, team_id: uuid.UUID) -> dict[str, Any]:
    """The team's totals in the org: counted ones (all time) and live ones (now)."""
    scope = Scope(org_id, team_id)
    return {
        **_counted(session, scope),
        **_live_inboxes(session, Inbox.org_id == org_id, Inbox.team_id == team_id),
        "total_members": _count(session, TeamMember, TeamMember.team_id == team_id),
        "top_sender_domains": _sender_domains(session, scope, None),
    }
