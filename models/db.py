"""The database: declarative base, column types, engine set-up and the session factory.

One `Database` per process. Sessions come from `Database.session()`; a session that commits
hands the ids of the events it recorded to `Database.on_events_committed` (the outbox: the
tasks layer installs a callback that enqueues them), and forgets them on rollback.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, DateTime, MetaData, Uuid, create_engine, event
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker
from sqlalchemy.types import TypeDecorator

from burnbox.settings import Settings
from burnbox.timeutil import utcnow

log = logging.getLogger(__name__)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

OUTBOX_KEY = "burnbox.outbox"


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC in Python, whatever the engine stores."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; use burnbox.timeutil.utcnow()")
        value = value.astimezone(UTC)
        # SQLite has no time zones: store naive UTC and re-attach UTC when reading.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base of every entity: naming conventions and the shared type map."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        uuid.UUID: Uuid(as_uuid=True),
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[str]: JSON(),
    }


class UUIDKey:
    """Mixin: a random UUID primary key named id."""

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)


class Timestamps:
    """Mixin: created_at and updated_at, maintained by the ORM."""

    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


def make_engine(settings: Settings) -> Engine:
    """An engine for the settings' database; SQLite gets WAL, a busy timeout and foreign keys."""
    url = settings.database_url
    if url.startswith("sqlite"):
        if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
            Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, echo=settings.database.echo,
                               connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        # pysqlite's own transaction handling breaks SAVEPOINT and defers BEGIN; take it over.
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN IMMEDIATE"))
        return engine
    return create_engine(url, echo=settings.database.echo, pool_size=settings.database.pool_size,
                         max_overflow=settings.database.pool_size, pool_pre_ping=True)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL: a committed transaction survives a power cut, so an SMTP 250 means stored.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


class Database:
    """Engine plus session factory for one process, with the outbox hand-off after commit."""

    def __init__(self, settings: Settings, engine: Engine | None = None) -> None:
        self.settings = settings
        self.engine = engine or make_engine(settings)
        self.on_events_committed: Callable[[list[uuid.UUID]], None] | None = None
        self._factory = self._make_factory(self.engine)

    def _make_factory(self, bind: Engine | Connection, **options: Any) -> sessionmaker[Session]:
        factory = sessionmaker(bind=bind, expire_on_commit=False, **options)
        event.listen(factory, "after_commit", self._after_commit)
        event.listen(factory, "after_soft_rollback", _forget_outbox)
        return factory

    def bind_to(self, connection: Connection) -> None:
        """Make every session join `connection`'s transaction through savepoints (tests)."""
        self._factory = self._make_factory(connection, join_transaction_mode="create_savepoint")

    def session(self) -> Session:
        """A new session; the caller commits or rolls back and closes it."""
        return self._factory()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session that commits when the block ends normally and rolls back otherwise."""
        session = self.session()
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def _after_commit(self, session: Session) -> None:
        if session.in_nested_transaction():
            # SQLAlchemy reports a released savepoint as a commit too, but nothing is committed
            # yet: a worker would find no row. The ids wait for the outermost commit.
            return
        ids = session.info.pop(OUTBOX_KEY, [])
        if not ids or self.on_events_committed is None:
            return
        try:
            self.on_events_committed(ids)
        except Exception:
            # The events are committed; the clock's outbox sweep enqueues them again later.
            log.exception("enqueueing committed events failed; the outbox sweep will retry",
                          extra={"event_ids": [str(i) for i in ids]})

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


@contextmanager
def pipelined(session: Session) -> Iterator[None]:
    """Send the session's statements without waiting for each one's result until the block
    ends: psycopg's pipeline mode on PostgreSQL, where every statement is otherwise a round
    trip; nothing changes on SQLite, whose statements never leave the process.

    Only for writes whose results nobody reads: a statement in the block returns no rows, and
    a statement the database refuses raises at the end of the block. Never commit inside the
    block: a commit gives the connection back to the pool while it is still in pipeline mode,
    and another thread may take it."""
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        yield
        return
    with connection.connection.driver_connection.pipeline():
        yield


def _forget_outbox(session: Session, previous_transaction: Any) -> None:
    # Only the outermost rollback forgets: ids from a rolled-back savepoint may stay, because
    # dispatching an event id that was never committed finds no row and does nothing.
    if previous_transaction.parent is None:
        session.info.pop(OUTBOX_KEY, None)


def remember_outbox(session: Session, event_id: uuid.UUID) -> None:
    """Note an event recorded in this session's transaction, to hand off after commit."""
    session.info.setdefault(OUTBOX_KEY, []).append(event_id)
