"""`burnbox analytics backfill`: rebuilds one org's or every org's rollups from the counters,
from a day on; an unknown org is one line and exit code 1."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from burnbox.timeutil import utcnow
from models.analytics.rollups import ORG_WIDE, DayRollup, last_closed_day, rolled_through
from models.mail.counters import Received, count_received


def _mail(runtime, world, org, days_ago):
    with runtime.db.transaction() as session:
        count_received(session, [Received(
            org_id=world.ids[org], team_id=world.ids["team"], domain_id=world.ids["domain"],
            sender_domain="a.example", received_at=utcnow() - timedelta(days=days_ago),
            size_bytes=10)])


def _emails(runtime, world, org):
    with runtime.db.session() as session:
        return list(session.scalars(select(DayRollup.emails).where(
            DayRollup.org_id == world.ids[org], DayRollup.team_id == ORG_WIDE)
            .order_by(DayRollup.day)))


def test_backfill_of_one_org_then_of_every_org(burnbox, committed_runtime, committed_world):
    for org in ("org", "other_org"):
        _mail(committed_runtime, committed_world, org, 3)
    result = burnbox("analytics", "backfill", "--org", "org-a")
    assert result.exit_code == 0, result.output
    assert "of 1 org(s)" in result.stdout
    with committed_runtime.db.session() as session:
        assert rolled_through(session, committed_world.ids["org"]) == last_closed_day(utcnow())
        assert rolled_through(session, committed_world.ids["other_org"]) is None
    assert _emails(committed_runtime, committed_world, "org") == [1]

    result = burnbox("analytics", "backfill")
    assert result.exit_code == 0, result.output
    assert _emails(committed_runtime, committed_world, "other_org") == [1]


def test_backfill_since_a_day_recomputes_the_days_from_it(burnbox, committed_runtime,
                                                          committed_world):
    _mail(committed_runtime, committed_world, "org", 3)
    org = str(committed_world.ids["org"])
    assert burnbox("analytics", "backfill", "--org", org).exit_code == 0
    _mail(committed_runtime, committed_world, "org", 3)  # as if a counter were written late
    since = (utcnow() - timedelta(days=4)).date().isoformat()
    result = burnbox("analytics", "backfill", "--org", org, "--since", since)
    assert result.exit_code == 0, result.output
    assert _emails(committed_runtime, committed_world, "org") == [2]


def test_backfill_of_an_unknown_org_fails_in_one_line(burnbox, committed_runtime):
    result = burnbox("analytics", "backfill", "--org", "no-such-org")
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: no org 'no-such-org'"
    bad = burnbox("analytics", "backfill", "--since", "yesterday")
    assert bad.exit_code == 2
