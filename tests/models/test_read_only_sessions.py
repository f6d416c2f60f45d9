"""Read-only sessions (`Database.session(read_only=True)`, the hot GETs' unit of work): on
PostgreSQL their statements run in autocommit, so no transaction is open and no BEGIN or
ROLLBACK round trip is paid; on SQLite they begin a plain read that waits for no writer; and a
write in one raises before anything reaches the database."""

from __future__ import annotations

import pytest
from psycopg.pq import TransactionStatus
from sqlalchemy import select, update

from models.db import Database
from models.identity.users import User
from tests.factories.identity import make_user


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
