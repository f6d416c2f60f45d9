"""The analytics rollup job on worker threads: the clock schedules it, and it rolls every org's
closed days up (then holds its mark when nothing new closed)."""

from __future__ import annotations

from datetime import timedelta

from burnbox.timeutil import utcnow
from models.analytics.rollups import ORG_WIDE, DayRollup, last_closed_day, rolled_through
from models.mail.counters import Received, count_received
from tasks.analytics import roll_up_analytics
from tasks.clock import default_jobs
from tests.factories.mail import make_mail_world
from tests.tasks.conftest import drain


def test_the_clock_rolls_analytics_up_every_hour(settings):
    jobs = {job.name: job for job in default_jobs(settings)}
    assert jobs["analytics_rollup"].actor is roll_up_analytics
    assert jobs["analytics_rollup"].every == settings.clock.analytics_rollup_interval
    assert settings.clock.analytics_rollup_interval == timedelta(hours=1)


def test_the_job_rolls_up_every_orgs_closed_days(committed_runtime, broker, worker):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        for org in ("org", "other_org"):
            count_received(session, [Received(
                org_id=world.ids[org], team_id=world.ids["team"], domain_id=world.ids["domain"],
                sender_domain="a.example", received_at=utcnow() - timedelta(days=3),
                size_bytes=10)])
    for _ in range(2):  # a second run finds nothing new and changes nothing
        roll_up_analytics.send()
        drain(broker, "clock")
        with runtime.db.session() as session:
            for org in ("org", "other_org"):
                assert rolled_through(session, world.ids[org]) == last_closed_day(utcnow())
                assert session.query(DayRollup.emails).filter(
                    DayRollup.org_id == world.ids[org], DayRollup.team_id == ORG_WIDE).all() \
                    == [(1,)]
