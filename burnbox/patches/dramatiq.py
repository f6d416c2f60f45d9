"""Dramatiq past its public surface, proved on dramatiq `PROVED_ON` (checked at import,
`burnbox.patches`): the TimeLimit middleware's deadline thread started once per process
(`ProcessTimeLimit`), a second worker pool on one broker (`SecondPool`, through the worker's
`_add_consumer` and `_add_worker`), the Redis consumer of `tasks.redis_broker`, whose idle wait
is a BLPOP on a wake list (`WakingConsumer`, a subclass of the private `_RedisConsumer` with
its `__next__` rewritten), that broker's enqueue, which pipelines Dramatiq's dispatch script
with the wake token (`enqueue_and_wake`, with `RedisBroker._dispatch`'s arguments), and the
in-process consumer of `tasks.broker`, which waits long only while it holds nothing
(`HoldingStubConsumer`, a subclass of the private `_StubConsumer` with its `__next__`
rewritten).

Only `enqueue_and_wake` is on the ingest path (a stored message's events are enqueued through
it) and on the test loop's (`bench.ingest`, `bench.loop`); what each buys, as measured when it
came (not measured again here):

- `WakingConsumer`: from an SMTP 250 to the inbox socket, one message every 3 s on PostgreSQL +
  Redis, p50 50.9 -> 8.6 ms; to a waiting `GET .../emails/wait`, p50 178 -> 23.7 ms
  (docs/events.md). Not fetching from a queue its last fetch found empty until a token comes:
  under `bench.loop`, one test at a time, 8.4 -> 3.1 fetches of the `events` queue per loop
  (3 events), the worker's CPU per loop 9.0 -> 8.0 ms with the other changes of that run.
  Waiting for a token while it holds messages in work (not only while it holds none): 23 ->
  11 BLPOPs per loop, the consumers' share of the worker's samples per loop (`py-spy
  --gil`) down by 44 %, the worker's in all by 18 %.
- `ProcessTimeLimit`: one deadline thread per process instead of one per broker built (a test
  session built thousands, each thread waking every second): not a speed figure but a bound
  (`tests/burnbox/patches/test_dramatiq.py`).
- `enqueue_and_wake`: one Redis round trip fewer per enqueue (a `POST /inboxes` makes 2, it
  made 3: `tests/web/test_loop_statements.py`).
- `SecondPool`: no speed at all: the broker's warning at every start of a second pool goes.
- The idle waits (`WakingConsumer` and `HoldingStubConsumer` holding nothing, with the 1 s
  timeout of `burnbox worker` and `burnbox serve`): CPU of an idle `burnbox worker` 118 -> 29
  ms a second, of its Redis 18 -> 7; of an idle `burnbox serve` 33 -> 4 (`bench.loop` reports
  every party's idle CPU).
"""

from __future__ import annotations

import threading
import time
from queue import Empty
from typing import Any

import dramatiq
import redis
from dramatiq import Message
from dramatiq.broker import MessageProxy
from dramatiq.brokers.redis import RedisBroker, _RedisConsumer
from dramatiq.brokers.stub import StubBroker, _StubConsumer, _StubMessageProxy
from dramatiq.common import compute_backoff, current_millis
from dramatiq.errors import ConnectionClosed, QueueNotFound
from dramatiq.middleware import TimeLimit
from redis.exceptions import NoScriptError

from burnbox.patches import require

PROVED_ON = ">=2.2,<2.3"
VERSION = require("dramatiq", PROVED_ON)


class ProcessTimeLimit(TimeLimit):
    """dramatiq's TimeLimit whose deadline thread starts once per process, however many
    brokers boot with it. dramatiq starts that thread at each broker's `process_boot` and has
    no way to stop it: with a TimeLimit per in-process broker, every runtime a process built
    (each test's, each CLI verb's) left a thread behind that wakes every second, and a test
    session of thousands of runtimes spent most of its time handing the GIL to them."""

    _started = False
    _start_lock = threading.Lock()

    def after_process_boot(self, broker: dramatiq.Broker) -> None:
        with self._start_lock:
            if ProcessTimeLimit._started:
                return
            ProcessTimeLimit._started = True
        super().after_process_boot(broker)


