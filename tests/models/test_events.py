"""The transactional outbox: an event is handed off after its transaction commits, never before,
never after a rollback; the sweep and dispatch queries see exactly the right rows."""

import uuid
from datetime import UTC, timedelta

import pytest
from sqlalchemy import select, text, update

from burnbox.timeutil import utcnow
from models.events import (
    TOP_UP,
    TOP_UP_WINDOW,
    Event,
    NewEvent,
    claim_for_dispatch,
    record_event,
    record_events,
    undispatched_events,
)


@pytest.fixture
def handed(runtime):
    """The event ids the database hands off after commits, in order."""
    received = []
    runtime.db.handoffs.events_committed = received.extend
    return received


def _exists(runtime, event_id):
    with runtime.db.session() as session:
        return session.get(Event, event_id) is not None


def test_an_event_is_handed_off_only_once_its_transaction_commits(runtime, handed):
    session = runtime.db.session()
    event = record_event(session, "inbox.created", {"inbox_id": "i1"})
    session.flush()
    assert handed == []
    session.commit()
    assert handed == [event.id]
    assert _exists(runtime, event.id)
    session.close()


def test_a_rolled_back_event_is_never_handed_off(runtime, handed):
    session = runtime.db.session()
    # Its id, not the event: an entity of a rolled-back transaction is expired.
    event_id = record_event(session, "inbox.created", {"inbox_id": "i1"}).id
    session.flush()
    session.rollback()
    # The next transaction of the same session commits without taking the forgotten id along.
    record_event(session, "inbox.created", {"inbox_id": "i2"})
    session.commit()
    session.close()
    assert event_id not in handed
    assert len(handed) == 1
    assert not _exists(runtime, event_id)


def test_a_failing_transaction_block_hands_nothing_off(runtime, handed):
    recorded = []
    with pytest.raises(RuntimeError), runtime.db.transaction() as session:
        recorded.append(record_event(session, "inbox.created", {}).id)
        raise RuntimeError("the action failed")
    assert handed == []
    assert not _exists(runtime, recorded[0])


def test_every_event_of_a_transaction_is_handed_off_once_in_order(runtime, handed):
    with runtime.db.transaction() as session:
        first = record_event(session, "inbox.created", {"n": 1})
        second = record_event(session, "email.received", {"n": 2})
    with runtime.db.transaction() as session:
        session.execute(select(Event.id)).all()  # a later commit with no events of its own
    assert handed == [first.id, second.id]


def test_an_event_of_a_rolled_back_savepoint_is_never_dispatched(runtime, handed):
    with runtime.db.transaction() as session:
        nested = session.begin_nested()
        ghost = record_event(session, "inbox.created", {})
        nested.rollback()
        kept = record_event(session, "inbox.created", {})
    assert kept.id in handed
    with runtime.db.session() as session:
        # Its id may be handed off, but nothing can be claimed under it.
        assert claim_for_dispatch(session, [ghost.id]) == []
        assert [event.id for event in claim_for_dispatch(session, [kept.id])] == [kept.id]


def test_releasing_a_savepoint_hands_nothing_off_before_the_transaction_commits(runtime,
                                                                                 handed):
    # A worker given the id at the savepoint would find no committed row, do nothing, and the
    # event would wait for the outbox sweep (bulk domain delete records its events so).
    session = runtime.db.session()
    with session.begin_nested():
        event = record_event(session, "storage.objects_discarded", {"keys": []})
    assert handed == []
    session.commit()
    assert handed == [event.id]
    session.close()


def test_a_failing_hand_off_does_not_undo_the_commit(runtime, caplog):
    def broken(_ids):
        raise ConnectionError("broker down")

    runtime.db.handoffs.events_committed = broken
    with runtime.db.transaction() as session:
        event = record_event(session, "inbox.created", {})
    assert _exists(runtime, event.id)
    assert "after-commit step failed" in caplog.text


def test_event_rows_keep_their_name_data_scope_and_utc_time(runtime):
    with runtime.db.transaction() as session:
        event = record_event(session, "email.received", {"subject": "hi", "n": [1, 2]})
    with runtime.db.session() as session:
        stored = session.get(Event, event.id)
        assert (stored.name, stored.data) == ("email.received", {"subject": "hi", "n": [1, 2]})
        assert stored.created_at.tzinfo == UTC
        assert abs(stored.created_at - utcnow()) < timedelta(minutes=1)
        assert stored.dispatched_at is None


