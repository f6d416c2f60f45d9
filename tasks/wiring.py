"""A process's wiring: the broker the settings choose, the actors bound to it, the process's
hand-offs, and the worker pools that consume the queues.

`setup_broker(runtime)` is the one place that decides what a commit in this process hands on
(`models.handoffs.HandOffs`): every long-running process calls it once at start (`burnbox
serve`, `web` through `create_app`, `worker` through `tasks.boot`, `mailin`'s store process,
`clock`; not mailin's SMTP front processes, which only read), and tests call it for each runtime
they build. It imports the actor modules; they import only `tasks.broker`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import dramatiq
from dramatiq.middleware import CurrentMessage, Middleware

from burnbox.patches.dramatiq import SecondPool
from burnbox.settings import Settings
from models.caching import new_revisions
from models.delivery.realtime import publish_mail_changes, push_received
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
    waiting for the worker's fan-out (which stays the backup); and the changes of stored mail
    a commit made, published for the streams that announce them."""
    return HandOffs(
        revisions_moved=rt.db.handoffs.revisions_moved or partial(new_revisions, rt.store),
        events_committed=enqueue_events,
        deliveries_committed=partial(send_attempts, number=1),
        ingest_recorded=deliver_recorded,
        mail_stored=partial(push_received, rt.store),
        mail_changed=partial(publish_mail_changes, rt.store))


# The queues whose work waits on other people's servers, each on a thread pool of its own sized
# for waiting: webhook attempts (up to `defaults.webhook_timeout` each) and the authentication
# results of new mail (DNS look-ups, up to `dns.timeout` each). On the general pool they held
# its threads while the event fan-out and the clock's sweeps waited: after a Redis outage the
# outbox sweep's dispatches sent an authentication message per chunk, and with DNS slow to
# answer every general thread sat in a look-up while the delivery sweep's next page, and the
# dispatch of the rest of the backlog, waited (the webhook backlog stood still).
DELIVERY_QUEUE = "webhooks"
AUTHENTICATION_QUEUE = "authentication"


def waiting_pools(settings: Settings) -> dict[str, int]:
    """The queues that get a pool of their own, with its threads per process."""
    return {DELIVERY_QUEUE: settings.worker.delivery_threads,
            AUTHENTICATION_QUEUE: settings.worker.authentication_threads}


def general_queues() -> list[str]:
    """Every declared queue but the waiting ones: what the general pool consumes."""
    return sorted(declared_queues() - {DELIVERY_QUEUE, AUTHENTICATION_QUEUE})


class Workers:
    """Worker pools running in this process; stop them with .stop()."""

    def __init__(self, *pools: dramatiq.Worker) -> None:
        self.pools = pools

    def stop(self) -> None:
        """Stop every pool, each finishing the messages it holds."""
        for pool in self.pools:
            pool.stop()


# How often, in ms, an idle worker thread or consumer looks whether it is being stopped (a
# consumer holding messages looks more often, `burnbox.patches.dramatiq`). The processes that
# run for hours, `burnbox serve` and `burnbox worker`, take Dramatiq's 1 s (PROCESS_TIMEOUT_MS);
# in-process pools default to a short one, since tests start and stop them by the hundred.
PROCESS_TIMEOUT_MS = 1000
QUICK_STOP_TIMEOUT_MS = 100


def start_worker(broker: dramatiq.Broker, threads: int,
                 waiting: Mapping[str, int] | None = None,
                 timeout_ms: int = QUICK_STOP_TIMEOUT_MS) -> Workers:
    """Start in-process worker threads (embedded mode and tests): `threads` for every queue, or,
    with `waiting` ({queue: threads}, as `waiting_pools` gives it), `threads` for the general
    queues and a pool of its own for each waiting queue; idle, each thread wakes every
    `timeout_ms` (how long a stop may take)."""
    if waiting is None:
        return Workers(_start_pool(broker, threads, None, timeout_ms))
    return Workers(_start_pool(broker, threads, set(general_queues()), timeout_ms),
                   *(_start_pool(broker, count, {queue}, timeout_ms, SecondPool)
                     for queue, count in waiting.items()))


def _start_pool(broker: dramatiq.Broker, threads: int, queues: set[str] | None,
                timeout_ms: int, kind: type[dramatiq.Worker] = dramatiq.Worker
                ) -> dramatiq.Worker:
    pool = kind(broker, queues=queues, worker_threads=threads, worker_timeout=timeout_ms)
    pool.start()
    return pool


class WaitingPools(Middleware):
    """The waiting queues' own thread pools (`waiting_pools`) beside a worker that the
    `dramatiq` command runs on the general queues: started once that worker has booted,
    stopped, finishing what they hold, when it shuts down. `tasks.boot` adds it to the
    broker."""

    def __init__(self, waiting: Mapping[str, int]) -> None:
        self.waiting = dict(waiting)
        self.pools: list[dramatiq.Worker] = []
        self.started = False

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if not self.started:
            # Set before starting them: each start emits worker_boot again, for the pool.
            self.started = True
            for queue, threads in self.waiting.items():
                pool = SecondPool(broker, queues={queue}, worker_threads=threads,
                                  worker_timeout=worker.worker_timeout)
                self.pools.append(pool)
                pool.start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        if worker not in self.pools:
            for pool in self.pools:
                pool.stop()
