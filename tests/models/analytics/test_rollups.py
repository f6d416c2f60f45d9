"""The analytics rollups: every figure is the same with and without them (whole or partial
rollups, in zones whose days start off UTC midnight, half-hour zones included), rolling a day
up twice or rebuilding it changes no row, the org's own rows equal the sum of its teams', and
only closed days are rolled up."""

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import psycopg as postgresql_psycopg

from burnbox.timeutil import utcnow
from models.analytics import figures
from models.analytics.rollups import (
    GRACE,
    ORG_WIDE,
    DayRollup,
    DomainDayRollup,
    RollupMark,
    SenderDayRollup,
    last_closed_day,
    rolled_through,
)
from models.analytics.window import Window, zone
from models.mail.counters import Received, count_created, count_received
from tasks.analytics import roll_up_committing as roll_up

ZONES = ("UTC", "America/New_York", "Asia/Kolkata", "Pacific/Auckland")
DAYS = (1, 2, 7, 45, 365)


@pytest.fixture
def history(runtime, mail_world):
    """40 days of mail and inboxes of two teams on two domains from three sender domains (one
    of them the empty "no From domain"), at random hours, up to now."""
    org = mail_world.ids["org"]
    teams = (mail_world.ids["team"], uuid.uuid4())
    domains = (mail_world.ids["domain"], uuid.uuid4())
    rng = random.Random(21)
    now = utcnow()
    with runtime.db.transaction() as session:
        for _ in range(300):
            at = now - timedelta(minutes=rng.randrange(40 * 24 * 60))
            team, domain = rng.choice(teams), rng.choice(domains)
            count_received(session, [Received(
                org_id=org, team_id=team, domain_id=domain,
                sender_domain=rng.choice(("a.example", "b.example", "")), received_at=at,
                size_bytes=rng.randrange(100, 5000))])
            if rng.random() < 0.3:
                count_created(session, org, team, domain, at)
    return figures.Scope(org), [figures.Scope(org, team) for team in teams]


def _answers(session, scopes):
    """Every figure of every scope, for each zone and window length."""
    now = utcnow()
    answers = {}
    for scope in scopes:
        key = scope.team_id or "org"
        counted = (figures.org_summary(session, scope.org_id) if scope.team_id is None
                   else figures.team_summary(session, scope.org_id, scope.team_id))
        answers[(key, "totals")] = {name: counted[name] for name in (
            "total_emails", "total_inboxes_created", "total_storage_bytes",
            "top_sender_domains")}
        for name in ZONES:
            for days in DAYS:
                window = Window.ending(now, days, zone(name))
                answers[(key, name, days)] = (
                    figures.emails_per_day(session, scope, window),
                    figures.insights(session, scope, window),
                    figures.domain_series(session, scope, window))
    return answers


def _rows(session):
    return {table.__tablename__: sorted(
        tuple(getattr(row, column.key) for column in table.__table__.columns)
        for row in session.scalars(select(table)))
        for table in (DayRollup, DomainDayRollup, SenderDayRollup)}


def test_every_figure_is_the_same_with_and_without_rollups(runtime, history):
    org, teams = history
    scopes = [org, *teams]
    with runtime.db.session() as session:
        counters_only = _answers(session, scopes)
        assert rolled_through(session, org.org_id) is None
        # Part of the history rolled up (as after the job ran ten days ago), then all of it.
        roll_up(session, utcnow() - timedelta(days=10))
        assert rolled_through(session, org.org_id) == last_closed_day(
            utcnow() - timedelta(days=10))
        assert _answers(session, scopes) == counters_only
        roll_up(session, utcnow())
        assert rolled_through(session, org.org_id) == last_closed_day(utcnow())
        assert session.scalar(select(DayRollup.day).where(DayRollup.org_id == org.org_id)
                              .order_by(DayRollup.day).limit(1)) is not None
        assert _answers(session, scopes) == counters_only


def test_rolling_a_day_up_again_or_rebuilding_it_changes_no_row(runtime, history):
    org, _ = history
    with runtime.db.session() as session:
        roll_up(session, utcnow())
        rows = _rows(session)
        assert rows["analytics_days"]
        assert roll_up(session, utcnow())[org.org_id] == 0  # nothing new is closed
        since = utcnow().date() - timedelta(days=60)
        assert roll_up(session, utcnow(), org.org_id, since=since) == {
            org.org_id: (last_closed_day(utcnow()) - since).days + 1}
        assert _rows(session) == rows
        # A wrong row (as if a counter had been written late) is replaced by the rebuild.
        session.execute(delete(SenderDayRollup).where(SenderDayRollup.org_id == org.org_id))
        session.commit()
        roll_up(session, utcnow(), org.org_id, since=since)
        assert _rows(session) == rows


def test_the_org_rows_are_the_sum_of_its_teams_rows(runtime, history):
    org, _ = history
    with runtime.db.session() as session:
        roll_up(session, utcnow())
        rows = session.scalars(select(DayRollup).where(DayRollup.org_id == org.org_id)).all()
        whole = {row.day: row for row in rows if row.team_id == ORG_WIDE}
        for day, row in whole.items():
            parts = [part for part in rows if part.day == day and part.team_id != ORG_WIDE]
            for name in ("emails_by_hour", "bytes_by_hour", "inboxes_by_hour"):
                summed = [sum(hours) for hours in zip(*(getattr(p, name) for p in parts),
                                                       strict=True)]
                assert getattr(row, name) == summed
            assert row.emails == sum(row.emails_by_hour) == sum(p.emails for p in parts)


def test_only_closed_days_are_rolled_up(runtime, mail_world):
    org = mail_world.ids["org"]
    now = datetime(2026, 3, 10, 0, 30, tzinfo=UTC)  # yesterday ended 30 minutes ago
    with runtime.db.transaction() as session:
        for at in (now - timedelta(hours=36), now - timedelta(minutes=31)):
            count_received(session, [Received(
                org_id=org, team_id=mail_world.ids["team"], domain_id=mail_world.ids["domain"],
                sender_domain="a.example", received_at=at, size_bytes=10)])

    def emails_per_day(session):
        return list(session.scalars(select(DayRollup.emails).where(
            DayRollup.org_id == org, DayRollup.team_id == ORG_WIDE).order_by(DayRollup.day)))

    with runtime.db.session() as session:
        assert roll_up(session, now)[org] == 1  # the day before yesterday
        assert rolled_through(session, org) == now.date() - timedelta(days=2)
        assert emails_per_day(session) == [1]
        assert roll_up(session, now + GRACE)[org] == 1  # yesterday, once GRACE has passed
        assert rolled_through(session, org) == now.date() - timedelta(days=1)
        assert emails_per_day(session) == [1, 1]


def test_an_org_without_counters_gets_a_mark_and_no_rows(runtime, mail_world):
    org = mail_world.ids["org"]
    with runtime.db.session() as session:
        assert roll_up(session, utcnow(), org) == {org: 0}
        assert session.get(RollupMark, org).rolled_through is None
        assert _rows(session)["analytics_days"] == []


def test_postgresql_hands_over_the_hourly_figures_as_the_driver_reads_them() -> None:
    """SQLAlchemy's own array processing visited every number of a year's rows again in Python
    (a sixth of an org's year-long insights): the psycopg dialect had swapped the ARRAY subclass
    that turned it off for its own ARRAY type."""
    dialect = postgresql_psycopg.dialect()
    for column in (DayRollup.emails_by_hour, DayRollup.inboxes_by_hour,
                   DomainDayRollup.emails_by_hour):
        assert column.type.dialect_impl(dialect).result_processor(dialect, None) is None
