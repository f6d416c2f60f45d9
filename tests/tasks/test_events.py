"""Event fan-out through the real broker and worker threads: every committed event reaches the
handlers its fan-out table names exactly once, and the outbox sweep recovers events whose
hand-off was lost."""

import threading
import time
import uuid
from datetime import timedelta

import pytest
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware
from sqlalchemy import func, select, update

from burnbox.timeutil import utcnow
from models.delivery.notifications import TITLES
from models.events import WEBHOOK_EVENTS, Event, NewEvent, record_event, record_events
from tasks import events as events_module
from tasks.clock import Clock, default_jobs
from tasks.events import (
    DISPATCH_CHUNK,
    SWEEP_LEASE,
    SWEEP_LEASE_TTL,
    SWEEP_PAGE,
    dispatch_event,
    dispatch_events,
    enqueue_events,
    sweep_outbox,
    sweep_outbox_after_outage,
)
from tasks.fanout import FAN_OUT
from tasks.notifications import notify_users
from tasks.webhooks import fan_out_webhooks
from tests.tasks.conftest import drain, wait_until


def _dispatched(runtime, event_id):
    with runtime.db.session() as session:
        return session.get(Event, event_id).dispatched_at is not None


def _commit_event(runtime, name="test.thing", hand_off=True):
    """Commit one event; with hand_off=False, as if the process died right after the commit."""
    if not hand_off:
        runtime.db.handoffs.events_committed = None
    with runtime.db.transaction() as session:
        return record_event(session, name, {"n": 1}).id


def _backlog(runtime, count):
    """Commit `count` events whose hand-off was lost, recorded one second past the grace."""
    runtime.db.handoffs.events_committed = None
    with runtime.db.transaction() as session:
        ids = record_events(session, [NewEvent("test.thing", {"n": n}) for n in range(count)])
    aged = utcnow() - runtime.settings.clock.outbox_grace - timedelta(seconds=1)
    with runtime.db.transaction() as session:
        session.execute(update(Event).where(Event.dispatched_at.is_(None))
                        .values(created_at=aged))
    return ids


def _undispatched(runtime):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).where(Event.dispatched_at.is_(None)))


class Enqueued(Middleware):
    """Notes every event id handed to the dispatch actors, in the thread that sends it."""

    def __init__(self):
        self.ids = []
        self._lock = threading.Lock()

    def after_enqueue(self, broker, message, delay):
        handed = {"dispatch_events": lambda args: args[0], "dispatch_event": lambda args: args[:1]}
        if message.actor_name in handed:
            with self._lock:
                self.ids += [uuid.UUID(value) for value in handed[message.actor_name](message.args)]


@pytest.fixture
def enqueued(broker):
    """The event ids enqueued for dispatch during the test, duplicates included."""
    middleware = Enqueued()
    broker.add_middleware(middleware)
    return middleware


def test_the_fan_out_table_sends_every_outgoing_event_to_webhooks_and_notifications():
    for name in WEBHOOK_EVENTS:
        assert fan_out_webhooks in FAN_OUT[name]
    for name in TITLES:
        assert notify_users in FAN_OUT[name]


def test_a_committed_event_runs_its_handlers_once_and_is_marked_dispatched(
        committed_runtime, broker, worker, handle):
    first_handler = handle("test.thing")
    second_handler = handle("test.thing", "test.both")
    unrelated = handle("test.other")
    with committed_runtime.db.transaction() as session:
        first = record_event(session, "test.thing", {"n": 1}).id
        second = record_event(session, "test.thing", {"n": 2}).id
        unhandled = record_event(session, "test.nobody", {"n": 3}).id
    wait_until(lambda: _dispatched(committed_runtime, first)
               and _dispatched(committed_runtime, second)
               and _dispatched(committed_runtime, unhandled))
    drain(broker, "events")
    assert sorted(first_handler.calls) == sorted([first, second])
    assert sorted(second_handler.calls) == sorted([first, second])
    assert unrelated.calls == []


def test_a_rolled_back_event_never_reaches_a_handler(committed_runtime, broker, worker, handle):
    recorder = handle("test.thing")
    session = committed_runtime.db.session()
    record_event(session, "test.thing", {})
    session.rollback()
    session.close()
    committed = _commit_event(committed_runtime)
    wait_until(lambda: _dispatched(committed_runtime, committed))
    drain(broker, "events")
    assert recorder.calls == [committed]


