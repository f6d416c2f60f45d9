"""The realtime publishers in the worker: admin stats only while an admin stream is open."""

import json

from models.admin.stats import platform_stats
from models.delivery.realtime import (
    ADMIN_PRESENCE_KEY,
    ADMIN_STATS,
    ADMIN_STATS_CHANNEL,
    mark_admin_presence,
)
from tasks.clock import default_jobs
from tasks.publishers import publish_admin_stats
from tests.factories.identity import make_user
from tests.tasks.conftest import drain


def test_admin_stats_are_published_only_while_some_process_holds_an_admin_stream(
        committed_runtime, broker, worker):
    store = committed_runtime.store
    store.delete(ADMIN_PRESENCE_KEY)  # another test's admin socket may have left it
    with committed_runtime.db.transaction() as session:
        make_user(session)
    subscription = store.subscribe(ADMIN_STATS_CHANNEL)
    try:
        publish_admin_stats.send()
        drain(broker, "clock")
        assert subscription.get(timeout=0.3) is None

        mark_admin_presence(store)
        publish_admin_stats.send()
        drain(broker, "clock")
        channel, message = subscription.get(timeout=5)
    finally:
        subscription.close()
        store.delete(ADMIN_PRESENCE_KEY)
    assert channel == ADMIN_STATS_CHANNEL
    published = json.loads(message)
    assert published["type"] == ADMIN_STATS
    with committed_runtime.db.session() as session:
        assert published["data"] == platform_stats(session)  # what GET /admin/stats answers
    assert published["data"]["total_users"] == 1


def test_the_clock_runs_the_admin_stats_job_every_admin_stats_interval(settings):
    jobs = {job.name: job for job in default_jobs(settings)}
    assert jobs["admin_stats"].actor is publish_admin_stats
    assert jobs["admin_stats"].every == settings.clock.admin_stats_interval
    assert settings.clock.admin_stats_interval.total_seconds() == 10
