"""Event fan-out: the actors that run, for each committed event, the handlers the fan-out table
(`tasks.fanout.FAN_OUT`) names for it.

The event is marked dispatched in the same transaction as the handlers' writes, and that
transaction is the dispatching message's unit of work, committed when the actor returns:
messages the handlers send, and their `after_commit` steps, leave only once it commits. The
dispatch of a chunk commits in steps (the chunk, or after its failure each event alone).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from itertools import groupby

from dramatiq import Retry
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.db import end_read_only_transaction
from models.events import TOP_UP_WINDOW, OutboxKey, claim_for_dispatch, undispatched_events
from tasks.broker import actor, commit_step, runtime, sent_at, session
from tasks.fanout import FAN_OUT, FanOut
from tasks.metrics import observe_outbox
from tasks.webhooks import first_attempts_together

log = logging.getLogger(__name__)

_fan_out: FanOut = FAN_OUT


@contextmanager
def fanning_out_to(table: FanOut) -> Iterator[None]:
    """Dispatch with `table` instead of `FAN_OUT` until the block ends, in every thread of the
    process (tests run handlers of their own this way)."""
    global _fan_out
    previous, _fan_out = _fan_out, table
    try:
        yield
    finally:
        _fan_out = previous


# Events handed to one dispatch message at most. The outbox hands over every event a commit
# recorded (mail ingest commits up to 64 at once); one broker message per event cost the
# committer about 0.12 ms of CPU per e-mail on Redis, and chunks of 8 still 9 % of mailin's
# store process (two Redis round trips a message). A chunk is dispatched set-based in one
# transaction, which costs about as much for 32 events as for 8; new mail does not wait for it
# (mailin pushes it and sends its first webhook attempts itself).
DISPATCH_CHUNK = 32


class _RecentFailures:
    """The events whose dispatch failed in this process within `TOP_UP_WINDOW`: other
    dispatches leave them out of their top-ups (each would fail with it, roll back and start
    over event by event), and they go on through `dispatch_event`'s retries alone. Past the
    window the claim no longer tops up with them anyway."""

    def __init__(self) -> None:
        self._until: dict[uuid.UUID, float] = {}
        self._lock = threading.Lock()

    def note(self, event_id: uuid.UUID) -> None:
        with self._lock:
            self._until[event_id] = time.monotonic() + TOP_UP_WINDOW.total_seconds()

    def current(self) -> list[uuid.UUID]:
        now = time.monotonic()
        with self._lock:
            for event_id in [one for one, until in self._until.items() if until <= now]:
                del self._until[event_id]
            return list(self._until)


_failures = _RecentFailures()


@actor(queue_name="events", max_retries=10, min_backoff=1000, max_backoff=60_000)
def dispatch_event(event_id: str) -> None:
    """Run every handler for the event and mark it dispatched; a no-op if already dispatched.
    A failure is raised, and the message retried. Only this event: one that failed is never
    joined by others."""
    try:
        _dispatch(session(), [uuid.UUID(event_id)], top_up=False)
    except Exception:
        _failures.note(uuid.UUID(event_id))
        raise


@actor(queue_name="events", max_retries=0,
       commits_in_steps="a chunk that fails is rolled back and its events dispatched one "
                        "transaction each, so the others go on")
def dispatch_events(event_ids: list[str]) -> None:
    """Dispatch the listed events, and the recent ones waiting beside them (see
    `models.events.claim_for_dispatch`), in one transaction, each handler once for each run
    of events of one name. If that fails, it is rolled back and every event it had claimed
    (those listed first) is dispatched alone, each in its own transaction, one that fails
    again going to `dispatch_event` (with that actor's retries) so the others go on: the
    events taken beside the listed ones may have had their own messages already, which found
    them locked and left them. The webhook attempts leave together at the end, a message per
    webhook rather than one per event."""
    db = session()
    ids = [uuid.UUID(event_id) for event_id in event_ids]
    claimed: list[uuid.UUID] = []
    with first_attempts_together(db):
        try:
            _dispatch(db, ids, top_up=True, claimed=claimed)
            commit_step(db)
            return
        except Exception:
            db.rollback()
            log.exception("dispatching a chunk of events failed; dispatching them one by one",
                          extra={"events": len(claimed) or len(ids)})
        for event_id in dict.fromkeys([*ids, *claimed]):
            try:
                _dispatch(db, [event_id], top_up=False)
                commit_step(db)
            except Exception:
                db.rollback()
                _failures.note(event_id)
                log.exception("dispatching an event failed; retrying it on its own",
                              extra={"event_id": str(event_id)})
                dispatch_event.send(str(event_id))


def _dispatch(db: Session, event_ids: list[uuid.UUID], *, top_up: bool,
              claimed: list[uuid.UUID] | None = None) -> None:
    """Claim the events (marking them dispatched; their ids added to `claimed`) and run their
    handlers, in the session's transaction (its caller commits it): set-based, each handler
    called once for each run of consecutive events of one name, so a chunk costs about as
    many statements and round trips as one event."""
    events = claim_for_dispatch(db, event_ids, top_up=top_up,
                                passed_over=_failures.current() if top_up else ())
    if claimed is not None:
        claimed += [event.id for event in events]
    if not events:
        db.rollback()  # nothing to do: end the transaction the claim opened
        return
    for name, run in groupby(events, key=lambda event: event.name):
        same_name = list(run)
        for handler in _fan_out.get(name, ()):
            handler(db, same_name)


def enqueue_events(event_ids: Iterable[uuid.UUID]) -> None:
    """Hand committed events to the fan-out (called after commit): one dispatch message per
    `DISPATCH_CHUNK` events."""
    ids = [str(event_id) for event_id in event_ids]
    for start in range(0, len(ids), DISPATCH_CHUNK):
        dispatch_events.send(ids[start:start + DISPATCH_CHUNK])


# Events one sweep query returns. A sweep pages on until a page comes back short, so a backlog
# of any size (a broker outage leaves thousands) is handed over in one run and the worker
# drains it at its own speed, rather than one page per clock period.
SWEEP_PAGE = 1000
# How long one sweep may go on paging; what is left waits for the next. The cut-off fixed at
# the start and the keyset already make a run finite; the budget keeps a huge backlog from
# holding a clock-queue thread and the lease for minutes.
SWEEP_BUDGET = timedelta(seconds=20)
# Held while a sweep runs, so a second one started meanwhile (a redelivered message, a second
# clock's drifted slot) does not hand the same backlog over again. It outlives the budget so
# that only a sweep that died holding it lets it expire.
SWEEP_LEASE = "outbox:sweeping"
SWEEP_LEASE_TTL = SWEEP_BUDGET + timedelta(seconds=10)


@actor(queue_name="clock", max_retries=0)
def sweep_outbox() -> None:
    """Enqueue again every event that stayed undispatched past the grace period, each once, page
    after page until a page comes back short or `SWEEP_BUDGET` is spent; do nothing while
    another sweep runs."""
    _sweep_once(utcnow() - runtime().settings.clock.outbox_grace)


# How long the after-outage sweep waits before it looks again at a lease another sweep holds;
# its retries, that many looks, outlast the lease.
LEASE_RECHECK = timedelta(seconds=1)


@actor(queue_name="clock", max_retries=int(SWEEP_LEASE_TTL / LEASE_RECHECK))
def sweep_outbox_after_outage() -> None:
    """`sweep_outbox` without the grace: every undispatched event recorded before this message
    was sent. The clock sends it as soon as the store (Redis, the broker too) answers again
    after failing: the events committed during the outage lost their hand-off, and waiting for
    them to age past the grace (and for the next grace slot) would hold the backlog up to a
    minute. An event recorded just before, whose own hand-off may still be on its way, is
    handed over twice at worst, and dispatched once: the dispatch claims it.

    While another sweep holds the lease, it looks again every `LEASE_RECHECK` (a retry of the
    same message: the cut-off stays the moment it was first sent)."""
    if not _sweep_once(sent_at()):
        # The holder is most likely the regular sweep, sent by the same clock tick (a Redis
        # back from an outage has lost the clock's slot claims), whose cut-off is the grace's:
        # it leaves this backlog alone. Giving up left it to the next regular sweep, 30 s
        # later (measured by bench.delivery).
        raise Retry("another outbox sweep holds the lease",
                    delay=round(LEASE_RECHECK.total_seconds() * 1000))


def _sweep_once(committed_before: datetime) -> bool:
    """Sweep under the lease and return True, or return False at once while another sweep
    holds it."""
    store = runtime().store
    if not store.set_if_absent(SWEEP_LEASE, "1", SWEEP_LEASE_TTL):
        log.info("another outbox sweep is running; leaving the backlog to it")
        return False
    try:
        count = _sweep(session(), committed_before)
        observe_outbox(session())
    finally:
        store.delete(SWEEP_LEASE)
    if count:
        log.warning("re-enqueued undispatched events", extra={"count": count})
    return True


def _sweep(db: Session, committed_before: datetime) -> int:
    """Hand over the undispatched events recorded before `committed_before`; return how many."""
    deadline = time.monotonic() + SWEEP_BUDGET.total_seconds()
    after: OutboxKey | None = None
    count = 0
    while True:
        page = undispatched_events(db, committed_before, SWEEP_PAGE, after)
        # On SQLite the read holds the write lock the dispatchers need; nothing stays open on
        # PostgreSQL either while the page is handed over.
        end_read_only_transaction(db)
        enqueue_events(key.id for key in page)
        count += len(page)
        if len(page) < SWEEP_PAGE or time.monotonic() >= deadline:
            return count
        after = page[-1]
