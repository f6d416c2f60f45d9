"""What SQL a block of code sends: `recorded(engine)` lists every statement executed on the
engine inside the block (`before_cursor_execute`, whichever code path sends it), without the
savepoints the test runtime wraps each session in, which are the test's and not the code's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.engine import Engine

TEST_ONLY = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


@contextmanager
def recorded(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements sent on `engine` inside the block, in order (the list fills as they
    run)."""
    statements: list[str] = []

    def note(_conn, _cursor, statement: str, *_args: object) -> None:
        if not statement.lstrip().upper().startswith(TEST_ONLY):
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", note)
