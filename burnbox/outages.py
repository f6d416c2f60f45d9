"""Which failures mean a dependency cannot be reached: the one place that tells an outage (the
database, the key-value store or object storage is down, restarting or overloaded: retry later)
from a bug or bad data, which must not be hidden behind a retry.

A connection-level failure is an outage; anything the server answered about the data itself (a
constraint, a type, a syntax error, a missing table) is not.
"""

from __future__ import annotations

import errno
import sqlite3

import psycopg
import redis
from sqlalchemy import exc as sa_exc

from burnbox.kv import StoreUnavailable
from burnbox.storage import StorageUnavailable

DATABASE = "database"
KEY_VALUE_STORE = "key-value store"
STORAGE = "storage"

# SQLite primary result codes of a database that cannot be used right now: busy or locked past
# the busy timeout, an I/O error, a full disk, a file that cannot be opened, a lock protocol error.
_SQLITE_UNAVAILABLE = {5, 6, 10, 13, 14, 15}
# PostgreSQL SQLSTATEs: class 08 (connection exception), class 53 (insufficient resources: too
# many connections, disk full, out of memory), and the server shutting down or starting up.
_PG_UNAVAILABLE_CLASSES = ("08", "53")
_PG_UNAVAILABLE_STATES = {"57P01", "57P02", "57P03"}
# What the local filesystem under object storage answers when it is gone or cannot take writes
# (a lost network mount, a failing or full disk).
_FS_UNAVAILABLE = {errno.EIO, errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.ESTALE,
                   errno.ENOTCONN, errno.ETIMEDOUT, errno.EHOSTDOWN, errno.EHOSTUNREACH}


def unavailable_dependency(exc: BaseException) -> str | None:
    """The dependency `exc` shows to be unreachable ("database", "key-value store", "storage"),
    or None when `exc` is not an outage."""
    if isinstance(exc, StoreUnavailable | redis.ConnectionError | redis.TimeoutError):
        return KEY_VALUE_STORE
    if isinstance(exc, StorageUnavailable):
        return STORAGE
    if _database_unavailable(exc):
        return DATABASE
    if isinstance(exc, OSError) and exc.errno in _FS_UNAVAILABLE:
        return STORAGE
    return None


def _database_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, sa_exc.DisconnectionError | sa_exc.TimeoutError):
        return True  # the pool could not (re)connect, or had no free connection in time
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated:  # SQLAlchemy's dialect judged it a disconnect
            return True
        exc = exc.orig
    if isinstance(exc, psycopg.InterfaceError):
        return True  # the connection is closed or broken
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        # No SQLSTATE: the failure happened on our side of the wire (refused, reset, timed out).
        return (state is None or state.startswith(_PG_UNAVAILABLE_CLASSES)
                or state in _PG_UNAVAILABLE_STATES)
    if isinstance(exc, sqlite3.Error):
        return ((getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF) in _SQLITE_UNAVAILABLE
    return False


# SQLite's primary result code for a full database or disk; PostgreSQL's disk_full SQLSTATE.
_SQLITE_FULL = 13
_PG_DISK_FULL = "53100"


def disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from or during, says a disk is full: the
    local filesystem's ENOSPC or EDQUOT (object storage), SQLite's SQLITE_FULL, PostgreSQL's
    disk_full. A full disk is an outage like the others (`unavailable_dependency`), but the
    one an operator fixes by freeing space, so mailin names it (`452 4.3.1`, one log line)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if (isinstance(current, sqlite3.Error)
                and ((getattr(current, "sqlite_errorcode", 0) or 0) & 0xFF) == _SQLITE_FULL):
            return True
        if isinstance(current, psycopg.Error) and current.sqlstate == _PG_DISK_FULL:
            return True
        if isinstance(current, sa_exc.DBAPIError) and current.orig is not None:
            current = current.orig
            continue
        current = current.__cause__ or current.__context__
    return False
