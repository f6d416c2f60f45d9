"""The Redis broker's wake list (tasks.redis_broker), against a real Redis: an idle consumer
looks again the moment a message lands instead of sleeping out its polling pause."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from dramatiq import Message

from tasks.redis_broker import WAKE_TOKENS, WakingRedisBroker, wake_list
from tests.conftest import TEST_REDIS_URL

pytestmark = pytest.mark.postgres  # the Redis backend

QUEUE = "wake-test"


@pytest.fixture
def broker() -> Iterator[WakingRedisBroker]:
    """A broker in a namespace of its own, emptied afterwards."""
    namespace = f"bb-wake-test-{uuid.uuid4().hex}"
    broker = WakingRedisBroker(url=TEST_REDIS_URL, namespace=namespace)
    broker.declare_queue(QUEUE)
    yield broker
    keys = list(broker.client.scan_iter(f"{namespace}*"))
    if keys:
        broker.client.delete(*keys)
    broker.close()


def _message() -> Message:
    return Message(queue_name=QUEUE, actor_name="nothing", args=(), kwargs={}, options={})


def test_an_idle_consumer_wakes_when_a_message_lands_rather_than_sleeping_out_its_pause(broker):
    consumer = broker.consume(QUEUE, prefetch=1, timeout=4_000)
    # As after a long idle spell: its next pause is the longest, 2 to 4 s (with jitter).
    consumer.misses = 20
    sender = threading.Timer(0.2, lambda: broker.enqueue(_message()))
    sender.start()
    started = time.monotonic()
    assert next(consumer) is None  # the pause, cut short by the wake token
    woken_after = time.monotonic() - started
    sender.join()
    assert woken_after < 1.5, f"slept {woken_after:.2f} s: the message did not wake it"
    delivered = next(consumer)
    assert delivered is not None and delivered.queue_name == QUEUE
    consumer.ack(delivered)
    consumer.close()


def test_wake_tokens_are_capped_and_a_delayed_message_leaves_none(broker):
    for _ in range(WAKE_TOKENS + 10):
        broker.enqueue(_message())
    assert broker.client.llen(wake_list(broker, QUEUE)) == WAKE_TOKENS
    broker.client.delete(wake_list(broker, QUEUE))
    broker.enqueue(_message(), delay=60_000)
    assert broker.client.llen(wake_list(broker, QUEUE)) == 0
