"""The datastores' health as system administrators see it (`GET /admin/health`): the database,
the key-value store and the object storage, each probed once with its latency, and this
process's uptime.

A probe reports its failure instead of raising: one store down must not hide the others'
state. The failure is named by its exception type only (a driver's message can carry hosts
and user names).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import text

from burnbox.durations import format_duration
from models.runtime import Runtime

log = logging.getLogger(__name__)

OK = "ok"
# When this module was first imported: process start, near enough (the web process imports it
# while building the app).
_STARTED = time.monotonic()


@dataclass(frozen=True)
class Probe:
    """One datastore: `status` is OK or "error: <ExceptionType>", `latency_ms` how long the
    probe took, `backend` which kind of store answers (sqlite, postgresql; memory, redis;
    fs, s3)."""

    backend: str
    status: str
    latency_ms: float

    @property
    def ok(self) -> bool:
        """Whether the store answered."""
        return self.status == OK


def _timed(name: str, backend: str, probe: Callable[[], object]) -> Probe:
    started = time.perf_counter()
    try:
        probe()
        status = OK
    except Exception as exc:  # a health probe reports every failure instead of raising
        log.warning("health probe failed", extra={"datastore": name, "reason": str(exc)})
        status = f"error: {type(exc).__name__}"
    return Probe(backend=backend, status=status,
                 latency_ms=round((time.perf_counter() - started) * 1000, 3))


def _query_database(rt: Runtime) -> None:
    # Through Database.session(), the path every request takes, so a runtime bound to one
    # connection (tests) is probed on that connection. Read-only, because the probe runs while
    # the request's own session holds a transaction: on SQLite that one holds the write lock
    # (BEGIN IMMEDIATE), and a second write transaction from the same thread waited for it
    # until the busy timeout (30 s), then reported the database down. A read-only session's
    # statements begin no transaction and, in WAL mode, wait for no writer.
    with rt.db.session(read_only=True) as session:
        session.execute(text("SELECT 1"))


def probe_datastores(rt: Runtime) -> dict[str, Probe]:
    """Probe each datastore of the runtime: `database`, `key_value_store`, `object_storage`."""
    store = "redis" if rt.settings.redis.url else "memory"
    return {
        "database": _timed("database", rt.db.engine.dialect.name, lambda: _query_database(rt)),
        "key_value_store": _timed("key_value_store", store, rt.store.ping),
        "object_storage": _timed("object_storage", rt.settings.storage.backend,
                                 rt.storage.probe),
    }


def uptime_seconds() -> float:
    """Seconds since this process started (since this module was imported)."""
    return time.monotonic() - _STARTED


def uptime() -> str:
    """The uptime as a duration string such as `3h25m10s`."""
    return format_duration(timedelta(seconds=int(uptime_seconds())))
