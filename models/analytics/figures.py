"""The analytics figures of an org or of one of its teams: totals, e-mails per day, insights and
per-domain daily series.

Every figure of mail received and inboxes created comes from the append-only counters
(`MailCounter`, `InboxCounter`), so neither the cleanup of expired inboxes nor a deletion lowers
it: the whole UTC days an org has rolled up from the daily rollups made of them
(`models.analytics.rollups`), the rest (partial days at a local window's edges, the days not
rolled up yet) from the counters themselves (`split`), with the same answers either way. A
team's figures come from the same counters as the org's (the org's rollup rows are the sums of
its teams' rows), so the teams' figures add up to the org's (counters stay with the org they
were counted in, also after a team moves to another org). The few "right now" figures (inboxes
stored and active, members, domains, storage in use) are live counts and say so in their names.
"""

from __future__ import annotations

import functools
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, true, tuple_, type_coerce
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from burnbox.timeutil import utcnow
from models.admin.stats import storage_used_bytes
from models.analytics.rollups import (
    HOUR_ARRAY,
    ORG_WIDE,
    DayRollup,
    DomainDayRollup,
    SenderDayRollup,
    rolled_through,
)
from models.analytics.window import Window
from models.domains.domains import Domain
from models.mail.counters import InboxCounter, MailCounter
from models.mail.inboxes import Inbox
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.teams import Team, TeamMember

TOP = 10
HOURS = 24
Counted = type[MailCounter] | type[InboxCounter]
Rolled = type[DayRollup] | type[DomainDayRollup] | type[SenderDayRollup]


@dataclass(frozen=True)
class Scope:
    """Whose figures: an org's, or one team's within it."""

    org_id: uuid.UUID
    team_id: uuid.UUID | None = None

    def of(self, entity: Counted) -> list[Any]:
        """The criteria selecting this scope's rows of a counter table."""
        criteria = [entity.org_id == self.org_id]
        if self.team_id is not None:
            criteria.append(entity.team_id == self.team_id)
        return criteria

    def rolled(self, table: Rolled) -> list[Any]:
        """The criteria selecting this scope's rows of a rollup table (the org's own rows for
        the org: summing its teams' rows would give the same figures, slower)."""
        return [table.org_id == self.org_id, table.team_id == (self.team_id or ORG_WIDE)]


Hours = tuple[datetime | None, datetime | None]


@dataclass(frozen=True)
class Split:
    """A span of UTC hours cut in two: the whole UTC days `days` (first, last; None for no
    bound) that the rollups answer, or None, and the ranges of UTC hours `[start, end)` (None
    for no bound) the counters answer: the partial days at the edges of a local window, and
    the days not rolled up yet."""

    days: tuple[date | None, date] | None
    hours: tuple[Hours, ...]


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), UTC)


def split(session: Session, scope: Scope, start: datetime | None, end: datetime | None
          ) -> Split:
    """Cut the UTC hours `[start, end)` (whole hours; None for no bound) between the org's
    rollups and the counters."""
    mark = rolled_through(session, scope.org_id)
    first = None if start is None else (
        start.date() if start == _midnight(start.date()) else start.date() + timedelta(days=1))
    last = mark if end is None or mark is None else min(mark, end.date() - timedelta(days=1))
    if last is None or (first is not None and first > last):
        return Split(None, ((start, end),))
    hours: list[Hours] = []
    if first is not None and start is not None and start < _midnight(first):
        hours.append((start, _midnight(first)))
    after = _midnight(last + timedelta(days=1))
    if end is None or after < end:
        hours.append((after, end))
    return Split((first, last), tuple(hours))


def _between(entity: Counted, hours: Hours) -> Any:
    """The criterion of the counter rows whose UTC hour lies in `hours` (the day range first,
    so the (org_id, day) and (team_id, day) indexes narrow the scan)."""
    start, end = hours
    criteria = []
    if start is not None:
        criteria += [entity.day >= start.date(),
                     or_(entity.day > start.date(), entity.hour >= start.hour)]
    if end is not None:
        criteria += [entity.day <= end.date(),
                     or_(entity.day < end.date(), entity.hour < end.hour)]
    return and_(true(), *criteria)


def _counted_part(entity: Counted, cut: Split) -> Any | None:
    """The criterion of the counter rows the counters answer for (all the ranges of `cut` in
    one query: a round trip less than one per range); None when the rollups answer it all."""
    if not cut.hours:
        return None
    return or_(*(_between(entity, hours) for hours in cut.hours))


