"""What SQL a block of code sends: `recorded(engine)` lists every statement executed on the
engine inside the block (`before_cursor_execute`, whichever code path sends it), without the
savepoints the test runtime wraps each session in, which are the test's and not the code's.
A statement read on a server-side cursor (PostgreSQL, `yield_per`) costs at least two round
trips more than it shows (its first FETCH and its CLOSE; its DECLARE is the statement): each
is listed too, so a count of statements is a count of round trips.
And what it sends to Redis: `redis_round_trips(monkeypatch)` lists every command (or
pipeline) sent on any Redis connection from then on, one item per round trip."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from psycopg import ServerCursor
from sqlalchemy import event
from sqlalchemy.engine import Engine

TEST_ONLY = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


@contextmanager
def recorded(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements sent on `engine` inside the block, in order (the list fills as they
    run)."""
    statements: list[str] = []

    def note(_conn, cursor, statement: str, *_args: object) -> None:
        if statement.lstrip().upper().startswith(TEST_ONLY):
            return
        statements.append(statement)
        if isinstance(cursor, ServerCursor):
            statements.extend([f"FETCH (server-side cursor of: {statement})",
                               f"CLOSE (server-side cursor of: {statement})"])

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", note)


def redis_round_trips(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The packed commands sent on every Redis connection from now on, one per round trip (a
    pipeline is one), until the test ends (the list fills as they go)."""
    sent: list[object] = []
    real = redis.connection.AbstractConnection.send_packed_command

    def counted(self: redis.connection.AbstractConnection, command: object, *args: object,
                **kwargs: object) -> None:
        sent.append(command)
        real(self, command, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    return sent
