"""Read-only sessions (`Database.session(read_only=True)`, the hot GETs' unit of work): on
PostgreSQL their statements run in autocommit, so no transaction is open and no BEGIN or
ROLLBACK round trip is paid; on SQLite each statement is a read of its own that waits for no
writer; on both, each statement sees what was committed before it began; and a write in one
raises before anything reaches the database."""

from __future__ import annotations

import threading

import pytest
from psycopg.pq import TransactionStatus
from sqlalchemy import select, update

from models.db import Database
from models.identity.users import User
from tests.factories.identity import make_user
from tests.processes import wait_until


@pytest.fixture
def database(settings, engine):
    """A Database on the test database with a pool of its own (nothing joins the test's
    transaction), emptied of what the test commits."""
    db = Database(settings)
    yield db
    with db.transaction() as session:
        session.execute(User.__table__.delete().where(User.email.like("read-only%")))
    db.dispose()


@pytest.mark.postgres
def test_a_read_only_session_reads_outside_any_transaction(database):
    with database.session(read_only=True) as session:
        assert session.scalar(select(1)) == 1
        driver = session.connection().connection.driver_connection
        assert driver.info.transaction_status == TransactionStatus.IDLE  # no BEGIN was sent
    with database.session() as session:
        session.scalar(select(1))
        driver = session.connection().connection.driver_connection
        assert driver.info.transaction_status == TransactionStatus.INTRANS


def test_each_statement_of_a_read_only_session_sees_what_was_committed_before_it(database):
    # On SQLite it began a plain read, whose snapshot was its first statement's: a wait that
    # read (its permission check), then listened for mail, then looked, missed mail committed
    # in between, and slept until its deadline.
    with database.transaction() as session:
        user_id = make_user(session, email="read-only-fresh@example.test").id
    with database.session(read_only=True) as reader:
        assert reader.scalar(select(User.display_name).where(User.id == user_id)) != "Fresh"
        with database.transaction() as writer:
            writer.execute(update(User).where(User.id == user_id).values(display_name="Fresh"))
        assert reader.scalar(select(User.display_name).where(User.id == user_id)) == "Fresh"


def test_a_write_in_a_read_only_session_raises_and_changes_nothing(database):
    with database.transaction() as session:
        user_id = make_user(session, email="read-only@example.test").id
    with database.session(read_only=True) as session:
        user = session.get(User, user_id)
        user.display_name = "Changed"
        with pytest.raises(RuntimeError, match="read-only"):
            session.flush()
        session.rollback()
        with pytest.raises(RuntimeError, match="read-only"):
            session.execute(update(User).where(User.id == user_id).values(display_name="X"))
    with database.session() as session:
        assert session.get(User, user_id).display_name != "Changed"
        assert session.get(User, user_id).display_name != "X"


def test_on_sqlite_a_read_only_session_reads_while_another_holds_the_write_lock(database):
    if database.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's write lock (PostgreSQL readers never wait for writers)")
    with database.transaction() as session:
        make_user(session, email="read-only-lock@example.test")
    writer = database.session()
    try:
        writer.execute(update(User).values(display_name=User.display_name))  # BEGIN IMMEDIATE
        with database.session(read_only=True) as reader:
            assert reader.scalar(select(User.id).where(User.email == "read-only-lock@example.test"))
    finally:
        writer.rollback()
        writer.close()


def test_on_sqlite_the_write_lock_s_holder_reads_while_every_pooled_connection_waits_for_it(
        database):
    """A dispatch holding SQLite's write lock reads the storage's configuration on a second
    connection. Read-only sessions drew from the writers' pool, and under eight test loops at
    once every other connection of it was held by a thread waiting for that lock at BEGIN
    IMMEDIATE: the read waited for the pool, the lock was never released, and everything
    stood still until the pool gave up after 30 s. Readers now have a pool of their own."""
    if database.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's write lock (PostgreSQL readers never wait for writers)")
    pool = database.engine.pool
    holder = database.session()
    holder.execute(update(User).values(display_name=User.display_name))  # BEGIN IMMEDIATE
    waiting = [threading.Thread(target=_write_once, args=(database,), daemon=True)
               for _ in range(pool.size() + pool._max_overflow - 1)]
    try:
        for thread in waiting:
            thread.start()
        wait_until(lambda: pool.checkedout() == pool.size() + pool._max_overflow, timeout=30)
        with database.session(read_only=True) as reader:  # waited for the pool: a TimeoutError
            assert reader.scalar(select(1)) == 1
    finally:
        holder.rollback()
        holder.close()
    for thread in waiting:
        thread.join(timeout=30)
        assert not thread.is_alive()


def _write_once(database: Database) -> None:
    """Take the write lock (waiting for it), then let it go."""
    with database.session() as session:
        session.execute(update(User).values(display_name=User.display_name))
        session.rollback()