def _on_days(table: Rolled, days: tuple[date | None, date]) -> list[Any]:
    first, last = days
    return [table.day <= last] if first is None else [table.day >= first, table.day <= last]


# The hourly measures: the counter column, the rollup column holding its 24 UTC hours of a
# day, and the rollup column holding their total.
_HOURLY = {"emails": (MailCounter.emails, DayRollup.emails_by_hour, DayRollup.emails),
           "bytes": (MailCounter.bytes, DayRollup.bytes_by_hour, DayRollup.bytes),
           "inboxes": (InboxCounter.inboxes, DayRollup.inboxes_by_hour, DayRollup.inboxes)}
_DOMAIN_HOURLY = {"emails": (MailCounter.emails, DomainDayRollup.emails_by_hour,
                             DomainDayRollup.emails)}
Tallies = dict[str, defaultdict[Any, Counter[Any]]]


Days = tuple[tuple[Any, ...], list[date], list[list[Any]]]


def _rolled_days(session: Session, table: Rolled, group: tuple[Any, ...],
                 columns: list[Any], criteria: list[Any]) -> Iterator[Days]:
    """The rollup rows matching `criteria`, per value of `group` (one set of all of them when
    `group` is empty): (the group's values, its days, and for each of `columns` its values on
    those days, in the same order). On PostgreSQL each set comes back as one row of arrays: a
    year of ten domains is 3 650 rows, which cost twice as much CPU to turn into result rows as
    their numbers do to parse."""
    if session.get_bind().dialect.name != "postgresql":
        sets: dict[tuple[Any, ...], tuple[list[date], list[list[Any]]]] = {}
        for row in session.execute(select(*group, table.day, *columns).where(*criteria)):
            days, lists = sets.setdefault(tuple(row[:len(group)]), ([], [[] for _ in columns]))
            days.append(row[len(group)])
            for values, value in zip(lists, row[len(group) + 1:], strict=True):
                values.append(value)
        for keys, (days, lists) in sets.items():
            yield keys, days, lists
        return

    def gathered(column: Any) -> Any:
        # NullType: the driver's lists (of dates, of lists of ints) are used as they come. No
        # ORDER BY: every aggregate of a group takes its rows in the same order, so the n-th
        # day and the n-th values are one row's, and sorting each array cost a third of it.
        return func.array_agg(column, type_=NullType())

    query = (select(*group, gathered(table.day), *(gathered(column) for column in columns))
             .where(*criteria).group_by(*group))
    for row in session.execute(query):
        days = row[len(group)]
        if days is not None:  # None: no rows at all (an aggregate without GROUP BY)
            yield tuple(row[:len(group)]), days, list(row[len(group) + 1:])


def _tally_hours(tally: Counter[Any], window: Window, days: list[date],
                 hours_of_days: list[list[int]]) -> None:
    """Add each UTC day's 24 hourly figures to `tally`, per local hour of the day. The days of
    one UTC offset share their local hours: a year is two or three sets of days, each summed
    hour by hour and placed once, not 365 days placed hour by hour."""
    offsets: defaultdict[tuple[Any, ...], list[list[int]]] = defaultdict(list)
    for day, hours in zip(days, hours_of_days, strict=True):
        offsets[window.runs(day, "hour")].append(hours)
    for runs, same in offsets.items():
        totals = [sum(hour) for hour in zip(*same, strict=True)]
        for slot, first, end in runs:
            tally[slot] += sum(totals[first:end])


def _tally_dates(tally: Counter[Any], window: Window, days: list[date], start: int,
                 totals: list[int], edges: list[list[int]] | None = None) -> None:
    """Add each UTC day's total to `tally`, per local date: the hours outside the day's main
    run (`Window.date_runs`) to their dates, the rest of the total to the main run's. `edges`
    holds each day's hours from `start` on (`Window.edges`): a day is at most three runs, and
    a few hours of it are all a reader needs besides the total. None when no day has hours
    outside its main run (UTC)."""
    date_runs = window.date_runs
    for day, total, hours in zip(days, totals, edges or [()] * len(days), strict=True):
        main, others = date_runs(day)
        for slot, first, end in others:
            count = sum(hours[first - start:end - start])
            if count:
                tally[slot] += count
                total -= count
        if total:
            tally[main] += total


