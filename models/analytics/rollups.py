"""Daily rollups of the hourly counters: what the analytics readers sum for closed UTC days,
so an org's year is a few hundred rows whatever its mail volume.

Three tables, each holding one row per org (or team), UTC day and key:

- `analytics_days`: e-mails, bytes and inboxes created, per org or team and UTC day;
- `analytics_domain_days`: e-mails per receiving domain, per org or team and UTC day;
- `analytics_sender_days`: e-mails per sender domain, per org or team and UTC day.

A row whose `team_id` is `ORG_WIDE` (the nil UUID, never a team's id) holds the whole org; the
others hold one team. Analytics questions are asked in the caller's time zone, whose days do not
start at UTC midnight, so the first two tables also keep their figures per UTC hour of the day
(`*_by_hour`, 24 numbers, hour 0 first): a reader places each hour in its local day and hour
exactly as it would place the hourly counter (see `models.analytics.window`). The sender table
answers only "the busiest senders of a span", so it keeps day totals; a reader takes the partial
UTC days at the edges of a local window from the counters.

`analytics_rollup_marks` says, per org, the last UTC day the rollups hold (`rolled_through`):
every day up to it is in the rollups, the days after it are read from the counters. Rolling a
day up recomputes it from the counters and replaces its rows (never adds to them), so a day
rolled twice, by two runs of the actor or by the actor and a backfill, holds the same rows.

A UTC day is closed, and may be rolled up, once `GRACE` has passed after its end: a counter is
written with the e-mail in the transaction that stores it, timed when it arrived, so a late
commit of a message that arrived at 23:59:59 still lands in the counters before the day is
rolled up.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    String,
    TypeDecorator,
    delete,
    func,
    insert,
    select,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Mapped, Session, mapped_column

from models.db import Base, conflict_insert
from models.mail.counters import MAX_SENDER_DOMAIN, InboxCounter, MailCounter
from models.tenancy.orgs import Org

ORG_WIDE = uuid.UUID(int=0)
HOURS = 24
GRACE = timedelta(hours=1)
# A day's 24 hourly figures on PostgreSQL (readers slice it in SQL as this type).
HOUR_ARRAY = postgresql.ARRAY(BigInteger)


# A day's 24 hourly figures: an integer array on PostgreSQL, whose driver decodes it several
# times faster than JSON (a year of per-domain rows is thousands of them per request), JSON on
# SQLite, which has no arrays.
class _HourArray(TypeDecorator[list[int]]):
    """int8[] read as psycopg returns it (a list of ints): SQLAlchemy's own array processing
    would visit every element again in Python (a third of a year's domain series). A decorator,
    not a subclass of the dialect's ARRAY: the psycopg dialect swaps any ARRAY subclass for its
    own ARRAY type, and with it the override of `result_processor`."""

    impl = HOUR_ARRAY
    cache_ok = True

    def result_processor(self, dialect: Any, coltype: Any) -> None:
        return None


HourList = JSON().with_variant(_HourArray(), "postgresql")

# Days rolled up per transaction: a first run over a year of history commits as it goes, and no
# transaction holds more than a month of one org's rows.
DAYS_PER_BATCH = 31


class DayRollup(Base):
    """E-mails, bytes and inboxes created by one org (or team) on one UTC day."""

    __tablename__ = "analytics_days"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              primary_key=True)
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    day: Mapped[date] = mapped_column(primary_key=True)
    emails: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)
    inboxes: Mapped[int] = mapped_column(BigInteger)
    emails_by_hour: Mapped[list[int]] = mapped_column(HourList)
    bytes_by_hour: Mapped[list[int]] = mapped_column(HourList)
    inboxes_by_hour: Mapped[list[int]] = mapped_column(HourList)


class DomainDayRollup(Base):
    """E-mails one org (or team) received on one receiving domain on one UTC day."""

    __tablename__ = "analytics_domain_days"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              primary_key=True)
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    day: Mapped[date] = mapped_column(primary_key=True)
    domain_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    emails: Mapped[int] = mapped_column(BigInteger)
    emails_by_hour: Mapped[list[int]] = mapped_column(HourList)


class SenderDayRollup(Base):
    """E-mails one org (or team) received from one sender domain on one UTC day."""

    __tablename__ = "analytics_sender_days"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              primary_key=True)
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    day: Mapped[date] = mapped_column(primary_key=True)
    sender_domain: Mapped[str] = mapped_column(String(MAX_SENDER_DOMAIN), primary_key=True)
    emails: Mapped[int] = mapped_column(BigInteger)


class RollupMark(Base):
    """The last UTC day whose rollups an org holds (every day up to it is rolled up)."""

    __tablename__ = "analytics_rollup_marks"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              primary_key=True)
    rolled_through: Mapped[date | None]


def rolled_through(session: Session, org_id: uuid.UUID) -> date | None:
    """The last UTC day the org's rollups hold; None when none is rolled up yet."""
    return session.scalar(select(RollupMark.rolled_through).where(RollupMark.org_id == org_id))


def last_closed_day(now: datetime) -> date:
    """The newest UTC day that may be rolled up at `now` (its end plus `GRACE` has passed)."""
    return (now - GRACE).date() - timedelta(days=1)


def _first_counted_day(session: Session, org_id: uuid.UUID) -> date | None:
    """The first UTC day with a counter of the org (None when it has none)."""
    days = [session.scalar(select(func.min(entity.day)).where(entity.org_id == org_id))
            for entity in (MailCounter, InboxCounter)]
    found = [day for day in days if day is not None]
    return min(found) if found else None


def _lock_mark(session: Session, org_id: uuid.UUID) -> RollupMark:
    """The org's mark row, made if missing and locked (FOR UPDATE on PostgreSQL; SQLite has one
    writer at a time anyway) so two rollups of one org run one after the other instead of
    replacing each other's rows half-way."""
    insert_ = conflict_insert(session.get_bind().dialect.name)
    session.execute(insert_(RollupMark).values(org_id=org_id, rolled_through=None)
                    .on_conflict_do_nothing(index_elements=["org_id"]))
    return session.scalars(select(RollupMark).where(RollupMark.org_id == org_id)
                           .with_for_update().execution_options(populate_existing=True)).one()


def _hours() -> list[int]:
    return [0] * HOURS


def _rows_by_hour(session: Session, org_id: uuid.UUID, first: date, last: date,
                  entity: Any, key: Any, measures: tuple[Any, ...]
                  ) -> dict[tuple[Any, ...], list[list[int]]]:
    """Sum `measures` of `entity` per (team or ORG_WIDE, day, `key`...) and UTC hour over the
    days `first`..`last`: {(team, day, *key): [per-hour list per measure]}."""
    sums: dict[tuple[Any, ...], list[list[int]]] = defaultdict(
        lambda: [_hours() for _ in measures])
    query = (select(entity.team_id, entity.day, entity.hour, *key,
                    *(func.sum(m) for m in measures))
             .where(entity.org_id == org_id, entity.day >= first, entity.day <= last)
             .group_by(entity.team_id, entity.day, entity.hour, *key))
    for row in session.execute(query):
        team, day, hour = row[0], row[1], row[2]
        rest = tuple(row[3:3 + len(key)])
        values = row[3 + len(key):]
        for whose in (team, ORG_WIDE):
            buckets = sums[(whose, day, *rest)]
            for bucket, value in zip(buckets, values, strict=True):
                bucket[hour] += int(value)
    return sums


def _day_rows(session: Session, org_id: uuid.UUID, first: date, last: date
              ) -> Iterator[dict[str, Any]]:
    mail = _rows_by_hour(session, org_id, first, last, MailCounter, (),
                         (MailCounter.emails, MailCounter.bytes))
    created = _rows_by_hour(session, org_id, first, last, InboxCounter, (),
                            (InboxCounter.inboxes,))
    for team, day in set(mail) | set(created):
        emails, size = mail.get((team, day)) or [_hours(), _hours()]
        [inboxes] = created.get((team, day)) or [_hours()]
        yield {"org_id": org_id, "team_id": team, "day": day, "emails": sum(emails),
               "bytes": sum(size), "inboxes": sum(inboxes), "emails_by_hour": emails,
               "bytes_by_hour": size, "inboxes_by_hour": inboxes}


def _domain_rows(session: Session, org_id: uuid.UUID, first: date, last: date
                 ) -> Iterator[dict[str, Any]]:
    mail = _rows_by_hour(session, org_id, first, last, MailCounter, (MailCounter.domain_id,),
                         (MailCounter.emails,))
    for (team, day, domain_id), [emails] in mail.items():
        yield {"org_id": org_id, "team_id": team, "day": day, "domain_id": domain_id,
               "emails": sum(emails), "emails_by_hour": emails}


def _sender_rows(session: Session, org_id: uuid.UUID, first: date, last: date
                 ) -> Iterator[dict[str, Any]]:
    sums: dict[tuple[uuid.UUID, date, str], int] = defaultdict(int)
    query = (select(MailCounter.team_id, MailCounter.day, MailCounter.sender_domain,
                    func.sum(MailCounter.emails))
             .where(MailCounter.org_id == org_id, MailCounter.day >= first,
                    MailCounter.day <= last)
             .group_by(MailCounter.team_id, MailCounter.day, MailCounter.sender_domain))
    for team, day, sender, emails in session.execute(query):
        sums[(team, day, sender)] += int(emails)
        sums[(ORG_WIDE, day, sender)] += int(emails)
    for (team, day, sender), emails in sums.items():
        yield {"org_id": org_id, "team_id": team, "day": day, "sender_domain": sender,
               "emails": emails}


_ORDER = {DayRollup: ("team_id", "day"), DomainDayRollup: ("team_id", "day", "domain_id"),
          SenderDayRollup: ("team_id", "day", "sender_domain")}
_BUILDERS = ((DayRollup, _day_rows), (DomainDayRollup, _domain_rows),
             (SenderDayRollup, _sender_rows))


def _replace_days(session: Session, org_id: uuid.UUID, first: date, last: date) -> None:
    """Recompute the org's rollups of the UTC days `first`..`last` from the counters and put
    them in place of the rows those days held."""
    for table, build in _BUILDERS:
        session.execute(delete(table).where(table.org_id == org_id, table.day >= first,
                                            table.day <= last))
        # In key order (team, day, ...): one team's rows of a month share heap pages, so a
        # team's year reads a few dozen pages instead of one page per row.
        rows = sorted(build(session, org_id, first, last),
                      key=lambda row: tuple(str(row[name]) for name in _ORDER[table]))
        if rows:
            session.execute(insert(table), rows)


def roll_up_batches(session: Session, now: datetime, org_id: uuid.UUID | None = None,
                    since: date | None = None) -> Iterator[tuple[uuid.UUID, int]]:
    """Roll up the closed UTC days of one org (`org_id`) or of every org, in batches of at most
    `DAYS_PER_BATCH` days; yield (org id, days recomputed) after each batch, and (org id, 0)
    for an org with nothing to roll up. The caller owns the transaction and commits it at each
    yield, before asking for the next batch: a batch holds the org's mark locked, and a long
    history must not be one transaction. An org that disappears meanwhile is skipped (its
    rollups went with it).

    Per org: without `since`, the days after the org's mark (from its first counted day when
    it has no mark yet) through the last closed day. With `since`, every closed day from
    `since` on is recomputed too (a rebuild); the days before it are kept, unless the org has
    no rollups yet, in which case it starts at its first counted day so that the mark's
    promise (every day up to it is rolled up) holds."""
    ids = [org_id] if org_id is not None else list(
        session.scalars(select(Org.id).order_by(Org.id)))
    closed = last_closed_day(now)
    for each in ids:
        if session.get(Org, each) is None:
            continue
        mark = _lock_mark(session, each)
        start = (_first_counted_day(session, each) if mark.rolled_through is None
                 else mark.rolled_through + timedelta(days=1))
        if start is not None and since is not None and mark.rolled_through is not None:
            start = min(start, since)
        if start is None or start > closed:
            yield each, 0
            continue
        while start <= closed:
            last = min(start + timedelta(days=DAYS_PER_BATCH - 1), closed)
            _replace_days(session, each, start, last)
            if mark.rolled_through is None or mark.rolled_through < last:
                mark.rolled_through = last
            yield each, (last - start).days + 1
            start = last + timedelta(days=1)
            if start <= closed:
                mark = _lock_mark(session, each)
