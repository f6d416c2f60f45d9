"""The Dramatiq broker: Redis in production, the in-process StubBroker in embedded mode and tests.

Actor modules declare their actors with `actor(...)` below, which binds them to a placeholder
StubBroker so that importing them connects to nothing. `setup_broker(runtime)` builds the broker
the settings choose and moves every declared actor onto it; calling it again (tests) moves them
again. Each processed message gets its own database session (see `DbSessionMiddleware`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import CurrentMessage, Middleware
from sqlalchemy.orm import Session

from burnbox.logs import request_id
from models.runtime import Runtime

log = logging.getLogger(__name__)

_PLACEHOLDER = StubBroker()
_PLACEHOLDER.emit_after("process_boot")

_runtime: Runtime | None = None
_session: contextvars.ContextVar[Session | None] = contextvars.ContextVar("actor_session",
                                                                         default=None)
_lock = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])


def actor(**options: Any) -> Callable[[F], dramatiq.Actor]:
    """Declare a Dramatiq actor without touching any real broker (see the module docstring)."""

    def decorate(fn: F) -> dramatiq.Actor:
        return dramatiq.actor(fn, broker=_PLACEHOLDER, **options)

    return decorate


def runtime() -> Runtime:
    """The runtime the broker was set up with; raise if this process never called setup_broker."""
    if _runtime is None:
        raise RuntimeError("tasks.setup_broker() has not been called in this process")
    return _runtime


def session() -> Session:
    """The database session of the message being processed (one per message)."""
    current = _session.get()
    if current is None:
        raise RuntimeError("no actor message is being processed in this thread")
    return current


class DbSessionMiddleware(Middleware):
    """Open a session before each message and close it afterwards, rolling back what the actor
    did not commit; the message id becomes the log request id."""

    def before_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        _session.set(runtime().db.session())
        request_id.set(f"msg-{message.message_id}")

    def after_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        current = _session.get()
        if current is not None:
            current.close()
        _session.set(None)
        request_id.set(None)

    after_skip_message = after_process_message


def setup_broker(rt: Runtime) -> dramatiq.Broker:
    """Build the broker the settings choose, make it global, bind every actor to it, and wire the
    database's outbox hand-off to the event fan-out actor."""
    global _runtime
    from tasks.events import enqueue_events  # the outbox hand-off; imported late (it is an actor)

    with _lock:
        if rt.settings.redis.url:
            broker: dramatiq.Broker = RedisBroker(url=rt.settings.redis.url)
        else:
            broker = StubBroker()
            broker.emit_after("process_boot")
        broker.add_middleware(CurrentMessage())
        broker.add_middleware(DbSessionMiddleware())
        for declared in list(_PLACEHOLDER.actors.values()):
            declared.broker = broker
            broker.declare_actor(declared)
        dramatiq.set_broker(broker)
        _runtime = rt
        rt.db.on_events_committed = enqueue_events
    return broker


def start_worker(broker: dramatiq.Broker, threads: int) -> dramatiq.Worker:
    """Start in-process worker threads (embedded mode and tests); stop them with .stop()."""
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=100)
    worker.start()
    return worker