class SecondPool(dramatiq.Worker):
    """A worker pool beside another on the same broker (a waiting queue's own pool).

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


def wake_list(broker: RedisBroker, queue_name: str) -> str:
    """The Redis list whose tokens wake the consumers of `queue_name`."""
    return f"{broker.namespace}:{queue_name}.wake"


def enqueue_and_wake(broker: RedisBroker, queue_name: str, message_id: str, data: bytes,
                     tokens: int) -> None:
    """Dramatiq's enqueue of a message (its dispatch script's `enqueue`, with the arguments
    `RedisBroker._dispatch` gives it) and a wake token pushed on the queue's wake list, at most
    `tokens` kept there, in one pipeline: one Redis round trip where the enqueue and the wake
    took two. Redis runs them in order, so a woken consumer finds the message. A Redis that no
    longer knows the script (restarted, or its scripts flushed) has Dramatiq's own call load
    it, and the queue is woken again after."""
    wake = wake_list(broker, queue_name)
    arguments = ["enqueue", current_millis(), queue_name, broker.broker_id,
                 broker.heartbeat_timeout, broker.dead_message_ttl,
                 broker._should_do_maintenance("enqueue"), broker._max_unpack_size(),
                 message_id, data]
    with broker.client.pipeline(transaction=False) as pipe:
        pipe.evalsha(broker.scripts["dispatch"].sha, 1, broker.namespace, *arguments)
        _push_token(pipe, wake, tokens)
        enqueued = pipe.execute(raise_on_error=False)[0]
    if isinstance(enqueued, NoScriptError):
        broker._dispatch("enqueue")(queue_name, message_id, data)
        with broker.client.pipeline(transaction=False) as pipe:
            _push_token(pipe, wake, tokens)
            pipe.execute()
    elif isinstance(enqueued, Exception):
        raise enqueued


def _push_token(pipe: redis.client.Pipeline, wake: str, tokens: int) -> None:
    pipe.lpush(wake, "1")
    pipe.ltrim(wake, 0, tokens - 1)


# The longest pause of a consumer that holds messages, whatever the worker's timeout: its worker
# moves a held delayed message to its queue only between two looks, so this is how late past
# its eta a delayed message may start.
HELD_PAUSE_MS = 100


class WakingConsumer(_RedisConsumer):  # type: ignore[misc]
    """Dramatiq's Redis consumer, its `__next__` as dramatiq 2.2 writes it except that an
    empty fetch waits on the queue's wake list (`wake_list`) where Dramatiq sleeps: for the
    worker's timeout, or for the backoff pause (at most `HELD_PAUSE_MS`) while it holds a
    delayed message (`tasks.redis_broker` says why and pushes the tokens); and that once a
    fetch found the queue empty (fewer messages than it asked for), it fetches again only for a
    token, or when the worker's timeout has passed since (a message that landed without one).

    Why a consumer holding messages in work waits as long as one holding none: dramatiq 2.2's
    worker threads ack what they finish themselves (`WorkerThread.process_message`), so such
    a consumer has nothing to come back for but a token. It came back at its backoff pauses
    (1, 2, 4... ms) while each message was in work: under a test suite's loop about seven
    BLPOPs a message, a fifth of the worker's CPU. Only the consumer of a delay queue needs
    its pauses: its thread moves a held message to its queue once the eta has passed, checked
    between two looks. A full consumer (as many held as its prefetch) still sleeps its pause,
    then fetches into the slots its workers' acks freed.

    Why the fetch only for a token: holding a message in work, a consumer comes back at each
    pause (above) and Dramatiq fetched at each, a script call for a queue known to be empty."""

    # Whether the last fetch found the queue empty, and when it ran (time.monotonic()).
    _drained = False
    _fetched_at = 0.0

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        # The ids of the held messages that wait for their eta (a delay queue's): acked or
        # nacked by the consumer's thread once moved, or by a worker thread.
        self._delayed: set[str] = set()

    def ack(self, message: MessageProxy) -> None:
        self._delayed.discard(message.message_id)
        super().ack(message)

    def nack(self, message: MessageProxy) -> None:
        self._delayed.discard(message.message_id)
        super().nack(message)

    def _may_fetch(self) -> bool:
        return (not self._drained
                or time.monotonic() - self._fetched_at >= self.timeout / 1000)

    def __next__(self) -> MessageProxy | None:
        try:
            while True:
                if self.message_cache:
                    data = self.message_cache.pop(0)
                    if data is None:  # as Dramatiq: a hole in the cache is skipped
                        continue
                    self.misses = 0
                    message = Message.decode(data)
                    self.queued_message_ids.add(message.message_id)
                    if message.options.get("eta") is not None:
                        self._delayed.add(message.message_id)
                    return MessageProxy(message)
                messages = []
                if self.outstanding_message_count < self.prefetch and self._may_fetch():
                    wanted = self.prefetch - self.outstanding_message_count
                    self.message_cache = messages = self.broker.do_fetch(self.queue_name,
                                                                         wanted)
                    self._drained, self._fetched_at = len(messages) < wanted, time.monotonic()
                if messages:
                    continue
                self.misses, backoff_ms = compute_backoff(
                    self.misses, max_backoff=min(self.timeout, HELD_PAUSE_MS))
                # Never 0: BLPOP takes a timeout of 0 as "wait forever".
                pause = max(backoff_ms, 1) / 1000
                if self.outstanding_message_count >= self.prefetch:
                    # Full: a token taken now could not be used, and another consumer may
                    # need it.
                    time.sleep(pause)
                    return None
                if not self._delayed:
                    # Holding no delayed message, the consumer has nothing to look at but
                    # the queue, and a token says when that changes: it waits the worker's
                    # whole timeout. A message that lands without a token (requeued by
                    # another worker's maintenance, or sent by a process whose token push
                    # failed) waits that long at most.
                    pause = self.timeout / 1000
                # Woken by a token: look again at once, from the shortest pause.
                if self.broker.client.blpop([wake_list(self.broker, self.queue_name)],
                                            timeout=pause):
                    self.misses, self._drained = 0, False
                return None
        except redis.ConnectionError as error:
            raise ConnectionClosed(error) from None


class HoldingStubConsumer(_StubConsumer):  # type: ignore[misc]
    """Dramatiq's in-process consumer, its `__next__` as dramatiq 2.2 writes it except that
    each of its two waits (a prefetch slot, then a message) lasts the worker's whole timeout
    while it holds no message, and at most `HELD_PAUSE_MS` while it holds some, as
    `WakingConsumer` does. An in-process queue wakes its waiting consumer the moment a message
    is put on it, so the timeout only says how often an idle consumer looks whether it is
    being stopped; holding a delayed message, its worker checks the eta between two looks."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._held = 0
        self._held_lock = threading.Lock()

    def _hold(self, change: int) -> None:
        with self._held_lock:
            self._held += change

    def ack(self, message: MessageProxy) -> None:
        self._hold(-1)
        super().ack(message)

    def nack(self, message: MessageProxy) -> None:
        self._hold(-1)
        super().nack(message)

    def __next__(self) -> MessageProxy | None:
        wait = (self.timeout if self._held == 0 else min(self.timeout, HELD_PAUSE_MS)) / 1000
        if not self.prefetch_semaphore.acquire(timeout=wait):
            return None
        try:
            data = self.queue.get(timeout=wait)
        except Empty:
            self.prefetch_semaphore.release()
            return None
        self._hold(1)
        return _StubMessageProxy(Message.decode(data))


class HoldingStubBroker(StubBroker):  # type: ignore[misc]
    """Dramatiq's StubBroker whose consumers are `HoldingStubConsumer`s."""

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 100
                ) -> HoldingStubConsumer:
        """As StubBroker's `consume`, with the consumer of this module."""
        try:
            return HoldingStubConsumer(self.queues[queue_name],
                                       self.dead_letters_by_queue[queue_name], prefetch, timeout)
        except KeyError:
            raise QueueNotFound(queue_name) from None
