"""The Dramatiq broker: Redis in production, the in-process StubBroker in embedded mode and tests.

What actor modules import, and nothing else: they declare their actors with `actor(...)` below,
which binds them to a placeholder StubBroker so that importing them connects to nothing, and
read the runtime and the message's session from here. `tasks.wiring.setup_broker(runtime)`
builds the broker the settings choose and moves every declared actor onto it (`bind_actors`);
this module imports no actor module, so no import circle runs through it. Each processed message
gets its own database session (see `DbSessionMiddleware`).

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
from burnbox.timeutil import utcnow
from models.db import (
    after_commit,
    current_unit_of_work,
    enter_unit_of_work,
    has_writes,
    leave_unit_of_work,
)
from models.runtime import Runtime

log = logging.getLogger(__name__)



class _ProcessTimeLimit(TimeLimit):
    """dramatiq's TimeLimit whose deadline thread starts once per process, however many
    brokers boot with it. dramatiq starts that thread at each broker's `process_boot` and has
    no way to stop it: with a TimeLimit per in-process broker, every runtime a process built
    (each test's, each CLI verb's) left a thread behind that wakes every second, and a test
    session of thousands of runtimes spent most of its time handing the GIL to them."""

    _started = False
    _start_lock = threading.Lock()

    def after_process_boot(self, broker: dramatiq.Broker) -> None:
        with self._start_lock:
            if _ProcessTimeLimit._started:
                return
            _ProcessTimeLimit._started = True
        super().after_process_boot(broker)


_TIME_LIMIT = _ProcessTimeLimit()


def in_process_broker() -> StubBroker:
    """A booted StubBroker with dramatiq's default middleware, sharing the process's one
    TimeLimit (`_ProcessTimeLimit`)."""
    broker = StubBroker(middleware=[_TIME_LIMIT if kind is TimeLimit else kind()
                                    for kind in default_middleware])
    broker.emit_after("process_boot")
    return broker


_PLACEHOLDER = in_process_broker()

_runtime: Runtime | None = None
_lock = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])


class CommitAwareActor(dramatiq.Actor):
    """An actor whose messages, sent while the current unit of work holds writes, are enqueued
    only once it commits (and dropped if it rolls back)."""

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


def actor(**options: Any) -> Callable[[F], dramatiq.Actor]:
    """Declare a commit-aware Dramatiq actor without touching any real broker (see the module
    docstring)."""

    def decorate(fn: F) -> dramatiq.Actor:
        return dramatiq.actor(fn, actor_class=CommitAwareActor, broker=_PLACEHOLDER, **options)

    return decorate


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
    processed (one per message), which the actor commits."""
    current = current_unit_of_work()
    if current is None:
        raise RuntimeError("no actor message is being processed in this thread")
    return current


class DbSessionMiddleware(Middleware):
    """Open a session before each message, as the worker thread's unit of work, and close it
    afterwards, rolling back what the actor did not commit; the message id becomes the log
    request id."""

    def __init__(self) -> None:
        # The session each worker thread opened for its current message, with its token.
        self._local = threading.local()

    def before_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        opened = runtime().db.session()
        self._local.opened = (opened, enter_unit_of_work(opened))
        request_id.set(f"msg-{message.message_id}")

    def after_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        opened: tuple[Session, Token[Session | None]] | None = getattr(self._local, "opened", None)
        if opened is not None:
            self._local.opened = None
            leave_unit_of_work(opened[1])
            opened[0].close()
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