def _day_columns(rolled: Any, total: Any, by: str, start: int, end: int) -> list[Any]:
    """What a tally of one measure reads of each rollup row: per local hour its 24 hours; per
    local date its total and its hours `[start, end)` (`Window.edges`: a year of ten domains
    is 4 ms to read instead of 10), the total alone when there are none (UTC: PostgreSQL
    cannot gather empty arrays), all 24 when that is all of them."""
    if by == "hour":
        return [rolled]
    if end - start == HOURS:
        return [total, rolled]
    if end == start:
        return [total]
    return [total, type_coerce(rolled, HOUR_ARRAY)[start + 1:end]]


def _tallies(session: Session, scope: Scope, window: Window, cut: Split,
             measures: dict[str, str], per_domain: bool = False,
             mail: list[tuple[Any, ...]] | None = None) -> Tallies:
    """The window's `measures` ("emails", "bytes", "inboxes"; e-mails only `per_domain`), each
    summed per local date (`"date"`) or local hour of the day (`"hour"`) as `measures` says:
    {measure: {domain_id: counts}} when `per_domain`, else {measure: {None: counts}}. The
    rollups answer the rolled-up whole UTC days of `cut` (the window's `split`; one query for
    every measure), the counters the rest (one query per counter table, none for the mail
    counters when the caller has their (day, hour, e-mails) sums already in `mail`)."""
    hourly = _DOMAIN_HOURLY if per_domain else _HOURLY
    sources = {measure: hourly[measure] for measure in measures}
    tallies: Tallies = {measure: defaultdict(Counter) for measure in measures}
    if cut.days is not None:
        table = DomainDayRollup if per_domain else DayRollup
        group = (DomainDayRollup.domain_id,) if per_domain else ()
        first, last = cut.days
        start, end = window.edges(first or window.first, last)
        if session.get_bind().dialect.name != "postgresql":
            start, end = 0, HOURS  # SQLite keeps the hours in JSON: sliced after reading
        reads = {measure: _day_columns(*sources[measure][1:], by, start, end)
                 for measure, by in measures.items()}
        sets = _rolled_days(session, table, group,
                            [column for read in reads.values() for column in read],
                            [*scope.rolled(table), *_on_days(table, cut.days)])
        for keys, days, lists in sets:
            key = keys[0] if per_domain else None
            values = iter(lists)
            for measure, by in measures.items():
                read = [next(values) for _ in reads[measure]]
                if by == "hour":
                    _tally_hours(tallies[measure][key], window, days, *read)
                else:
                    _tally_dates(tallies[measure][key], window, days, start, *read)
    local_hours = functools.cache(window.local_hours)  # a counter row per hour: once per day
    for counter in (MailCounter, InboxCounter):
        columns = [(measure, column) for measure, (column, _, _) in sources.items()
                   if column.class_ is counter]
        part = _counted_part(counter, cut)
        if not columns or part is None:
            continue
        group = (counter.domain_id,) if per_domain else ()
        query = (select(counter.day, counter.hour, *group,
                        *(func.sum(column) for _, column in columns))
                 .where(*scope.of(counter), part)
                 .group_by(counter.day, counter.hour, *group))
        for row in (mail if counter is MailCounter and mail is not None
                    else session.execute(query)):
            local_date, local_hour = local_hours(row[0])[row[1]]
            key = row[2] if per_domain else None
            for (measure, _), count in zip(columns, row[len(row) - len(columns):],
                                           strict=True):
                slot = local_date if measures[measure] == "date" else local_hour
                tallies[measure][key][slot] += int(count)
    return tallies


def _zero_filled(window: Window, counts: Counter[date]) -> list[dict[str, Any]]:
    return [{"date": day, "count": counts[day]} for day in window.dates]


def emails_per_day(session: Session, scope: Scope, window: Window) -> list[dict[str, Any]]:
    """One point per local day of the window, oldest first, zero-filled: e-mails received
    (`count` and `emails_received`, the two names clients use), inboxes created, and the bytes
    of the e-mails received."""
    cut = split(session, scope, *window.bounds)
    tallies = _tallies(session, scope, window, cut,
                       {"emails": "date", "bytes": "date", "inboxes": "date"})
    emails, size, created = (tallies[measure][None] for measure in ("emails", "bytes",
                                                                     "inboxes"))
    return [{"date": day, "count": emails[day], "emails_received": emails[day],
             "inboxes_created": created[day], "storage_bytes": size[day]}
            for day in window.dates]


