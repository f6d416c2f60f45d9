"""The database: declarative base, column types, engine set-up, the session factory, and the
unit-of-work helpers of the faces.

One `Database` per process; sessions come from `Database.session()`. The face that opened a
session (a view, an actor, a command, the clock, mailin's committer) owns its transaction and
commits it; domain actions never do (docs/architecture.md, "Transactions and after-commit").
What must wait for the commit registers with `after_commit`; the revisions the transaction
moved, the ids of the events it recorded (the outbox), the webhook deliveries it created
(`remember_deliveries`) and the changes of stored mail it made (`remember_mail_change`) go to
the process's hand-offs (`Database.handoffs`,
`models.handoffs.HandOffs`), by the same listener: all run once the outermost transaction
commits, never when a savepoint is released, and are dropped on rollback.
"""

from __future__ import annotations

import logging
import time
import uuid
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from functools import cache, partial
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

from psycopg import pq
from sqlalchemy import JSON, DateTime, MetaData, Table, Uuid, create_engine, event, insert
from sqlalchemy import inspect as sqlalchemy_inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Dialect, Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    ORMExecuteState,
    Session,
    SessionTransaction,
    make_transient_to_detached,
    mapped_column,
    sessionmaker,
)
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.types import TypeDecorator

from burnbox.kv import make_store
from burnbox.outbound_guard import OutboundPolicy, write_transaction_began
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.caching import (
    UNMOVED_BY_CASCADES,
    WRITES_ROWS,
    family_tables,
    is_family_parent,
    new_revisions,
    revisions_moved_by,
    row_revision_of,
)
from models.errors import DomainError
from models.handoffs import HandOffs, MailChange

log = logging.getLogger(__name__)

E = TypeVar("E")

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

OUTBOX_KEY = "burnbox.outbox"
# Webhook deliveries the transaction created whose first attempt is to be sent after commit.
DELIVERIES_KEY = "burnbox.deliveries"
AFTER_COMMIT_KEY = "burnbox.after_commit"
# The changes of stored mail the transaction noted (`remember_mail_change`), each with the
# transaction or savepoint it was noted in.
MAIL_CHANGES_KEY = "burnbox.mail_changes"
WROTE_KEY = "burnbox.wrote"
# The tables whose rows the session's transaction inserted, updated or deleted (see
# models.caching: committing them moves the revisions of the caches built on them).
WRITTEN_TABLES_KEY = "burnbox.written_tables"
# The row revisions (models.caching.RowRevisions) the transaction's writes named.
WRITTEN_ROWS_KEY = "burnbox.written_rows"
# Marks a session of `Database.session(read_only=True)`.
READ_ONLY_KEY = "burnbox.read_only"
# The outbound guard's record of the session's open write transaction (`Database._note_begin`).
OPEN_WRITE_KEY = "burnbox.open_write"
# The Database whose factory made the session: the factory's listeners are plain functions that
# find it here (`_make_factory` says why).
DATABASE_KEY = "burnbox.database"
# Execution option of a write statement that changes no column a cache holds (the API keys'
# usage counters, written every few seconds): it moves no revision.
LEAVES_CACHES = "burnbox_leaves_caches"

_unit_of_work: ContextVar[Session | None] = ContextVar("unit_of_work", default=None)
# The after-commit steps a committing thread holds for later (`Database.holding_hand_offs`).
_held_steps: ContextVar[list[Callable[[], None]] | None] = ContextVar("held_steps",
                                                                  default=None)


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
        return _sqlite_engine(url, echo=settings.database.echo)
    engine = create_engine(url, echo=settings.database.echo,
                           pool_size=settings.database.pool_size,
                           max_overflow=settings.database.pool_size)
    event.listen(engine, "checkout", partial(_ping_if_idle, engine.dialect))
    event.listen(engine, "checkin", _note_checkin)
    return engine


# A pooled connection idle for longer than this is pinged before use (a `SELECT 1`), so one the
# server dropped meanwhile (a restart, an idle timeout) is replaced instead of failing the
# request. A connection back in the pool sooner is used as it is: under load every checkout
# would otherwise pay a round trip, and a server that went away is noticed by the first
# statement that fails, which ends every older pooled connection with it (the pool's
# invalidation), so the requests after it get new ones.
PING_IDLE_AFTER = 1.0
_CHECKED_IN_AT = "burnbox.checked_in_at"