def test_dispatching_the_same_event_many_times_runs_its_handlers_once(
        committed_runtime, broker, worker, handle):
    recorder = handle("test.thing")
    event_id = _commit_event(committed_runtime, hand_off=False)
    # At-least-once delivery: duplicates, processed by two threads at the same time, alone
    # and within batches.
    for _ in range(3):
        enqueue_events([event_id])
        enqueue_events([event_id] * 3)
    drain(broker, "events")
    assert recorder.calls == [event_id]
    assert _dispatched(committed_runtime, event_id)


def test_the_events_of_one_commit_are_handed_over_in_chunks_and_dispatched_together(
        committed_runtime, broker, worker, handle):
    recorder = handle("test.thing")
    with committed_runtime.db.transaction() as session:
        ids = [record_event(session, "test.thing", {"n": n}).id for n in range(DISPATCH_CHUNK + 3)]
    wait_until(lambda: all(_dispatched(committed_runtime, event_id) for event_id in ids))
    drain(broker, "events")
    assert sorted(recorder.calls) == sorted(ids)
    # Two messages (a chunk, and the three left), each dispatching its events (and those
    # waiting beside them) in one call of each handler: two calls at most.
    assert len(recorder.runs) <= 2


def test_a_chunk_that_fails_is_dispatched_event_by_event_and_one_failing_again_retried_alone(
        committed_runtime, broker, worker, handle):
    recorder = handle("test.thing")
    failures = []

    def fails_twice(session, events):
        for event in events:
            if event.data["n"] == 1 and len(failures) < 2:
                failures.append(event.id)
                raise RuntimeError("handler failed")

    handle("test.thing", handler=fails_twice)
    with committed_runtime.db.transaction() as session:
        ids = [record_event(session, "test.thing", {"n": n}).id for n in range(3)]
    wait_until(lambda: all(_dispatched(committed_runtime, event_id) for event_id in ids),
               timeout=20)
    drain(broker, "events")
    # Failed in the chunk, then alone; done by its own retried message.
    assert failures == [ids[1], ids[1]]
    assert recorder.runs[0] == ids
    # The chunk's writes were rolled back; each event ran again alone, the failing one once
    # more in a message of its own (which may run before the last event's turn).
    assert sorted(recorder.runs[1:]) == sorted([[ids[0]], [ids[1]], [ids[2]], [ids[1]]])
    assert len({id(message) for message in recorder.messages}) == 2


def test_the_events_a_failed_chunk_took_beside_its_own_are_dispatched_one_by_one_too(
        committed_runtime, broker, worker, handle):
    # The events a chunk took beside its own may have had their own messages already (which
    # found them locked and left them): after a rollback, only the outbox sweep would see
    # them again, 30 s or more later.
    recorder = handle("test.thing")
    failures = []

    def fails_in_a_chunk(session, events):
        if len(events) > 1 and not failures:
            failures.append([event.id for event in events])
            raise RuntimeError("handler failed")

    handle("test.thing", handler=fails_in_a_chunk)
    own, beside = _commit_event(committed_runtime, hand_off=False), _commit_event(
        committed_runtime, hand_off=False)
    dispatch_events.send([str(own)])
    wait_until(lambda: _dispatched(committed_runtime, own)
               and _dispatched(committed_runtime, beside))
    drain(broker, "events")
    assert failures == [[own, beside]]
    assert recorder.runs == [[own, beside], [own], [beside]]


def test_an_event_that_keeps_failing_is_left_out_of_other_dispatches(
        committed_runtime, broker, worker, handle):
    recorder = handle("test.thing")
    failing = _commit_event(committed_runtime, hand_off=False)

    def fails_for_one(session, events):
        if any(event.id == failing for event in events):
            raise RuntimeError("handler failed")

    handle("test.thing", handler=fails_for_one)
    first = _commit_event(committed_runtime, hand_off=False)
    dispatch_events.send([str(first)])  # takes the failing one beside it, and fails
    wait_until(lambda: _dispatched(committed_runtime, first))
    later = _commit_event(committed_runtime, hand_off=False)
    dispatch_events.send([str(later)])
    wait_until(lambda: _dispatched(committed_runtime, later))
    # Taken again beside `later`, it would have rolled `later`'s chunk back: it is left to its
    # own retries instead.
    assert [later] in recorder.runs
    assert not any(later in run and failing in run for run in recorder.runs)
    assert not _dispatched(committed_runtime, failing)