def _mail_sums(session: Session, scope: Scope, cut: Split,
               groupings: tuple[tuple[Any, ...], ...]) -> dict[tuple[Any, ...],
                                                             list[tuple[Any, ...]]]:
    """The e-mails in the mail counters of the hours `cut` leaves to them, summed per each of
    `groupings` (tuples of MailCounter columns, no column in two of them): {grouping: [(*its
    values, e-mails)]}, empty when the rollups answer it all. PostgreSQL sums them in one scan
    (GROUPING SETS), SQLite in one query each."""
    sums: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {grouping: [] for grouping in groupings}
    part = _counted_part(MailCounter, cut)
    if part is None:
        return sums
    criteria = [*scope.of(MailCounter), part]
    emails = func.sum(MailCounter.emails)
    if session.get_bind().dialect.name != "postgresql":
        for grouping in groupings:
            query = select(*grouping, emails).where(*criteria).group_by(*grouping)
            sums[grouping] = [tuple(row) for row in session.execute(query)]
        return sums
    columns = [column for grouping in groupings for column in grouping]
    query = (select(*columns, emails).where(*criteria)
             .group_by(func.grouping_sets(*(tuple_(*grouping) for grouping in groupings))))
    for row in session.execute(query):
        # The counter columns are never NULL: a row's grouping is the one whose columns are set.
        offset = 0
        for grouping in groupings:
            values = row[offset:offset + len(grouping)]
            if values[0] is not None:
                sums[grouping].append((*values, row[-1]))
                break
            offset += len(grouping)
    return sums


def _top(session: Session, scope: Scope, cut: Split, column: Any, rolled: Any,
         leave_out: Any = None, mail: list[tuple[Any, ...]] | None = None
         ) -> list[tuple[Any, int]]:
    """The `TOP` values of a mail counter `column` (`rolled` is the same in a rollup table)
    with the most e-mails in the span `cut` splits, busiest first, ties in the order of the
    values; `leave_out` is a value not counted (None: none). `mail` holds the counters'
    (value, e-mails) sums (`_mail_sums`) when the caller has them already."""
    totals: Counter[Any] = Counter()
    if cut.days is not None:
        table = rolled.class_
        criteria = [*scope.rolled(table), *_on_days(table, cut.days)]
        if leave_out is not None:
            criteria.append(rolled != leave_out)
        query = select(rolled, func.sum(table.emails)).where(*criteria).group_by(rolled)
        totals.update({value: int(count) for value, count in session.execute(query)})
    if mail is None:
        mail = _mail_sums(session, scope, cut, ((column,),))[(column,)]
    for value, count in mail:
        if value != leave_out:
            totals[value] += int(count)
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:TOP]


def _sender_domains(session: Session, scope: Scope, cut: Split,
                    mail: list[tuple[Any, ...]] | None = None) -> list[dict[str, Any]]:
    """The busiest sender domains of the span (mail without a From domain left out)."""
    return [{"domain": domain, "count": count}
            for domain, count in _top(session, scope, cut, MailCounter.sender_domain,
                                      SenderDayRollup.sender_domain, "", mail)]


