"""The clock fires each job once per period slot, however many clocks share the store."""

import threading
import uuid
from datetime import UTC, datetime, timedelta

import dramatiq
import pytest

from burnbox.kv import RedisStore
from tasks.broker import in_process_broker
from tasks.clock import Clock, Job, after_outage_jobs, default_jobs
from tasks.events import sweep_outbox, sweep_outbox_after_outage
from tasks.webhooks import sweep_webhook_deliveries_after_outage

# A moment on a whole hour, so that 10 s and 60 s slots both start exactly here.
START = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def jobs_broker():
    """A broker of the test's own, so the messages jobs send can be counted."""
    broker = in_process_broker()
    yield broker
    broker.close()


def _job(broker, every):
    """A job with a unique name (clocks in other tests share the Redis store)."""
    name = f"job_{uuid.uuid4().hex}"
    return Job(name, every, dramatiq.actor(lambda: None, broker=broker, actor_name=name,
                                           queue_name=name))


def _sent(broker, job):
    return broker.queues[job.actor.queue_name].qsize()


def test_two_clocks_sharing_a_store_fire_each_slot_once(any_store, jobs_broker):
    fast, slow = _job(jobs_broker, timedelta(seconds=10)), _job(jobs_broker, timedelta(minutes=1))
    clocks = [Clock(any_store, [fast, slow], timedelta(seconds=1)) for _ in range(2)]

    fired = [clock.run_once(START) for clock in clocks]
    assert sorted(fired[0] + fired[1]) == sorted([fast.name, slow.name])
    # Later ticks inside the same slots fire nothing, on either clock.
    for clock in clocks:
        assert clock.run_once(START + timedelta(seconds=9)) == []
    assert (_sent(jobs_broker, fast), _sent(jobs_broker, slow)) == (1, 1)

    # The next 10 s slot starts; the 60 s slot does not.
    fired = [clock.run_once(START + timedelta(seconds=10)) for clock in clocks]
    assert fired[0] + fired[1] == [fast.name]
    assert (_sent(jobs_broker, fast), _sent(jobs_broker, slow)) == (2, 1)


def test_clocks_ticking_at_the_same_instant_in_threads_fire_once(any_store, jobs_broker):
    job = _job(jobs_broker, timedelta(seconds=10))
    clocks = [Clock(any_store, [job], timedelta(seconds=1)) for _ in range(8)]
    barrier = threading.Barrier(len(clocks))
    results = []

    def tick(clock):
        barrier.wait()
        results.append(clock.run_once(START))

    threads = [threading.Thread(target=tick, args=(clock,)) for clock in clocks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert sum(len(fired) for fired in results) == 1
    assert _sent(jobs_broker, job) == 1


def test_an_unreachable_store_skips_the_tick_without_raising(jobs_broker):
    job = _job(jobs_broker, timedelta(seconds=10))
    clock = Clock(RedisStore("redis://127.0.0.1:1/0"), [job], timedelta(seconds=1))
    assert clock.run_once(START) == []
    assert _sent(jobs_broker, job) == 0


def test_the_first_tick_that_reaches_the_store_after_an_outage_fires_the_after_outage_jobs_once(
        any_store, jobs_broker):
    job = _job(jobs_broker, timedelta(days=1))
    after_outage = _job(jobs_broker, timedelta(seconds=30))
    unreachable = RedisStore("redis://127.0.0.1:1/0")
    clocks = [Clock(unreachable, [job], timedelta(seconds=10), [after_outage]) for _ in range(2)]
    assert [clock.run_once(START) for clock in clocks] == [[], []]
    assert all(clock.in_outage for clock in clocks)

    # The store answers again: here, each clock is given one that is reachable.
    for clock in clocks:
        clock.store = any_store
    fired = [name for clock in clocks for name in clock.run_once(START + timedelta(seconds=1))]
    assert sorted(fired) == sorted([after_outage.name, job.name])
    assert (_sent(jobs_broker, after_outage), _sent(jobs_broker, job)) == (1, 1)
    assert not any(clock.in_outage for clock in clocks)

    # Without an outage before it, a tick in a later slot fires no after-outage job.
    for clock in clocks:
        assert clock.run_once(START + timedelta(seconds=40)) == []
    assert _sent(jobs_broker, after_outage) == 1


def test_run_forever_ticks_until_stopped_and_fires_a_slot_once(any_store, jobs_broker):
    # Real time here: a day-long slot makes crossing a slot boundary mid-test all but impossible.
    job = _job(jobs_broker, timedelta(days=1))
    clock = Clock(any_store, [job], timedelta(milliseconds=20))
    stop = threading.Event()
    thread = threading.Thread(target=clock.run_forever, args=(stop,))
    thread.start()
    try:
        jobs_broker.queues[job.actor.queue_name].get(timeout=5)
        stop.wait(0.1)  # several more ticks inside the same slot
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()
    assert _sent(jobs_broker, job) == 0  # the one message was taken above; no second one came


def test_the_default_jobs_sweep_the_outbox_every_grace_period(settings):
    jobs = {job.name: job for job in default_jobs(settings)}
    assert jobs["sweep_outbox"].actor is sweep_outbox
    assert jobs["sweep_outbox"].every == settings.clock.outbox_grace
    after_outage = {job.name: job.actor for job in after_outage_jobs(settings)}
    assert after_outage["sweep_outbox_after_outage"] is sweep_outbox_after_outage


def test_after_an_outage_the_clock_also_sweeps_webhook_deliveries_without_the_grace(settings):
    jobs = {job.name: job for job in after_outage_jobs(settings)}
    assert jobs["webhook_sweep_after_outage"].actor is sweep_webhook_deliveries_after_outage
    assert jobs["webhook_sweep_after_outage"].every == settings.clock.webhook_sweep_interval
