"""The Dramatiq broker: Redis in production, the in-process StubBroker in embedded mode and tests.

What actor modules import, and nothing else: they declare their actors with `actor(...)` below,
which binds them to a placeholder StubBroker so that importing them connects to nothing, and
read the runtime and the message's session from here. `tasks.wiring.setup_broker(runtime)`
builds the broker the settings choose and moves every declared actor onto it (`bind_actors`);
this module imports no actor module, so no import circle runs through it.

Each processed message is one unit of work, as a request is: `DbSessionMiddleware` opens its
database session before the actor runs and closes it afterwards (rolling back whatever was not
committed), and the actor's call commits it when the actor returns (`CommitAwareActor.__call__`),
so a commit that fails is the actor's failure, retried as any other. Actors never commit by hand;
a job that must commit in steps (a lease before any byte goes out, batches that bound their
locks) is declared so by name, `actor(commits_in_steps="why")`, and commits a step with
`commit_step(session)`.

A message sent while the current unit of work (the request's session, the message's, a
`Database.transaction()`) holds writes waits for its commit, and is never sent if it rolls back:
no caller has to remember to send after committing. Sent from anywhere else (no unit of work, or
one that only read), it goes at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextvars import Token
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import q_name
from dramatiq.middleware import CurrentMessage, Middleware, TimeLimit, default_middleware
from sqlalchemy.orm import Session

from burnbox.logs import request_id
from burnbox.patches.dramatiq import HoldingStubBroker, ProcessTimeLimit
from burnbox.timeutil import utcnow
from models.db import (
    after_commit,
    current_unit_of_work,
    enter_unit_of_work,
    has_writes,
    leave_unit_of_work,
)
from models.errors import DomainError
from models.runtime import Runtime

log = logging.getLogger(__name__)



_TIME_LIMIT = ProcessTimeLimit()


def in_process_broker() -> StubBroker:
    """A booted StubBroker with dramatiq's default middleware, sharing the process's one
    TimeLimit (`ProcessTimeLimit`), its consumers `HoldingStubConsumer`s."""
    broker = HoldingStubBroker(middleware=[_TIME_LIMIT if kind is TimeLimit else kind()
                                           for kind in default_middleware])
    broker.emit_after("process_boot")
    return broker


_PLACEHOLDER = in_process_broker()

_runtime: Runtime | None = None
_lock = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])

# The actors that commit in steps, by name, with why (`actor(commits_in_steps=...)`).
_STEP_COMMITTING: dict[str, str] = {}


class _MessageUnit(threading.local):
    """The unit of work of the message this worker thread processes (`DbSessionMiddleware`)."""

    session: Session | None = None
    token: Token[Session | None] | None = None
    actor_name: str | None = None
    # True once the actor's call has begun: a call of another actor inside it (a plain function
    # call, not a message) neither commits nor ends the message's unit of work.
    entered = False


_message_unit = _MessageUnit()


class CommitAwareActor(dramatiq.Actor):
    """An actor whose messages, sent while the current unit of work holds writes, are enqueued
    only once it commits (and dropped if it rolls back), and whose call commits the message's
    unit of work when it returns."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the actor; when it runs a worker's message, commit that message's unit of work
        once it returns, or a DomainError that keeps its changes before it propagates.

        The commit is part of the call, not of the middleware's `after_process_message`:
        dramatiq logs and swallows what a middleware's after-hook raises, so a commit failing
        there would acknowledge the message as processed, its effects lost. Failing here, it
        is the actor's failure: the middleware rolls the session back, and the message is
        retried as the actor's options say (a job without retries runs again at its next
        period), the retry seeing nothing of this run, whose sends were never enqueued."""
        unit = _message_unit
        if unit.session is None or unit.entered or unit.actor_name != self.actor_name:
            return super().__call__(*args, **kwargs)
        unit.entered = True
        try:
            result = super().__call__(*args, **kwargs)
        except DomainError as exc:
            if exc.keeps_changes:
                _commit(unit.session)
            raise
        _commit(unit.session)
        return result

    def send_with_options(self, *, args: tuple[Any, ...] = (),
                          kwargs: dict[str, Any] | None = None,
                          delay: timedelta | int | None = None,
                          **options: Any) -> dramatiq.Message[Any]:
        """Enqueue a message now, or after the commit of the current unit of work when it holds
        writes: the message may be about them, and a worker must find them committed. A unit
        of work that only read may never commit, so its messages go at once."""
        unit = current_unit_of_work()
        if unit is None or not has_writes(unit):
            return super().send_with_options(args=args, kwargs=kwargs, delay=delay, **options)
        if isinstance(delay, timedelta):
            delay = int(delay.total_seconds() * 1000)
        message = self.message_with_options(args=args, kwargs=kwargs, **options)
        after_commit(unit, lambda: self.broker.enqueue(message, delay=delay))
        return message


def actor(*, commits_in_steps: str | None = None,
          **options: Any) -> Callable[[F], dramatiq.Actor]:
    """Declare a commit-aware Dramatiq actor without touching any real broker (see the module
    docstring). `commits_in_steps` says why the actor must commit before it returns (the lease
    committed before any byte goes out, ...): only such an actor may call `commit_step`."""

    def decorate(fn: F) -> dramatiq.Actor:
        declared = dramatiq.actor(fn, actor_class=CommitAwareActor, broker=_PLACEHOLDER,
                                  **options)
        if commits_in_steps is not None:
            _STEP_COMMITTING[declared.actor_name] = commits_in_steps
        return declared

    return decorate


def step_committing_actors() -> dict[str, str]:
    """The actors declared to commit in steps, by name, with why."""
    return dict(_STEP_COMMITTING)


def commit_step(db: Session) -> None:
    """Commit `db` now, a step of a job that commits in steps; the message's last transaction
    is still committed when the actor returns. In a worker's message the actor must be declared
    with `actor(commits_in_steps=...)`: RuntimeError otherwise, before anything is committed
    (an actor committing by hand splits its unit of work, and what it committed stays when a
    later part fails). Outside a message (the CLI's backfill, a benchmark) it commits the
    caller's session."""
    name = _message_unit.actor_name if _message_unit.session is not None else None
    if name is not None and name not in _STEP_COMMITTING:
        raise RuntimeError(f"actor {name} commits in steps but is not declared with "
                           "commits_in_steps")
    db.commit()


def _commit(db: Session) -> None:
    """Commit the message's unit of work, if a transaction is open (an actor that never used
    its session, or ended its last transaction, has nothing to commit)."""
    if db.in_transaction():
        db.commit()


def runtime() -> Runtime:
    """The runtime the broker was set up with; raise if this process never called setup_broker."""
    if _runtime is None:
        raise RuntimeError("tasks.setup_broker() has not been called in this process")
    return _runtime


def sent_at() -> datetime:
    """When the message being processed in this thread was first sent (its retries keep that
    moment); now, outside a message."""
    message = CurrentMessage.get_current_message()
    if message is None:
        return utcnow()
    return datetime.fromtimestamp(message.message_timestamp / 1000, UTC)


def session() -> Session:
    """The current unit of work: in an actor, the database session of the message being
    processed (one per message), committed when the actor returns."""
    current = current_unit_of_work()
    if current is None:
        raise RuntimeError("no actor message is being processed in this thread")
    return current


class DbSessionMiddleware(Middleware):
    """Open a session before each message, as the worker thread's unit of work, and close it
    afterwards, rolling back what was not committed: the actor's call commits it when the
    actor returns (`CommitAwareActor.__call__`), so what is left here is the work of an actor
    that raised, or whose commit failed. The message id becomes the log request id."""

    def before_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        opened = runtime().db.session()
        _message_unit.session, _message_unit.token = opened, enter_unit_of_work(opened)
        _message_unit.actor_name, _message_unit.entered = message.actor_name, False
        request_id.set(f"msg-{message.message_id}")

    def after_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        opened, token = _message_unit.session, _message_unit.token
        if opened is not None and token is not None:
            _message_unit.session = _message_unit.token = _message_unit.actor_name = None
            leave_unit_of_work(token)
            opened.close()
        request_id.set(None)

    after_skip_message = after_process_message


def bind_actors(broker: dramatiq.Broker, rt: Runtime) -> None:
    """Move every declared actor onto `broker`, make it the global broker, and remember `rt` as
    the runtime actors run with (`runtime()`); done again, it moves them again (tests)."""
    global _runtime
    with _lock:
        for declared in list(_PLACEHOLDER.actors.values()):
            declared.broker = broker
            broker.declare_actor(declared)
        dramatiq.set_broker(broker)
        _runtime = rt


def declared_queues() -> set[str]:
    """The queue of every declared actor."""
    return {q_name(name) for name in _PLACEHOLDER.get_declared_queues()}
