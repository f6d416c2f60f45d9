"""The dramatiq patches (burnbox.patches.dramatiq) against dramatiq: brokers share one
deadline thread, a second pool starts the consumers and threads dramatiq's worker starts (minus
its middleware), and the Redis consumer's `__next__` was rewritten from the one dramatiq
ships. (The waking itself, against a real Redis: tests/tasks/test_redis_broker.py.)"""

from __future__ import annotations

import hashlib
import inspect
import threading

import dramatiq
import pytest
from dramatiq.brokers.redis import _RedisConsumer
from dramatiq.brokers.stub import StubBroker, _StubConsumer
from dramatiq.common import dq_name
from dramatiq.middleware import time_limit

import tasks
from burnbox.patches import dramatiq as patches
from burnbox.patches.dramatiq import (
    HELD_PAUSE_MS,
    HoldingStubBroker,
    HoldingStubConsumer,
    SecondPool,
    WakingConsumer,
)
from tests.consumer_looks import SENT_AFTER, WORKER_TIMEOUT, looks_until_a_message, message

# sha256 of dramatiq 2.2's `_RedisConsumer.__next__` and `_StubConsumer.__next__`, which
# WakingConsumer.__next__ and HoldingStubConsumer.__next__ rewrite: another means our copy is of
# another method, to be read again.
REWRITTEN_NEXT = "b8245bc4ab8044d67d72216baca5e5be0d07fccce15c443a5887b6397c9906e1"
REWRITTEN_STUB_NEXT = "959e7d25978e495dd20e80e1c810bf83fdde6aea95b8a0799297db5987d259e4"


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


@pytest.mark.parametrize(("ours", "theirs", "digest", "state"), [
    (WakingConsumer, _RedisConsumer, REWRITTEN_NEXT,
     ("message_cache", "queued_message_ids", "misses", "prefetch", "timeout")),
    (HoldingStubConsumer, _StubConsumer, REWRITTEN_STUB_NEXT,
     ("queue", "dead_letters", "prefetch", "timeout", "prefetch_semaphore")),
], ids=["redis", "in-process"])
def test_a_consumer_rewritten_is_dramatiqs_of_the_proved_version(ours, theirs, digest, state):
    assert issubclass(ours, theirs)
    source = inspect.getsource(theirs.__next__)
    assert hashlib.sha256(source.encode()).hexdigest() == digest
    # The state the rewrite reads and writes, as dramatiq's constructor sets it.
    made = inspect.getsource(theirs.__init__)
    for name in state:
        assert f"self.{name} =" in made, name


QUEUE = "holding-test"


def _holding_broker() -> HoldingStubBroker:
    broker = HoldingStubBroker()
    broker.declare_queue(QUEUE)
    return broker


def test_an_idle_in_process_consumer_waits_its_whole_timeout_and_a_message_ends_the_wait():
    """`burnbox serve`'s consumers and worker threads woke every 100 ms, idle: 33 ms of CPU a
    second. With its 1 s timeout an idle consumer looks once a second, and a message put on
    its queue still reaches it at once."""
    broker = _holding_broker()
    consumer = broker.consume(QUEUE, prefetch=2, timeout=WORKER_TIMEOUT)
    assert consumer.__class__ is HoldingStubConsumer
    assert looks_until_a_message(consumer, broker, QUEUE) <= 1


def test_an_in_process_consumer_holding_a_message_looks_at_most_every_held_pause():
    """Holding a delayed message (its worker checks the eta between two looks), the consumer
    looks every HELD_PAUSE_MS whatever the timeout; dramatiq's would wait the whole second."""
    broker = _holding_broker()
    broker.enqueue(message(QUEUE), delay=60_000)
    consumer = broker.consume(dq_name(QUEUE), prefetch=2, timeout=WORKER_TIMEOUT)
    held = next(consumer)
    assert held is not None
    looks = looks_until_a_message(consumer, broker, QUEUE, delay=60_000)
    assert looks >= SENT_AFTER * 1000 / HELD_PAUSE_MS / 2
    consumer.ack(held)
    # Holding nothing again, it waits its whole timeout.
    assert looks_until_a_message(consumer, broker, QUEUE, delay=60_000) <= 1