def _note_checkin(_dbapi_connection: Any, record: Any) -> None:
    record.info[_CHECKED_IN_AT] = time.monotonic()


def _ping_if_idle(dialect: Dialect, dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    checked_in = record.info.get(_CHECKED_IN_AT)
    if checked_in is not None and time.monotonic() - checked_in < PING_IDLE_AFTER:
        return
    try:
        dialect.do_ping(dbapi_connection)
    except dialect.loaded_dbapi.Error as exc:
        # The pool discards the connection and checks out another (a new one if need be).
        raise DisconnectionError(str(exc)) from exc


# Execution option of a connection that only reads (see `_sqlite_begin`).
SQLITE_READ_ONLY = "burnbox_sqlite_read_only"


def _sqlite_engine(url: str | URL, *, echo: bool) -> Engine:
    engine = create_engine(url, echo=echo,
                           connect_args={"check_same_thread": False, "timeout": 30})
    event.listen(engine, "connect", _sqlite_pragmas)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _reading(engine: Engine) -> tuple[Engine, Engine | None]:
    """`engine` as read-only sessions use it (`Database.session(read_only=True)`), and the
    engine of their own to dispose, if any: in autocommit on PostgreSQL, on the same pool;
    each statement a read of its own on SQLite (`_sqlite_begin`), on a pool of their own (one
    in-memory database, whose connections each hold a database of their own, keeps its one
    pool).

    A thread that holds SQLite's write lock may still read on a second connection (the
    object storage's look at its configuration, made from inside a dispatch). From the one
    pool, that read waited for a connection while every other one was held by a thread
    waiting for that same lock, and nobody moved until the pool gave up after 30 s (seen as
    a `POST /inboxes` unanswered for 30 s under eight test loops at once). Readers never wait
    for the lock, so a pool only they use always frees up."""
    if engine.dialect.name != "sqlite":
        return engine.execution_options(isolation_level="AUTOCOMMIT"), None
    if engine.url.database in (None, "", ":memory:"):
        return engine.execution_options(**{SQLITE_READ_ONLY: True}), None
    own = _sqlite_engine(engine.url, echo=bool(engine.echo))
    return own.execution_options(**{SQLITE_READ_ONLY: True}), own


def _sqlite_begin(conn: Connection) -> None:
    """Begin as we mean it: pysqlite's own transaction handling breaks SAVEPOINT and defers
    BEGIN, so every transaction takes the write lock at once (BEGIN IMMEDIATE), except on a
    connection marked `SQLITE_READ_ONLY`, which begins nothing: each of its statements is a
    read of its own (the connections run with pysqlite's `isolation_level` None), which in WAL
    mode waits for no writer and sees what was committed when it began, as a read-only
    session's statement does in autocommit on PostgreSQL. A thread that holds the write lock
    can then still read on a second connection (the object storage's look at its
    configuration, made from inside a dispatch), where BEGIN IMMEDIATE would wait for itself
    until the busy timeout (30 s).

    Why not a plain BEGIN for those: its snapshot is taken at the transaction's first read
    and kept, so a request that read (its permission check), then began to listen for new
    mail, then looked for it, missed mail committed between the first read and the listening,
    and no message would wake it (a wait slept until its deadline)."""
    if not conn.get_execution_options().get(SQLITE_READ_ONLY, False):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL: a committed transaction survives a power cut, so an SMTP 250 means stored.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _after_commit(session: Session) -> None:
    session.info[DATABASE_KEY]._after_commit(session)


def _note_begin(session: Session, transaction: SessionTransaction,
                connection: Connection) -> None:
    session.info[DATABASE_KEY]._note_begin(session, transaction, connection)


class Database:
    """Engine plus session factory for one process, with the after-commit steps and the outbox
    hand-off."""

    def __init__(self, settings: Settings, engine: Engine | None = None) -> None:
        self.settings = settings
        self.engine = engine or make_engine(settings)
        # Where this process's commits hand their results on (models.handoffs): the Runtime
        # sets `revisions_moved`, the process's composition root the rest.
        self.handoffs = HandOffs()
        # Revisions a commit could not move (the store unreachable at that moment): moved
        # with the next commit's, so other processes' caches of that change do not wait for
        # their entries' maximum age.
        self._unmoved: set[str] = set()
        # Network reached inside a write transaction: raised in the test environment, so the
        # test that reaches it fails; logged once per adapter elsewhere.
        self.outbound_policy = OutboundPolicy(strict=settings.env == "test")
        self._factory = self._make_factory(self.engine)
        reading, self._read_engine = _reading(self.engine)
        self._read_factory = self._make_factory(reading)

    @property
    def engines(self) -> tuple[Engine, ...]:
        """The engines this database's sessions use: the one, and on an SQLite file the pool
        of its own that read-only sessions read through (`_reading`)."""
        return (self.engine,) if self._read_engine is None else (self.engine, self._read_engine)

    def _make_factory(self, bind: Engine | Connection, **options: Any) -> sessionmaker[Session]:
        # The listeners are module functions that find this Database in the session's info,
        # not bound methods: SQLAlchemy keeps a factory's listeners in a weak-keyed map whose
        # key is the factory's Session class, and a bound method there held the Database, its
        # factory and that class for good: every Database a process made (one per test, each
        # with its Redis connections) lived until the process ended.
        factory = sessionmaker(bind=bind, expire_on_commit=False, info={DATABASE_KEY: self},
                               **options)
        event.listen(factory, "before_flush", _refuse_read_only_flush)
        event.listen(factory, "after_flush", _note_flush)
        event.listen(factory, "do_orm_execute", _note_statement)
        event.listen(factory, "after_commit", _after_commit)
        event.listen(factory, "after_soft_rollback", _forget_rolled_back)
        event.listen(factory, "after_begin", _note_begin)
        event.listen(factory, "after_transaction_end", _note_end)
        return factory

    def _note_begin(self, session: Session, transaction: SessionTransaction,
                    _connection: Connection) -> None:
        """Tell the outbound guard that a write transaction is open in this context (see
        `burnbox.outbound_guard`); in the test environment, the network reached inside it
        raises."""
        if transaction.parent is None and not session.info.get(READ_ONLY_KEY):
            # A weak reference: the guard's record must not keep a dropped session alive.
            owner = weakref.ref(session)
            session.info[OPEN_WRITE_KEY] = write_transaction_began(
                self.outbound_policy, partial(_still_in_transaction, owner))

    def bind_to(self, connection: Connection) -> None:
        """Make every session join `connection`'s transaction through savepoints (tests)."""
        self._factory = self._make_factory(connection, join_transaction_mode="create_savepoint")
        self._read_factory = self._factory  # reads join the test's transaction as well

    def session(self, *, read_only: bool = False) -> Session:
        """A new session; the caller commits or rolls back and closes it.

        `read_only` is for a unit of work that only reads (the hot GETs): on PostgreSQL its
        statements run in autocommit, without the `BEGIN` and `ROLLBACK` round trips (each
        statement sees what was committed when it began, as it does under READ COMMITTED in a
        transaction); on SQLite likewise each statement is a read of its own, which waits for
        no writer. A write in it raises RuntimeError before anything is sent: in autocommit it
        would stick at once."""
        if not read_only:
            return self._factory()
        session = self._read_factory()
        session.info[READ_ONLY_KEY] = True
        return session

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session that is the current unit of work for the block and commits when the block
        ends normally. An exception rolls it back, except a DomainError that keeps its changes
        (`keeps_changes`), which commits them before it propagates."""
        session = self.session()
        token = enter_unit_of_work(session)
        try:
            yield session
            session.commit()
        except BaseException as exc:
            if isinstance(exc, DomainError) and exc.keeps_changes:
                session.commit()
            else:
                session.rollback()
            raise
        finally:
            leave_unit_of_work(token)
            session.close()

    def _after_commit(self, session: Session) -> None:
        if session.in_nested_transaction():
            # SQLAlchemy reports a released savepoint as a commit too, but nothing is committed
            # yet: a worker would find no row. The steps wait for the outermost commit.
            return
        session.info.pop(WROTE_KEY, None)
        steps = [step for _, step in session.info.pop(AFTER_COMMIT_KEY, [])]
        handoffs = self.handoffs
        changes = [change for _, change in session.info.pop(MAIL_CHANGES_KEY, [])]
        if changes and handoffs.mail_changed is not None:
            steps.append(partial(handoffs.mail_changed, changes))
        deliveries = session.info.pop(DELIVERIES_KEY, None)
        if deliveries and handoffs.deliveries_committed is not None:
            steps.insert(0, partial(handoffs.deliveries_committed, deliveries))
        ids = session.info.pop(OUTBOX_KEY, None)
        if ids and handoffs.events_committed is not None:
            steps.insert(0, partial(handoffs.events_committed, ids))
        moved = [*revisions_moved_by(session.info.pop(WRITTEN_TABLES_KEY, ())),
                 *sorted(session.info.pop(WRITTEN_ROWS_KEY, ()))]
        if moved and handoffs.revisions_moved is None and self.settings.redis.url:
            # A command that opened the database without a Runtime (`burnbox bootstrap`,
            # `burnbox create-admin`) still tells the web processes through Redis.
            handoffs.revisions_moved = partial(new_revisions, make_store(self.settings))
        if moved and handoffs.revisions_moved is not None:
            # First, and never held: a request that follows this change (or its live push, or
            # the SMTP 250 of a committer that holds the rest) must not be answered from a
            # cache of what it changed.
            self.hand_on([partial(self._move_revisions, moved)])
        held = _held_steps.get()
        if held is None:
            self.hand_on(steps)
        else:
            held.extend(steps)

    @contextmanager
    def holding_hand_offs(self) -> Iterator[list[Callable[[], None]]]:
        """For the block, the commits of this thread move the caches' revisions as usual but
        hold their other after-commit steps (events, first attempts, registered steps such as
        the live push of new mail) in the list yielded, in order, instead of running them; the
        caller runs them with `hand_on` once it has done what should not wait for them
        (mailin's committer: answering the SMTP sessions). Held steps are at-least-once like
        the others: if the process dies before they run, the clock's sweeps hand the events
        and deliveries on, and the worker's fan-out of those events makes the live push."""
        held: list[Callable[[], None]] = []
        token = _held_steps.set(held)
        try:
            yield held
        finally:
            _held_steps.reset(token)

    def hand_on(self, steps: list[Callable[[], None]]) -> None:
        """Run after-commit steps in order; a step that fails is logged, and the rest run."""
        for step in steps:
            try:
                step()
            except Exception:
                # The transaction is committed: raising now would report a change as failed
                # that was made. The clock's sweeps catch up (undispatched events, overdue
                # webhook deliveries); a lost live push is only a missed notice.
                log.exception("an after-commit step failed; the clock's sweeps will catch up",
                              extra={"step": repr(step)})

    def _move_revisions(self, keys: list[str]) -> None:
        """Move `keys` and whatever an earlier commit of this process could not move; keep
        them all for the next commit when the store cannot be reached (and raise)."""
        move = self.handoffs.revisions_moved
        assert move is not None
        pending, self._unmoved = self._unmoved, set()
        try:
            move([*keys, *sorted(pending - set(keys))])
        except Exception:
            self._unmoved |= pending | set(keys)
            raise

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
        if self._read_engine is not None:
            self._read_engine.dispose()


def detached_copy(entity: E) -> E:
    """A copy of a loaded entity's columns, detached, with its identity: for a per-process
    cache, whose entries outlive the session that read them and are shared by every request.
    `Session.merge(copy, load=False)` makes it an entity of a session without a query."""
    mapper = sqlalchemy_inspect(entity).mapper
    copy = mapper.class_manager.new_instance()
    for attribute in mapper.column_attrs:
        set_committed_value(copy, attribute.key, getattr(entity, attribute.key))
    make_transient_to_detached(copy)
    return copy  # type: ignore[no-any-return]


def enter_unit_of_work(session: Session) -> Token[Session | None]:
    """Make `session` the current unit of work of this thread (or greenlet) until
    `leave_unit_of_work(token)`: actors sent meanwhile wait for its commit when it wrote."""
    return _unit_of_work.set(session)


def leave_unit_of_work(token: Token[Session | None]) -> None:
    """Undo the `enter_unit_of_work` that returned `token`."""
    _unit_of_work.reset(token)


def current_unit_of_work() -> Session | None:
    """The session of the face running in this thread (request, actor message, command), if
    any."""
    return _unit_of_work.get()


def conflict_insert(dialect: str) -> Callable[[Any], Any]:
    """The `insert` of `dialect` ("postgresql" or "sqlite"), whose statements take ON CONFLICT
    (`on_conflict_do_nothing`, `on_conflict_do_update`): both backends spell it alike, but
    SQLAlchemy keeps it in each dialect's own `insert`."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def insert_ignoring_duplicates(session: Session, table: Any) -> Any:
    """An INSERT into `table` that skips rows whose unique key is taken (the dialect's own
    ON CONFLICT DO NOTHING: a row made meanwhile by another transaction is no error)."""
    return conflict_insert(session.get_bind().dialect.name)(table).on_conflict_do_nothing()


def after_commit(session: Session, callback: Callable[[], None]) -> None:
    """Run `callback` once the session's outermost transaction commits; never if it, or the
    savepoint open now, rolls back.

    A failing callback is logged, not raised: the transaction is already committed, and the
    clock's sweeps find whatever was not sent (undispatched events, overdue deliveries)."""
    owner = session.get_nested_transaction() or session.get_transaction()
    session.info.setdefault(AFTER_COMMIT_KEY, []).append((owner, callback))


def has_writes(session: Session) -> bool:
    """True when the session's transaction wrote (a flush or an INSERT, UPDATE or DELETE since
    it began) or holds objects added, changed or deleted and not flushed yet."""
    return bool(session.info.get(WROTE_KEY) or session.new or session.dirty or session.deleted)


def end_read_only_transaction(session: Session) -> None:
    """End the session's transaction before slow work (a password hash), so it holds no lock
    meanwhile: on SQLite every transaction holds the write lock (BEGIN IMMEDIATE), and nothing
    should stay open on PostgreSQL either. Domain actions may end a transaction only this way:
    raise RuntimeError when it wrote, since ending it would throw the face's writes away."""
    if has_writes(session):
        raise RuntimeError("only a transaction that has not written may be ended by an action")
    session.rollback()


@contextmanager
def pipelined(session: Session) -> Iterator[None]:
    """Send the session's statements without waiting for each one's result until the block
    ends: psycopg's pipeline mode on PostgreSQL, where every statement is otherwise a round
    trip; nothing changes on SQLite, whose statements never leave the process.

    Only for writes whose results nobody reads: a statement in the block returns no rows, and
    a statement the database refuses raises at the end of the block. Never commit inside the
    block: a commit gives the connection back to the pool while it is still in pipeline mode,
    and another thread may take it. Inside another block, the statements join that block's (a
    nested psycopg block would wait for what is queued when it opens, and again when it
    closes)."""
    connection = session.connection()
    if connection.dialect.name != "postgresql" or _in_pipeline(connection):
        yield
        return
    with connection.connection.driver_connection.pipeline():
        yield


def _in_pipeline(connection: Connection) -> bool:
    """Whether the PostgreSQL connection is in psycopg's pipeline mode (`pipelined`)."""
    return (connection.connection.driver_connection.pgconn.pipeline_status
            != pq.PipelineStatus.OFF)


def insert_rows(session: Session, table: Table, rows: Sequence[Mapping[str, Any]],
                execution_options: Mapping[str, Any] | None = None) -> None:
    """INSERT `rows` into `table`, reading nothing back, as `session.execute(insert(table),
    rows, execution_options=...)` does: the same values (each column's bind processing), the
    same notes for the unit of work (`has_writes`, the caches' revisions, `WRITES_ROWS` in the
    options). On PostgreSQL it is one COPY: an INSERT of many rows costs psycopg a statement,
    a parameter dump and a result per row, and PostgreSQL an executor start per row; a COPY
    streams the rows and answers once. Elsewhere it is that INSERT.

    Every row has the same keys. A column the rows leave out gets its default as the INSERT
    would give it: the database's own, or the Python-side one (a scalar, or a callable called
    per row), which a COPY does not know and which is added to each row here, so a new column
    with a default needs no change of the callers (ValueError for a default that is a SQL
    expression or a sequence). Inside `pipelined` it is that INSERT too (a COPY cannot run in
    pipeline mode): queued with the block's other statements, it costs no round trip of its
    own, where a COPY costs two. The session's statement events and echo do not see a COPY."""
    if not rows:
        return
    names = tuple(rows[0])
    defaults = _python_defaults(table, names)
    options = execution_options or {}
    connection = session.connection()
    dialect = connection.dialect
    if dialect.name != "postgresql" or _in_pipeline(connection):
        session.execute(insert(table), rows, execution_options=options)
        return
    if defaults:
        rows = [{**row, **{name: default.arg(None) if default.is_callable else default.arg
                           for name, default in defaults}} for row in rows]
        names = tuple(rows[0])
    statement, processors = _copy_plan(dialect, table, names)
    _note_statement_writes(session, table.name, is_delete=False, options=options)
    cursor = connection.connection.driver_connection.cursor()
    with cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row([value if process is None else process(value)
                            for value, process in zip(row.values(), processors, strict=True)])


@cache
def _python_defaults(table: Table, names: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    """The Python-side defaults of the columns of `table` that `names` leave out, by column
    name; ValueError for one that only the INSERT statement can compute (SQL, a sequence)."""
    missing = [column for column in table.columns
               if column.default is not None and column.name not in names]
    unusable = sorted(column.name for column in missing
                      if not (column.default.is_scalar or column.default.is_callable))
    if unusable:
        raise ValueError(f"rows for {table.name} lack columns whose defaults are SQL: {unusable}")
    return tuple((column.name, column.default) for column in missing)


@cache
def _copy_plan(dialect: Dialect, table: Table, names: tuple[str, ...]
               ) -> tuple[str, list[Callable[[Any], Any] | None]]:
    """The COPY statement for these columns of `table` and each column's bind processor."""
    quote = dialect.identifier_preparer.quote
    statement = (f"COPY {dialect.identifier_preparer.format_table(table)} "
                 f"({', '.join(quote(name) for name in names)}) FROM STDIN")
    return statement, [table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
                       for name in names]


def _note_flush(session: Session, _flush_context: Any) -> None:
    session.info[WROTE_KEY] = True
    # After a flush the session still lists what it flushed as new, dirty and deleted.
    flushed = {(instance.__table__.name, getattr(instance, "id", None)): instance
               for instance in chain(session.new, session.dirty, session.deleted)}
    new = session.new
    for instance in chain(new, session.dirty):
        table = instance.__table__.name
        if instance in new and is_family_parent(table):
            # Nothing of a new parent row is cached anywhere (caching.is_family_parent).
            _note_written(session.info, {table} - family_tables(table), [], frozenset())
            continue
        row, family = row_revision_of(table, instance, flushed)
        _note_written(session.info, {table}, [row] if row else [], family)
    for instance in session.deleted:
        table = instance.__table__.name
        row, family = row_revision_of(table, instance, flushed)
        _note_written(session.info, noted_on_delete(table), [row] if row else [], family)


def _note_written(info: dict[str, Any], tables: Collection[str], rows: Collection[str],
                  family: frozenset[str]) -> None:
    """Note a write to `tables`, moving the revisions declared on them after the commit; one
    that named its `rows` (row revisions of `family`) moves theirs instead of the family's
    tables' whole revision."""
    if rows:
        info.setdefault(WRITTEN_ROWS_KEY, set()).update(rows)
        tables = set(tables) - family
    info.setdefault(WRITTEN_TABLES_KEY, set()).update(tables)


def _refuse_read_only_flush(session: Session, _flush_context: Any, _instances: Any) -> None:
    if session.info.get(READ_ONLY_KEY) and (session.new or session.deleted or any(
            session.is_modified(instance) for instance in session.dirty)):
        raise RuntimeError("a read-only session may not write")


def _note_statement(state: ORMExecuteState) -> None:
    # Bulk statements (mail ingest's INSERTs, cleanup's DELETEs) write without a flush.
    if state.is_insert or state.is_update or state.is_delete:
        name = getattr(getattr(state.statement, "table", None), "name", None)
        _note_statement_writes(state.session, name, is_delete=state.is_delete,
                               options=state.execution_options)


def _note_statement_writes(session: Session, table: str | None, *, is_delete: bool,
                           options: Mapping[str, Any]) -> None:
    """Note a statement writing `table` (None: unknown) with these execution options."""
    if session.info.get(READ_ONLY_KEY):
        raise RuntimeError("a read-only session may not write")
    session.info[WROTE_KEY] = True
    if table is not None and not options.get(LEAVES_CACHES, False):
        _note_written(session.info, noted_on_delete(table) if is_delete else {table},
                      options.get(WRITES_ROWS, ()), family_tables(table))


@cache
def deleted_with(table: str) -> frozenset[str]:
    """`table` and every table whose rows a deletion from it deletes or changes through a
    foreign key's ON DELETE (CASCADE, SET NULL, SET DEFAULT), followed through the cascades:
    the database writes those rows without the session seeing them."""
    reached, pending = {table}, [table]
    while pending:
        parent = pending.pop()
        for child in Base.metadata.tables.values():
            if child.name not in reached and any(
                    key.column.table.name == parent
                    and (key.ondelete or "NO ACTION").upper() not in ("NO ACTION", "RESTRICT")
                    for key in child.foreign_keys):
                reached.add(child.name)
                pending.append(child.name)
    return frozenset(reached)


@cache
def noted_on_delete(table: str) -> frozenset[str]:
    """The tables a deletion from `table` counts as written for the caches' revisions: itself
    and those its cascades reach, but the ones a cascade leaves exact
    (`models.caching.UNMOVED_BY_CASCADES`)."""
    return frozenset({table} | (deleted_with(table) - UNMOVED_BY_CASCADES))


def _forget_rolled_back(session: Session, previous_transaction: SessionTransaction) -> None:
    if previous_transaction.parent is None:
        for key in (AFTER_COMMIT_KEY, OUTBOX_KEY, DELIVERIES_KEY, WROTE_KEY,
                    WRITTEN_TABLES_KEY, WRITTEN_ROWS_KEY, MAIL_CHANGES_KEY):
            session.info.pop(key, None)
        return
    # A savepoint rolled back: the steps registered and the changes noted inside it go with
    # it (a stream must not announce a change that was undone). Event and delivery ids may
    # stay, because dispatching an event or claiming a delivery that was never committed
    # finds no row and does nothing.
    for key in (AFTER_COMMIT_KEY, MAIL_CHANGES_KEY):
        noted = session.info.get(key)
        if noted:
            session.info[key] = [(owner, item) for owner, item in noted
                                 if not _within(owner, previous_transaction)]


def _within(owner: SessionTransaction | None, transaction: SessionTransaction) -> bool:
    """True when `owner` is `transaction` or a savepoint opened inside it."""
    while owner is not None:
        if owner is transaction:
            return True
        owner = owner.parent
    return False


def remember_outbox(session: Session, event_id: uuid.UUID) -> None:
    """Note an event recorded in this session's transaction, to hand off after commit."""
    session.info.setdefault(OUTBOX_KEY, []).append(event_id)


def remember_mail_change(session: Session, change: MailChange) -> None:
    """Note a change of stored mail made in this session's transaction: the process's
    `mail_changed` hand-off gets every change of the transaction once it commits (none of a
    savepoint that rolled back)."""
    owner = session.get_nested_transaction() or session.get_transaction()
    session.info.setdefault(MAIL_CHANGES_KEY, []).append((owner, change))


def remember_deliveries(session: Session, created: dict[uuid.UUID, uuid.UUID]) -> None:
    """Note webhook deliveries (delivery id -> webhook id) created in this session's
    transaction, whose first attempts are sent after commit."""
    session.info.setdefault(DELIVERIES_KEY, {}).update(created)


def _still_in_transaction(owner: weakref.ReferenceType[Session]) -> bool:
    session = owner()
    return session is not None and session.in_transaction()


def _note_end(session: Session, transaction: SessionTransaction) -> None:
    """The session's transaction ended (commit, rollback or close): the outbound guard stops
    counting it."""
    if transaction.parent is None:
        opened = session.info.pop(OPEN_WRITE_KEY, None)
        if opened is not None:
            opened.end()