def test_dispatching_an_unknown_event_id_does_nothing(committed_runtime, broker, worker, handle):
    recorder = handle("test.thing")
    dispatch_event.send(str(uuid.uuid4()))
    drain(broker, "events")
    assert recorder.calls == []


def test_the_sweep_re_enqueues_an_event_left_undispatched_past_the_grace_period(
        committed_runtime, broker, worker, handle):
    recorder = handle("test.thing")
    event_id = _commit_event(committed_runtime, hand_off=False)
    drain(broker, "events")
    assert recorder.calls == []

    # Within the grace period the hand-off may still be on its way: the sweep leaves it alone.
    sweep_outbox.send()
    drain(broker, "clock", "events")
    assert recorder.calls == []

    grace = committed_runtime.settings.clock.outbox_grace
    with committed_runtime.db.transaction() as session:
        session.execute(update(Event).where(Event.id == event_id)
                        .values(created_at=utcnow() - grace - timedelta(seconds=1)))
    sweep_outbox.send()
    wait_until(lambda: _dispatched(committed_runtime, event_id))
    drain(broker, "clock", "events")
    assert recorder.calls == [event_id]

    # Once dispatched, later sweeps find nothing to do.
    sweep_outbox.send()
    drain(broker, "clock", "events")
    assert recorder.calls == [event_id]


@pytest.mark.postgres
def test_an_event_reaches_its_handler_through_the_redis_broker(
        committed_runtime, broker, worker, handle):
    assert isinstance(broker, RedisBroker)
    recorder = handle("test.thing")
    event_id = _commit_event(committed_runtime)
    wait_until(lambda: _dispatched(committed_runtime, event_id))
    assert recorder.calls == [event_id]
    # RedisBroker tags every message it delivers with the id of its entry in Redis.
    assert recorder.messages[0].options["redis_message_id"]


def test_one_sweep_hands_over_a_backlog_of_several_pages_each_event_once(
        committed_runtime, broker, enqueued, worker, handle):
    recorder = handle("test.thing")
    backlog = _backlog(committed_runtime, SWEEP_PAGE + 5)
    fresh = _commit_event(committed_runtime, hand_off=False)  # within the grace
    sweep_outbox.send()
    wait_until(lambda: all(_dispatched(committed_runtime, event_id) for event_id in backlog),
               timeout=60)
    drain(broker, "clock", "events")
    # The sweep leaves the event within the grace alone, and hands each event over at most
    # once: those the dispatches of earlier pages took beside their own (recent events
    # waiting) are done by the time it reads their page.
    assert len(set(enqueued.ids)) == len(enqueued.ids)
    assert set(enqueued.ids) <= set(backlog)
    assert sorted(event_id for event_id in recorder.calls if event_id != fresh) == sorted(backlog)
    assert recorder.count(fresh) <= 1


def _lost_in_outage(runtime):
    """Three events committed while the broker was down: their hand-off was lost."""
    runtime.db.handoffs.events_committed = None
    with runtime.db.transaction() as session:
        return record_events(session, [NewEvent("test.thing", {"n": n}) for n in range(3)])


def test_the_after_outage_sweep_hands_over_the_events_recorded_before_it_was_sent_however_young(
        committed_runtime, broker, enqueued, worker, handle):
    recorder = handle("test.thing")
    lost = _lost_in_outage(committed_runtime)
    with committed_runtime.db.transaction() as session:
        later = record_event(session, "test.thing", {"n": 3})
        later.created_at = utcnow() + timedelta(minutes=1)  # recorded after the sweep was sent
    sweep_outbox_after_outage.send()
    wait_until(lambda: all(_dispatched(committed_runtime, event_id) for event_id in lost))
    drain(broker, "clock", "events")
    assert sorted(enqueued.ids) == sorted(lost)
    # A dispatch may take the later event beside its own (a recent event waiting).
    assert sorted(event_id for event_id in recorder.calls if event_id != later.id) == sorted(lost)


