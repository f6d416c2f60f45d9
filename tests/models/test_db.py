"""The unit of work: after-commit steps wait for the outermost commit and go with a rollback,
writes are tracked per transaction, actions may end only a transaction that did not write, and
`Database.transaction()` commits a refusal that keeps its changes."""

import gc
import uuid
import weakref

import pytest
from sqlalchemy import false, select, update

from models.db import (
    Database,
    after_commit,
    current_unit_of_work,
    end_read_only_transaction,
    has_writes,
    remember_mail_change,
)
from models.errors import Conflict, Unauthenticated
from models.events import Event, record_event
from models.handoffs import EMAIL_DELETED, MailChange


@pytest.fixture(autouse=True)
def _no_hand_off(runtime):
    """The events these tests commit are handed to nobody: no dispatch message leaves for a
    worker to pick up."""
    runtime.db.handoffs.events_committed = None


def _exists(runtime, event_id):
    with runtime.db.session() as session:
        return session.get(Event, event_id) is not None


def test_an_after_commit_step_waits_for_the_outermost_commit_not_a_savepoint(runtime):
    ran = []
    with runtime.db.session() as session:
        with session.begin_nested():
            after_commit(session, lambda: ran.append("step"))
        assert ran == []
        session.commit()
        assert ran == ["step"]
        session.commit()  # a later commit does not run it again
        assert ran == ["step"]


def test_a_rollback_drops_the_after_commit_steps(runtime):
    ran = []
    with runtime.db.session() as session:
        session.execute(select(Event.id)).all()
        after_commit(session, lambda: ran.append("step"))
        session.rollback()
        session.commit()
    assert ran == []


def test_a_rolled_back_savepoint_drops_only_the_steps_registered_inside_it(runtime):
    ran = []
    with runtime.db.session() as session:
        after_commit(session, lambda: ran.append("before"))
        outer = session.begin_nested()
        inner = session.begin_nested()
        after_commit(session, lambda: ran.append("inner, released"))
        inner.commit()
        outer.rollback()  # takes the released inner savepoint's step along
        kept = session.begin_nested()
        after_commit(session, lambda: ran.append("kept"))
        kept.commit()
        session.commit()
    assert ran == ["before", "kept"]


def test_mail_changes_go_in_one_hand_off_after_commit_without_a_rolled_back_savepoints(
        runtime):
    handed = []
    runtime.db.handoffs.mail_changed = handed.append
    kept, undone, later = (MailChange(EMAIL_DELETED, uuid.uuid4(), None, uuid.uuid4())
                           for _ in range(3))
    with runtime.db.session() as session:
        remember_mail_change(session, kept)
        savepoint = session.begin_nested()
        remember_mail_change(session, undone)
        savepoint.rollback()
        with session.begin_nested():
            remember_mail_change(session, later)
        assert handed == []
        session.commit()
        session.execute(select(Event.id)).all()
        remember_mail_change(session, undone)
        session.rollback()
        session.commit()
    assert handed == [[kept, later]]


def test_a_failing_step_is_logged_and_the_others_still_run(runtime, caplog):
    ran = []

    def broken():
        raise ConnectionError("broker down")

    with runtime.db.transaction() as session:
        event = record_event(session, "test.thing", {})
        after_commit(session, broken)
        after_commit(session, lambda: ran.append("after"))
    assert ran == ["after"]
    assert _exists(runtime, event.id)
    assert "after-commit step failed" in caplog.text


def test_writes_are_tracked_until_the_transaction_ends(runtime):
    with runtime.db.session() as session:
        session.execute(select(Event.id)).all()
        assert not has_writes(session)  # a read, even in an open transaction
        record_event(session, "test.thing", {})
        assert has_writes(session)  # added, not flushed yet
        session.flush()
        assert has_writes(session)  # flushed, not committed
        session.commit()
        assert not has_writes(session)
        # A bulk statement writes without a flush, even one that matches no row.
        session.execute(update(Event).where(false()).values(name="never"))
        assert has_writes(session)
        session.rollback()
        assert not has_writes(session)


def test_an_action_may_end_a_transaction_that_only_read(runtime):
    with runtime.db.session() as session:
        session.execute(select(Event.id)).all()
        end_read_only_transaction(session)
        assert not session.in_transaction()


def test_an_action_may_not_end_a_transaction_that_wrote(runtime):
    with runtime.db.session() as session:
        event = record_event(session, "test.thing", {})
        session.flush()
        with pytest.raises(RuntimeError, match="not written"):
            end_read_only_transaction(session)
        session.commit()
    assert _exists(runtime, event.id)


def test_a_transaction_is_the_current_unit_of_work_for_its_block(runtime):
    assert current_unit_of_work() is None
    with runtime.db.transaction() as outer:
        assert current_unit_of_work() is outer
        with runtime.db.transaction() as inner:
            assert current_unit_of_work() is inner
        assert current_unit_of_work() is outer
    assert current_unit_of_work() is None


def test_a_transaction_commits_a_refusal_that_keeps_its_changes(runtime):
    recorded = []
    with pytest.raises(Unauthenticated), runtime.db.transaction() as session:
        recorded.append(record_event(session, "test.failed_sign_in", {}))
        raise Unauthenticated("invalid email or password", keeps_changes=True)
    assert _exists(runtime, recorded[0].id)


def test_a_transaction_rolls_back_any_other_refusal(runtime):
    recorded = []
    with pytest.raises(Conflict), runtime.db.transaction() as session:
        recorded.append(record_event(session, "test.thing", {}).id)  # expired by the rollback
        raise Conflict("already there")
    assert not _exists(runtime, recorded[0])


def test_a_database_no_one_holds_is_freed_with_what_it_holds(settings, engine):
    # Its session factories' listeners once held it for good (SQLAlchemy keeps them in a map
    # weakly keyed by the factory's Session class, which the listeners' bound methods held in
    # turn): a process that made a Database per test kept every one, and their Redis
    # connections, until a late test's select() found a descriptor past 1023.
    database = Database(settings, engine=engine)
    with engine.connect() as connection:
        database.bind_to(connection)
        gone = weakref.ref(database)
        del database
        gc.collect()
    assert gone() is None
