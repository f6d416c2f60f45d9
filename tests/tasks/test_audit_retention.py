"""audit.retention: the cleanup removes entries older than it, in batches, and keeps every
entry while it is 0 (the default)."""

import dataclasses
import uuid
from datetime import timedelta

import dramatiq
from sqlalchemy import func, insert, select

import tasks
from burnbox.timeutil import utcnow
from models.platform.audit import AuditEntry
from tasks import start_worker
from tasks.cleanup import cleanup
from tests.tasks.conftest import drain


def _entries(runtime, ages_in_days):
    now = utcnow()
    with runtime.db.transaction() as session:
        session.execute(insert(AuditEntry), [
            {"id": uuid.uuid4(), "created_at": now - timedelta(days=age), "action": "auth.login",
             "actor_id": None, "org_id": None, "resource_type": "session", "resource_id": None,
             "ip": None, "user_agent": None, "channel": "api", "severity": "info",
             "category": "auth"} for age in ages_in_days])


def _ages(runtime):
    now = utcnow()
    with runtime.db.session() as session:
        return sorted(round((now - stamp) / timedelta(days=1))
                      for stamp in session.scalars(select(AuditEntry.created_at)))


def _run_cleanup(runtime, **settings):
    rt = dataclasses.replace(runtime, settings=runtime.settings.replace(**settings))
    broker = tasks.setup_broker(rt)
    running = start_worker(broker, threads=1)
    try:
        cleanup.send()
        drain(dramatiq.get_broker(), "clock")
    finally:
        running.stop()
        tasks.setup_broker(runtime)


def test_entries_older_than_the_retention_go_in_batches(committed_runtime):
    _entries(committed_runtime, [40] * 23 + [31, 29, 1, 0])
    _run_cleanup(committed_runtime, **{"audit.retention": "720h",
                                       "clock.cleanup_batch_size": 5})
    assert _ages(committed_runtime) == [0, 1, 29]


def test_a_zero_retention_keeps_everything(committed_runtime):
    _entries(committed_runtime, [4000, 400, 0])
    _run_cleanup(committed_runtime, **{"audit.retention": "0s"})
    with committed_runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(AuditEntry)) == 3