def test_the_after_outage_sweep_waits_for_a_sweep_holding_the_lease_then_hands_over(
        committed_runtime, broker, enqueued, worker, handle):
    # A Redis back from an outage has lost the clock's slot claims, so the clock's first tick
    # sends the regular sweep beside the after-outage one. When the regular one (whose grace
    # leaves these young events alone) held the lease, the after-outage sweep gave up and the
    # backlog waited for the next regular sweep.
    recorder = handle("test.thing")
    lost = _lost_in_outage(committed_runtime)
    store = committed_runtime.store
    assert store.set_if_absent(SWEEP_LEASE, "1", SWEEP_LEASE_TTL)
    sweep_outbox_after_outage.send()
    time.sleep(1.5)  # its first look, and a retry
    assert enqueued.ids == []
    store.delete(SWEEP_LEASE)  # the other sweep is done
    wait_until(lambda: _undispatched(committed_runtime) == 0, timeout=10)
    drain(broker, "clock", "events")
    assert sorted(enqueued.ids) == sorted(lost)
    assert sorted(recorder.calls) == sorted(lost)


def test_a_sweep_stops_paging_once_its_time_budget_is_spent(
        committed_runtime, broker, enqueued, worker, handle, monkeypatch):
    handle("test.thing")
    monkeypatch.setattr(events_module, "SWEEP_PAGE", 2)
    monkeypatch.setattr(events_module, "SWEEP_BUDGET", timedelta(0))
    backlog = _backlog(committed_runtime, 5)
    with committed_runtime.db.session() as session:
        oldest = list(session.scalars(select(Event.id).where(Event.id.in_(backlog))
                                      .order_by(Event.created_at, Event.id).limit(2)))
    sweep_outbox.send()
    drain(broker, "clock", "events")
    # One page, the oldest events; the next sweep takes the rest (unless their dispatch took
    # them beside its own: they are recent).
    assert enqueued.ids == oldest


class HoldFirstHandOver(Middleware):
    """Holds the first sweep's first hand-off until another sweep message has been processed, so
    that the two sweeps run at the same time."""

    def __init__(self):
        self.held_thread = None
        self.other_sweep_done = threading.Event()
        self._lock = threading.Lock()

    def after_enqueue(self, broker, message, delay):
        with self._lock:
            if message.actor_name != "dispatch_events" or self.held_thread is not None:
                return
            self.held_thread = threading.get_ident()
        self.other_sweep_done.wait(timeout=10)

    def after_process_message(self, broker, message, *, result=None, exception=None):
        if message.actor_name == "sweep_outbox" and threading.get_ident() != self.held_thread:
            self.other_sweep_done.set()


def test_a_sweep_started_while_another_runs_hands_nothing_over(
        committed_runtime, broker, enqueued, worker, handle):
    recorder = handle("test.thing")
    backlog = _backlog(committed_runtime, 3 * DISPATCH_CHUNK)
    hold = HoldFirstHandOver()
    broker.add_middleware(hold)
    sweep_outbox.send()
    sweep_outbox.send()
    wait_until(lambda: _undispatched(committed_runtime) == 0, timeout=30)
    drain(broker, "clock", "events")
    assert hold.other_sweep_done.is_set()
    assert sorted(enqueued.ids) == sorted(backlog)
    assert sorted(recorder.calls) == sorted(backlog)


def test_two_clocks_ticking_together_hand_the_backlog_over_once(
        committed_runtime, broker, enqueued, worker, handle):
    recorder = handle("test.thing")
    backlog = _backlog(committed_runtime, 3 * DISPATCH_CHUNK)
    jobs = [job for job in default_jobs(committed_runtime.settings) if job.name == "sweep_outbox"]
    clocks = [Clock(committed_runtime.store, jobs, timedelta(seconds=1)) for _ in range(2)]
    moment = utcnow()
    assert [name for clock in clocks for name in clock.run_once(moment)] == ["sweep_outbox"]
    wait_until(lambda: _undispatched(committed_runtime) == 0, timeout=30)
    drain(broker, "clock", "events")
    assert sorted(enqueued.ids) == sorted(backlog)
    assert sorted(recorder.calls) == sorted(backlog)
