"""Actors sent inside a unit of work that wrote wait for its commit by themselves: nothing leaves
before it, or at all if it rolls back; a unit of work that only read, or none, sends at once."""

import uuid

import dramatiq
import pytest
from dramatiq.middleware import Middleware
from sqlalchemy import select

from models.db import enter_unit_of_work, leave_unit_of_work
from models.identity.users import User, new_user
from tasks.broker import actor


@actor(queue_name="test_broker")
def noted(n: int) -> None:
    """Does nothing: the tests watch its messages being enqueued."""


class Enqueued(Middleware):
    """Notes the arguments and delay of every message the broker enqueues."""

    def __init__(self):
        self.sent = []

    def after_enqueue(self, broker, message, delay):
        self.sent.append((message.args, delay))


@pytest.fixture
def enqueued(runtime):
    """What the test's broker enqueued, in order: [(args, delay), ...]."""
    watcher = Enqueued()
    dramatiq.get_broker().add_middleware(watcher)
    return watcher.sent


def _write(session):
    # A user row: a write whose commit enqueues nothing itself (an event would be handed off).
    session.add(new_user(email=f"{uuid.uuid4().hex}@example.test", display_name="Writer",
                         password_hash=None))


def test_a_send_inside_a_transaction_that_rolls_back_sends_nothing(runtime, enqueued):
    with pytest.raises(RuntimeError), runtime.db.transaction() as session:
        _write(session)
        noted.send(1)
        raise RuntimeError("the action failed")
    assert enqueued == []


def test_a_send_inside_a_transaction_that_commits_goes_once_after_the_commit(runtime, enqueued):
    with runtime.db.transaction() as session:
        _write(session)
        sent = noted.send(1)
        session.flush()
        assert enqueued == []
    assert enqueued == [((1,), None)]
    assert sent.args == (1,)


def test_a_released_savepoint_sends_nothing_before_the_commit(runtime, enqueued):
    with runtime.db.transaction() as session:
        with session.begin_nested():
            _write(session)
            noted.send(1)
        assert enqueued == []
    assert enqueued == [((1,), None)]


def test_a_send_inside_a_rolled_back_savepoint_is_dropped(runtime, enqueued):
    with runtime.db.transaction() as session:
        _write(session)
        noted.send(1)
        savepoint = session.begin_nested()
        noted.send(2)
        savepoint.rollback()
    assert enqueued == [((1,), None)]


def test_a_deferred_send_keeps_its_delay(runtime, enqueued):
    with runtime.db.transaction() as session:
        _write(session)
        noted.send_with_options(args=(1,), delay=1500)
    assert enqueued == [((1,), 1500)]


def test_a_send_with_no_writes_pending_goes_at_once(runtime, enqueued):
    # A face that only read (the clock's outbox sweep) may never commit: its sends must go now.
    session = runtime.db.session()
    token = enter_unit_of_work(session)
    try:
        session.execute(select(User.id)).all()
        noted.send(1)
        assert enqueued == [((1,), None)]
        _write(session)
        session.commit()
        noted.send(2)  # the writes are committed: nothing left to wait for
        assert enqueued == [((1,), None), ((2,), None)]
    finally:
        leave_unit_of_work(token)
        session.close()


def test_a_send_outside_any_unit_of_work_goes_at_once(runtime, enqueued):
    with runtime.db.session() as session:
        _write(session)  # not the current unit of work: nobody said its commit matters
        noted.send(1)
    assert enqueued == [((1,), None)]