def _age(runtime, event_id, by):
    with runtime.db.transaction() as session:
        session.execute(update(Event).where(Event.id == event_id)
                        .values(created_at=utcnow() - by))


def test_the_sweep_query_finds_old_undispatched_events_oldest_first(runtime):
    with runtime.db.transaction() as session:
        fresh = record_event(session, "inbox.created", {})
        old = record_event(session, "inbox.created", {})
        older = record_event(session, "inbox.created", {})
        done = record_event(session, "inbox.created", {})
    _age(runtime, old.id, timedelta(minutes=2))
    _age(runtime, older.id, timedelta(minutes=5))
    _age(runtime, done.id, timedelta(minutes=5))
    with runtime.db.transaction() as session:
        claim_for_dispatch(session, [done.id])
    with runtime.db.session() as session:
        minute_ago = utcnow() - timedelta(minutes=1)
        found = undispatched_events(session, minute_ago, limit=10)
        assert [key.id for key in found] == [older.id, old.id]
        assert [key.id for key in undispatched_events(session, minute_ago, limit=1)] == [older.id]
        # The next page starts past the last key of the previous one.
        assert undispatched_events(session, minute_ago, limit=10, after=found[0]) == found[1:]
        assert undispatched_events(session, minute_ago, limit=10, after=found[1]) == []
        recent = undispatched_events(session, utcnow() - timedelta(seconds=30), limit=10)
        assert fresh.id not in [key.id for key in recent]


def test_the_sweep_query_pages_events_recorded_at_the_same_instant_by_id(runtime):
    with runtime.db.transaction() as session:
        ids = record_events(session, [NewEvent("inbox.created", {}) for _ in range(5)])
    with runtime.db.transaction() as session:  # one instant for all: only the id orders them
        session.execute(update(Event).where(Event.id.in_(ids))
                        .values(created_at=utcnow() - timedelta(minutes=5)))
    seen: list[uuid.UUID] = []
    after = None
    with runtime.db.session() as session:
        while page := undispatched_events(session, utcnow(), limit=2, after=after):
            seen += [key.id for key in page]
            after = page[-1]
    assert sorted(seen) == sorted(ids)
    assert len(seen) == len(ids)


def test_a_dispatched_event_cannot_be_claimed_again(runtime):
    with runtime.db.transaction() as session:
        event = record_event(session, "inbox.created", {})
    with runtime.db.transaction() as session:
        assert [claimed.id for claimed in claim_for_dispatch(session, [event.id])] == [event.id]
    with runtime.db.session() as session:
        assert claim_for_dispatch(session, [event.id]) == []
        assert session.get(Event, event.id).dispatched_at is not None


def test_a_dispatch_takes_the_recent_events_waiting_beside_its_own_and_no_old_one(runtime):
    with runtime.db.transaction() as session:
        old = record_event(session, "inbox.created", {})
        waiting = record_events(session, [NewEvent("inbox.created", {})
                                          for _ in range(TOP_UP + 2)])
        own = record_event(session, "inbox.created", {})
    _age(runtime, old.id, TOP_UP_WINDOW + timedelta(seconds=5))
    with runtime.db.transaction() as session:
        # Alone (a retried event, which must not drag others into its failures): its own only.
        assert [event.id for event in claim_for_dispatch(session, [own.id])] == [own.id]
        session.rollback()
        claimed = [event.id for event in claim_for_dispatch(session, [own.id], top_up=True)]
    assert len(claimed) == TOP_UP + 1
    assert own.id in claimed
    assert old.id not in claimed, "older than the window: left to its own message and the sweep"
    assert set(claimed) - {own.id} <= set(waiting)
    with runtime.db.session() as session:
        left = set(session.scalars(select(Event.id).where(Event.dispatched_at.is_(None))))
    assert left == {old.id, *(set(waiting) - set(claimed))}


@pytest.mark.postgres
def test_a_dispatch_skips_the_events_another_dispatch_holds_without_waiting(committed_runtime):
    with committed_runtime.db.transaction() as session:
        first, second, third = record_events(session, [NewEvent("inbox.created", {})] * 3)
    holder = committed_runtime.db.session()
    try:
        assert [e.id for e in claim_for_dispatch(holder, [first])] == [first]
        with committed_runtime.db.session() as other:
            other.execute(text("SET LOCAL lock_timeout = '2s'"))
            claimed = [e.id for e in claim_for_dispatch(other, [first, second], top_up=True)]
            assert claimed == [second, third]
            other.rollback()
    finally:
        holder.rollback()
        holder.close()
