"""The Dramatiq broker: Redis in production, the in-process StubBroker in embedded mode and tests.

Actor modules declare their actors with `actor(...)` below, which binds them to a placeholder
StubBroker so that importing them connects to nothing. `setup_broker(runtime)` builds the broker
the settings choose and moves every declared actor onto it; calling it again (tests) moves them
again. Each processed message gets its own database session (see `DbSessionMiddleware`).

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
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import q_name
from dramatiq.middleware import CurrentMessage, Middleware
from sqlalchemy.orm import Session

from burnbox.logs import request_id
from models.db import (
    after_commit,
    current_unit_of_work,
    enter_unit_of_work,
    has_writes,
    leave_unit_of_work,
)
from models.runtime import Runtime
from tasks.redis_broker import WakingRedisBroker

log = logging.getLogger(__name__)

_PLACEHOLDER = StubBroker()
_PLACEHOLDER.emit_after("process_boot")

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


def setup_broker(rt: Runtime) -> dramatiq.Broker:
    """Build the broker the settings choose, make it global, bind every actor to it, and wire the
    database's hand-offs after commit: the outbox to the event fan-out actor, new webhook
    deliveries to their first attempts."""
    global _runtime
    # The hand-offs after commit, imported late (they send actors' messages): the outbox's
    # events, and the first attempts of the webhook deliveries mail ingest creates.
    from tasks.events import enqueue_events
    from tasks.metrics import ActorMetrics
    from tasks.webhooks import send_attempts

    with _lock:
        if rt.settings.redis.url:
            broker: dramatiq.Broker = WakingRedisBroker(url=rt.settings.redis.url)
        else:
            broker = StubBroker()
            broker.emit_after("process_boot")
        broker.add_middleware(CurrentMessage())
        broker.add_middleware(DbSessionMiddleware())
        broker.add_middleware(ActorMetrics())
        for declared in list(_PLACEHOLDER.actors.values()):
            declared.broker = broker
            broker.declare_actor(declared)
        dramatiq.set_broker(broker)
        _runtime = rt
        rt.db.on_events_committed = enqueue_events
        rt.db.on_deliveries_committed = partial(send_attempts, number=1)
    return broker


# The queue of webhook attempts. Its work is waiting on other people's servers (an attempt may
# take `defaults.webhook_timeout`), so it gets a thread pool of its own, sized for I/O: a slow
# target then holds delivery threads only, never the event fan-out, mail or the clock's jobs.
DELIVERY_QUEUE = "webhooks"


def general_queues() -> list[str]:
    """Every declared queue but the delivery queue: what the general pool consumes."""
    return sorted({q_name(name) for name in _PLACEHOLDER.get_declared_queues()}
                  - {DELIVERY_QUEUE})


class Workers:
    """Worker pools running in this process; stop them with .stop()."""

    def __init__(self, *pools: dramatiq.Worker) -> None:
        self.pools = pools

    def stop(self) -> None:
        """Stop every pool, each finishing the messages it holds."""
        for pool in self.pools:
            pool.stop()


def start_worker(broker: dramatiq.Broker, threads: int,
                 delivery_threads: int | None = None) -> Workers:
    """Start in-process worker threads (embedded mode and tests): `threads` for every queue, or,
    with `delivery_threads`, `threads` for all but the delivery queue and `delivery_threads`
    for that queue alone."""
    if delivery_threads is None:
        return Workers(_start_pool(broker, threads, None))
    return Workers(_start_pool(broker, threads, set(general_queues())),
                   _start_pool(broker, delivery_threads, {DELIVERY_QUEUE}, SecondPool))


def _start_pool(broker: dramatiq.Broker, threads: int, queues: set[str] | None,
                kind: type[dramatiq.Worker] = dramatiq.Worker) -> dramatiq.Worker:
    pool = kind(broker, queues=queues, worker_threads=threads, worker_timeout=100)
    pool.start()
    return pool


class SecondPool(dramatiq.Worker):
    """A worker pool beside another on the same broker (the delivery queue's own pool).

    dramatiq's `Worker.start` adds a middleware of its own to the broker, through which the
    broker hands it a consumer for each declared queue; a second worker on the broker added a
    second one, and the broker warned on every start ("You're adding a middleware of the same
    type twice"). Every actor is declared by `setup_broker`, before any pool starts, so this
    pool makes the consumers of its queues at start itself and adds no middleware."""

    def start(self) -> None:
        """Boot as dramatiq's worker does, minus the middleware (see the class docstring)."""
        self.broker.emit_before("worker_boot", self)
        for queue_name in self.broker.get_declared_queues():
            self._add_consumer(queue_name)
        for queue_name in self.broker.get_declared_delay_queues():
            self._add_consumer(queue_name, delay=True)
        for _ in range(self.worker_threads):
            self._add_worker()
        self.broker.emit_after("worker_boot", self)


class DeliveryPool(Middleware):
    """The delivery queue's own thread pool beside a worker that the `dramatiq` command runs
    (on the other queues): started once that worker has booted, stopped, finishing its
    attempts, when it shuts down. `tasks.boot` adds it to the broker."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.pool: dramatiq.Worker | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if self.pool is None:
            # Set before start: starting it emits worker_boot again, for the pool itself.
            self.pool = SecondPool(broker, queues={DELIVERY_QUEUE}, worker_threads=self.threads,
                                   worker_timeout=100)
            self.pool.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if self.pool is not None and worker is not self.pool:
            self.pool.stop()
