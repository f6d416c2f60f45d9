"""The dramatiq patches (burnbox.patches.dramatiq) against dramatiq: brokers share one
deadline thread, a second pool starts the consumers and threads dramatiq's worker starts (minus
its middleware), and the Redis consumer's `__next__` was rewritten from the one dramatiq
ships. (The waking itself, against a real Redis: tests/tasks/test_redis_broker.py.)"""

from __future__ import annotations

import hashlib
import inspect
import threading

import dramatiq
from dramatiq.brokers.redis import _RedisConsumer
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import time_limit

import tasks
from burnbox.patches import dramatiq as patches
from burnbox.patches.dramatiq import SecondPool, WakingConsumer

# sha256 of dramatiq 2.2's `_RedisConsumer.__next__`, which WakingConsumer.__next__ rewrites:
# another means our copy is of another method, to be read again.
REWRITTEN_NEXT = "b8245bc4ab8044d67d72216baca5e5be0d07fccce15c443a5887b6397c9906e1"


def test_an_unproved_dramatiq_is_refused(refused_at):
    assert refused_at(patches, "dramatiq", "2.3.0").startswith("dramatiq 2.3.0 is installed")


def _time_limit_threads() -> int:
    return sum(isinstance(thread, time_limit._CtypesTimeoutManager)
               for thread in threading.enumerate())


def test_the_brokers_a_process_builds_share_one_time_limit_thread(runtime):
    # dramatiq's TimeLimit starts a thread at each broker's boot that nothing can stop; one
    # per runtime left thousands behind in a test session, each waking every second.
    tasks.setup_broker(runtime)
    before = _time_limit_threads()
    for _ in range(3):
        tasks.setup_broker(runtime)
    assert _time_limit_threads() == before <= 1


def test_a_second_pool_starts_what_dramatiqs_worker_starts_without_its_middleware():
    broker = StubBroker()
    broker.emit_after("process_boot")

    @dramatiq.actor(broker=broker, queue_name="first")
    def first() -> None:
        """Nothing."""

    @dramatiq.actor(broker=broker, queue_name="second")
    def second() -> None:
        """Nothing."""

    middleware = len(broker.middleware)
    theirs = dramatiq.Worker(broker, queues={"first"}, worker_threads=2, worker_timeout=10)
    theirs.start()
    added = len(broker.middleware) - middleware
    ours = SecondPool(broker, queues={"second"}, worker_threads=3, worker_timeout=10)
    ours.start()
    try:
        assert added == 1 and len(broker.middleware) == middleware + 1
        assert set(theirs.consumers) == {"first", "first.DQ"}
        assert set(ours.consumers) == {"second", "second.DQ"}
        assert (len(theirs.workers), len(ours.workers)) == (2, 3)
    finally:
        ours.stop()
        theirs.stop()
        broker.close()


def test_the_redis_consumer_rewritten_is_dramatiqs_of_the_proved_version():
    assert issubclass(WakingConsumer, _RedisConsumer)
    source = inspect.getsource(_RedisConsumer.__next__)
    assert hashlib.sha256(source.encode()).hexdigest() == REWRITTEN_NEXT
    # The state the rewrite reads and writes, as dramatiq's constructor sets it.
    made = inspect.getsource(_RedisConsumer.__init__)
    for name in ("message_cache", "queued_message_ids", "misses", "prefetch", "timeout"):
        assert f"self.{name} =" in made, name