def _domain_names(session: Session, ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The names of the domains still stored (a removed domain's counters stay, nameless)."""
    rows = session.execute(select(Domain.id, Domain.domain_name).where(Domain.id.in_(ids)))
    return {domain_id: name for domain_id, name in rows}


def insights(session: Session, scope: Scope, window: Window) -> dict[str, Any]:
    """Inboxes created per local day, e-mails per local hour of the day (all 24), the busiest
    receiving domains and the busiest sender domains of the window."""
    cut = split(session, scope, *window.bounds)
    hours, domain, sender = ((MailCounter.day, MailCounter.hour), (MailCounter.domain_id,),
                             (MailCounter.sender_domain,))
    mail = _mail_sums(session, scope, cut, (hours, domain, sender))
    tallies = _tallies(session, scope, window, cut, {"emails": "hour", "inboxes": "date"},
                       mail=mail[hours])
    peak, created = tallies["emails"][None], tallies["inboxes"][None]
    domains = _top(session, scope, cut, MailCounter.domain_id, DomainDayRollup.domain_id,
                   mail=mail[domain])
    names = _domain_names(session, [domain_id for domain_id, _ in domains])
    return {
        "inboxes_per_day": _zero_filled(window, created),
        "peak_hours": [{"hour": hour, "count": peak[hour]} for hour in range(HOURS)],
        "domain_breakdown": [{"domain_id": domain_id, "domain": names.get(domain_id),
                              "count": count} for domain_id, count in domains],
        "top_senders": _sender_domains(session, scope, cut, mail[sender]),
    }


def domain_series(session: Session, scope: Scope, window: Window) -> list[dict[str, Any]]:
    """For each receiving domain with mail in the window (busiest first), its e-mails per local
    day, zero-filled."""
    cut = split(session, scope, *window.bounds)
    per_domain = _tallies(session, scope, window, cut, {"emails": "date"},
                          per_domain=True)["emails"]
    names = _domain_names(session, list(per_domain))
    ranked = sorted(per_domain.items(), key=lambda item: (-item[1].total(), str(item[0])))
    return [{"domain_id": domain_id, "domain": names.get(domain_id), "total": counts.total(),
             "series": _zero_filled(window, counts)} for domain_id, counts in ranked]


def _counted(session: Session, scope: Scope, cut: Split) -> dict[str, int]:
    """The all-time totals (`cut` splits all time): the rolled-up days' sums plus the
    counters of the days after."""
    emails = size = created = 0
    if cut.days is not None:
        sums = session.execute(
            select(func.sum(DayRollup.emails), func.sum(DayRollup.bytes),
                   func.sum(DayRollup.inboxes))
            .where(*scope.rolled(DayRollup), *_on_days(DayRollup, cut.days))).one()
        emails, size, created = (int(value or 0) for value in sums)
    if cut.hours:
        mail = session.execute(
            select(func.sum(MailCounter.emails), func.sum(MailCounter.bytes))
            .where(*scope.of(MailCounter), _counted_part(MailCounter, cut))).one()
        emails += int(mail[0] or 0)
        size += int(mail[1] or 0)
        created += int(session.scalar(
            select(func.sum(InboxCounter.inboxes))
            .where(*scope.of(InboxCounter), _counted_part(InboxCounter, cut))) or 0)
    return {"total_emails": emails, "total_emails_received": emails,
            "total_inboxes_created": created, "total_storage_bytes": size}


def org_zone(session: Session, org_id: uuid.UUID) -> str | None:
    """The org's stored time zone (its `timezone` setting, validated when set), None when it
    has none. The org row is usually in the session already: the permission check loaded it."""
    org = session.get(Org, org_id)
    return (org.settings or {}).get("timezone") if org is not None else None


def _count(session: Session, entity: Any, *criteria: Any) -> int:
    return session.scalar(select(func.count()).select_from(entity).where(*criteria)) or 0


def _live_inboxes(session: Session, *criteria: Any) -> dict[str, int]:
    """Inboxes stored now (expired ones until the cleanup takes them) and those still active."""
    return {"total_inboxes": _count(session, Inbox, *criteria),
            "active_inboxes": _count(session, Inbox, *criteria, Inbox.expires_at > utcnow())}


def org_summary(session: Session, org_id: uuid.UUID) -> dict[str, Any]:
    """The org's totals: counted ones (all time) and live ones (now)."""
    scope = Scope(org_id)
    all_time = split(session, scope, None, None)
    return {
        **_counted(session, scope, all_time),
        **_live_inboxes(session, Inbox.org_id == org_id),
        "total_domains": _count(session, Domain, Domain.org_id == org_id),
        "total_teams": _count(session, Team, Team.org_id == org_id),
        "total_members": _count(session, OrgMember, OrgMember.org_id == org_id),
        "storage_used_bytes": storage_used_bytes(session, org_id),
        "top_sender_domains": _sender_domains(session, scope, all_time),
    }


def team_summary(session: Session, org_id: uuid.UUID, team_id: uuid.UUID) -> dict[str, Any]:
    """The team's totals in the org: counted ones (all time) and live ones (now)."""
    scope = Scope(org_id, team_id)
    all_time = split(session, scope, None, None)
    return {
        **_counted(session, scope, all_time),
        **_live_inboxes(session, Inbox.org_id == org_id, Inbox.team_id == team_id),
        "total_members": _count(session, TeamMember, TeamMember.team_id == team_id),
        "top_sender_domains": _sender_domains(session, scope, all_time),
    }
