"""Pooled PostgreSQL connections are pinged before use only after an idle spell
(models.db.PING_IDLE_AFTER): a connection the server ended while it sat in the pool is replaced
without failing its user, and one that came back a moment ago costs no round trip."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

import models.db
from models.db import Database

pytestmark = pytest.mark.postgres


@pytest.fixture
def database(settings):
    """A Database with a pool of its own on the test database."""
    db = Database(settings)
    yield db
    db.dispose()


def _pings(monkeypatch, database) -> list[int]:
    pings: list[int] = []
    real = database.engine.dialect.do_ping

    def counted(dbapi_connection) -> bool:
        pings.append(1)
        return real(dbapi_connection)

    monkeypatch.setattr(database.engine.dialect, "do_ping", counted)
    return pings


def _backend_pid(database) -> int:
    with database.engine.connect() as connection:
        return connection.scalar(text("SELECT pg_backend_pid()"))


def test_a_connection_back_in_the_pool_a_moment_ago_is_used_without_a_ping(monkeypatch,
                                                                          database):
    first = _backend_pid(database)
    pings = _pings(monkeypatch, database)
    assert _backend_pid(database) == first
    assert pings == []


def test_a_connection_the_server_ended_while_idle_is_replaced_without_an_error(monkeypatch,
                                                                              database):
    monkeypatch.setattr(models.db, "PING_IDLE_AFTER", 0.05)
    ended = _backend_pid(database)
    outside = create_engine(database.engine.url, poolclass=NullPool)
    with outside.connect() as other:
        other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": ended})
    time.sleep(0.1)
    pings = _pings(monkeypatch, database)
    with database.engine.connect() as connection:
        assert connection.scalar(text("SELECT 1")) == 1
    assert pings  # the idle connections were pinged, the ended one replaced
