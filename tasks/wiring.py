"""A process's wiring: the broker the settings choose, the actors bound to it, the process's
hand-offs, and the worker pools that consume the queues.

`setup_broker(runtime)` is the one place that decides what a commit in this process hands on
(`models.handoffs.HandOffs`): every long-running process calls it once at start (`burnbox
serve`, `web` through `create_app`, `worker` through `tasks.boot`, `mailin`'s store process,
`clock`; not mailin's SMTP front processes, which only read), and tests call it for each runtime
they build. It imports the actor modules; they import only `tasks.broker`.
"""

from __future__ import annotations

from functools import partial

import dramatiq
from dramatiq.middleware import CurrentMessage, Middleware

from models.caching import new_revisions
from models.delivery.realtime import push_received
from models.delivery.webhooks import deliver_recorded
from models.handoffs import HandOffs
from models.runtime import Runtime
from tasks.broker import DbSessionMiddleware, bind_actors, declared_queues, in_process_broker
from tasks.events import enqueue_events
from tasks.metrics import ActorMetrics
from tasks.redis_broker import WakingRedisBroker
from tasks.webhooks import send_attempts


def setup_broker(rt: Runtime) -> dramatiq.Broker:
    """Build the broker the settings choose (Redis, or the in-process StubBroker), bind every
    actor to it, and give the runtime's database the process's hand-offs (`hand_offs`)."""
    if rt.settings.redis.url:
        broker: dramatiq.Broker = WakingRedisBroker(url=rt.settings.redis.url)
    else:
        broker = in_process_broker()
    broker.add_middleware(CurrentMessage())
    broker.add_middleware(DbSessionMiddleware())
    broker.add_middleware(ActorMetrics())
    bind_actors(broker, rt)
    rt.db.handoffs = hand_offs(rt)
    return broker


def hand_offs(rt: Runtime) -> HandOffs:
    """What a commit of this process hands on, in the order `models.handoffs` describes: the
    caches' revisions moved through the store (as the Runtime set it up: a runtime made from
    another keeps the first's store); the outbox's events to the fan-out actor; the first
    attempts of the webhook deliveries a commit created; and for mail ingest (which runs only
    where mailin's committer does) the deliveries written with each batch and the live push of
    its e-mails right after the commit, so sockets, waits and webhooks hear of new mail without
    waiting for the worker's fan-out (which stays the backup)."""
    return HandOffs(
        revisions_moved=rt.db.handoffs.revisions_moved or partial(new_revisions, rt.store),
        events_committed=enqueue_events,
        deliveries_committed=partial(send_attempts, number=1),
        ingest_recorded=deliver_recorded,
        mail_stored=partial(push_received, rt.store))


# The queue of webhook attempts. Its work is waiting on other people's servers (an attempt may
# take `defaults.webhook_timeout`), so it gets a thread pool of its own, sized for I/O: a slow
# target then holds delivery threads only, never the event fan-out, mail or the clock's jobs.
DELIVERY_QUEUE = "webhooks"


def general_queues() -> list[str]:
    """Every declared queue but the delivery queue: what the general pool consumes."""
    return sorted(declared_queues() - {DELIVERY_QUEUE})


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
