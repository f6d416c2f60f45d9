"""An outbox backlog drained by one sweep, against the same number of events handed over fresh.

A broker outage leaves committed events whose hand-off was lost; the clock's outbox sweep
enqueues them again once they are older than `clock.outbox_grace`. Each round records `BACKLOG`
events under a name no fan-out handler subscribes to (so what is timed is the outbox itself:
the hand-over, the broker, the claim and the mark), then times how long until every one is
dispatched:
- candidate: the events aged past the grace, and one `sweep_outbox` message;
- baseline: the same number handed straight to the fan-out, as a commit does.
One in-process worker with `worker.threads` threads consumes both. The figures are events
dispatched a second; a ratio near 1 means a backlog drains at the worker's speed.

Shapes as in bench.events: SQLite by default; PostgreSQL + Redis when BURNBOX_BENCH_DATABASE_URL
and BURNBOX_BENCH_REDIS_URL are set (that database must exist; its events table is emptied).
Run alone with `python -m bench.outbox`.
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import timedelta

from sqlalchemy import delete, func, select, update

import tasks
from bench.harness import Comparison, compare_rounds
from burnbox.settings import Settings, load_settings
from burnbox.timeutil import utcnow
from models.events import Event, NewEvent, record_events
from models.runtime import Runtime
from models.schema import upgrade
from tasks.events import enqueue_events, sweep_outbox

BACKLOG = 5000
ROUNDS = 3
TIMEOUT = 300.0  # seconds a round may take before the benchmark gives up
EVENT = "bench.outbox"  # no handler: only the outbox's own work is timed


def _settings() -> tuple[Settings, str]:
    database = os.environ.get("BURNBOX_BENCH_DATABASE_URL", "")
    redis_url = os.environ.get("BURNBOX_BENCH_REDIS_URL", "")
    overrides: dict[str, object] = {"data_dir": tempfile.mkdtemp(prefix="burnbox-bench-"),
                                    "log.level": "WARNING", "auth.jwt_secret": "bench-" + "x" * 40}
    if database and redis_url:
        overrides |= {"database.url": database, "redis.url": redis_url}
        return load_settings(environ={}, overrides=overrides), "PostgreSQL + Redis"
    return load_settings(environ={}, overrides=overrides), "SQLite, in-process broker"


def _round(runtime: Runtime, *, swept: bool) -> float:
    """Record `BACKLOG` undispatched events, hand them over (by a sweep or directly), and return
    how many were dispatched a second until the last one was."""
    with runtime.db.transaction() as session:
        session.execute(delete(Event))
        ids = record_events(session, [NewEvent(EVENT, {"n": n}) for n in range(BACKLOG)])
        if swept:
            aged = utcnow() - runtime.settings.clock.outbox_grace - timedelta(seconds=1)
            session.execute(update(Event).values(created_at=aged))
    started = time.perf_counter()
    if swept:
        sweep_outbox.send()
    else:
        enqueue_events(ids)
    undispatched = select(func.count()).where(Event.dispatched_at.is_(None))
    while True:
        with runtime.db.session() as session:
            if not session.scalar(undispatched):
                break
        if time.perf_counter() - started > TIMEOUT:
            raise RuntimeError(f"the events were not all dispatched within {TIMEOUT:.0f} s")
        time.sleep(0.02)
    return BACKLOG / (time.perf_counter() - started)


def run() -> list[Comparison]:
    """Compare draining a swept backlog with dispatching the same number of fresh events."""
    settings, shape = _settings()
    runtime = Runtime.from_settings(settings)
    upgrade(runtime.db.engine)
    broker = tasks.setup_broker(runtime)
    runtime.db.handoffs.events_committed = None  # each round hands its events over itself
    worker = tasks.start_worker(broker, settings.worker.threads)
    try:
        return [compare_rounds(f"backlog of {BACKLOG} swept vs fresh ({shape})",
                               lambda: _round(runtime, swept=True),
                               lambda: _round(runtime, swept=False), ROUNDS, unit="events/s")]
    finally:
        worker.stop()


if __name__ == "__main__":
    for comparison in run():
        print(comparison.line())
