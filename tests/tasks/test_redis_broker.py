"""The Redis broker's wake list (tasks.redis_broker), against a real Redis: an idle consumer
looks again the moment a message lands instead of sleeping out its polling pause, and an
enqueue with its wake-up is one round trip."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from dramatiq.common import dq_name

from burnbox.patches.dramatiq import HELD_PAUSE_MS, wake_list
from tasks.redis_broker import WAKE_TOKENS, WakingRedisBroker
from tests.conftest import TEST_REDIS_URL
from tests.consumer_looks import SENT_AFTER, WORKER_TIMEOUT, looks_until_a_message, message
from tests.statements import redis_round_trips

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


def test_an_idle_consumer_wakes_when_a_message_lands_rather_than_sleeping_out_its_pause(broker):
    consumer = broker.consume(QUEUE, prefetch=1, timeout=4_000)
    # As after a long idle spell: its next pause is the longest, 2 to 4 s (with jitter).
    consumer.misses = 20
    sender = threading.Timer(0.2, lambda: broker.enqueue(message(QUEUE)))
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


def test_wake_tokens_are_capped_and_a_delayed_message_wakes_its_delay_queue(broker):
    for _ in range(WAKE_TOKENS + 10):
        broker.enqueue(message(QUEUE))
    assert broker.client.llen(wake_list(broker, QUEUE)) == WAKE_TOKENS
    broker.client.delete(wake_list(broker, QUEUE))
    broker.enqueue(message(QUEUE), delay=60_000)
    assert broker.client.llen(wake_list(broker, QUEUE)) == 0
    assert broker.client.llen(wake_list(broker, dq_name(QUEUE))) == 1


def test_an_enqueue_and_its_wake_up_are_one_round_trip(monkeypatch, broker):
    # The first enqueue of a process also opens the connection and asks Redis how deep a Lua
    # stack goes (once per process): the second is what every later one costs.
    broker.enqueue(message(QUEUE))
    sent = redis_round_trips(monkeypatch)
    enqueued = broker.enqueue(message(QUEUE))
    assert len(sent) == 1, sent
    assert broker.client.llen(wake_list(broker, QUEUE)) == 2
    consumer = broker.consume(QUEUE, prefetch=2, timeout=1_000)
    delivered = [next(consumer), next(consumer)]
    assert delivered[1] is not None and delivered[1].message_id == enqueued.message_id
    for each in delivered:
        consumer.ack(each)
    consumer.close()


def test_an_enqueue_to_a_redis_that_lost_its_scripts_loads_them_and_wakes_after(broker):
    # A restarted Redis, or one whose scripts were flushed, no longer knows Dramatiq's dispatch
    # script: the pipelined call fails, Dramatiq's own loads it again, and the wake token
    # follows the message (the pipelined one came before it existed). A digest Redis never saw
    # stands for the lost script: flushing the scripts of a Redis that parallel tests share
    # would pull them from under those tests.
    broker.scripts["dispatch"].sha = "0" * 40
    enqueued = broker.enqueue(message(QUEUE))
    assert broker.client.llen(wake_list(broker, QUEUE)) == 2
    consumer = broker.consume(QUEUE, prefetch=1, timeout=1_000)
    delivered = next(consumer)
    assert delivered is not None and delivered.message_id == enqueued.message_id
    consumer.ack(delivered)
    consumer.close()


def test_a_consumer_holding_nothing_waits_for_a_token_not_its_pause(broker):
    """An idle worker's consumers used to look at their queues every pause (100 ms for
    `burnbox worker`): eighteen consumers, ten looks a second each, two Redis round trips a
    look. Holding nothing, a consumer now waits for a token for its whole timeout (1 s here),
    so it looks once (the token's) rather than at every pause (at most 100 ms; Redis ends a
    BLPOP's timeout within its own ticks: about ten looks in SENT_AFTER)."""
    consumer = broker.consume(QUEUE, prefetch=2, timeout=WORKER_TIMEOUT)
    assert looks_until_a_message(consumer, broker, QUEUE) <= 2
    # A delayed message wakes its delay queue's idle consumer the same way.
    delay_consumer = broker.consume(dq_name(QUEUE), prefetch=2, timeout=WORKER_TIMEOUT)
    assert looks_until_a_message(delay_consumer, broker, QUEUE, delay=60_000) <= 2
    consumer.close()
    delay_consumer.close()


def test_a_consumer_holding_a_delayed_message_still_looks_at_its_pause(broker):
    """A delay queue's consumer holds each message until its eta, and its thread checks the
    etas only between the consumer's looks: holding one, it keeps its pause, at most
    HELD_PAUSE_MS whatever the worker's timeout; acked, it waits its timeout again."""
    broker.enqueue(message(QUEUE), delay=60_000)
    consumer = broker.consume(dq_name(QUEUE), prefetch=2, timeout=WORKER_TIMEOUT)
    held = next(consumer)
    assert held is not None
    looks = looks_until_a_message(consumer, broker, QUEUE, delay=60_000)
    assert looks >= SENT_AFTER * 1000 / HELD_PAUSE_MS / 2  # half of them: Redis's ticks
    consumer.ack(held)
    assert looks_until_a_message(consumer, broker, QUEUE, delay=60_000) <= 2
    consumer.close()


def test_a_consumer_holding_a_message_in_work_waits_for_a_token_not_its_pause(broker):
    """Holding a message in work, a consumer came back at its backoff pauses (1, 2, 4... ms,
    at most HELD_PAUSE_MS): about seven BLPOPs a message under a test suite's loop, a fifth
    of the worker's CPU. Dramatiq's worker threads ack what they finish themselves, so it now
    waits for a token as long as one holding nothing."""
    broker.enqueue(message(QUEUE))
    consumer = broker.consume(QUEUE, prefetch=2, timeout=WORKER_TIMEOUT)
    held = next(consumer)
    assert held is not None
    broker.client.delete(wake_list(broker, QUEUE))  # its token: the fetch did not need it
    assert looks_until_a_message(consumer, broker, QUEUE) <= 2
    consumer.ack(held)
    consumer.close()


def test_a_full_consumer_fetches_within_its_pause_after_an_ack(broker):
    """A consumer holding as many messages as its prefetch sleeps its pause rather than its
    timeout: the slot its worker's ack frees is filled from the queue at once, token or not."""
    broker.enqueue(message(QUEUE))
    consumer = broker.consume(QUEUE, prefetch=1, timeout=WORKER_TIMEOUT)
    held = next(consumer)
    assert held is not None
    waiting = broker.enqueue(message(QUEUE))
    broker.client.delete(wake_list(broker, QUEUE))
    consumer.misses = 20  # as after many looks: its longest pause
    assert next(consumer) is None  # full: it slept its pause
    consumer.ack(held)  # as a worker thread acks
    started = time.monotonic()
    while (delivered := next(consumer)) is None:
        pass
    assert time.monotonic() - started < HELD_PAUSE_MS * 3 / 1000
    assert delivered.message_id == waiting.message_id
    consumer.ack(delivered)
    consumer.close()


def test_a_consumer_holding_a_message_fetches_again_only_for_a_token(monkeypatch, broker):
    """Dramatiq fetched at each look of a consumer, a script call for a queue its last fetch
    had found empty: about two script calls per message under a test suite's loop. It now
    fetches again for a token (or once its timeout has passed since, below)."""
    broker.enqueue(message(QUEUE))
    consumer = broker.consume(QUEUE, prefetch=2, timeout=WORKER_TIMEOUT)
    held = next(consumer)
    assert held is not None
    broker.client.delete(wake_list(broker, QUEUE))  # its token: the fetch did not need it
    fetched = broker.do_fetch
    fetches: list[int] = []

    def counted(queue_name: str, prefetch: int) -> list[bytes]:
        fetches.append(prefetch)
        return fetched(queue_name, prefetch)

    monkeypatch.setattr(broker, "do_fetch", counted)
    looks_until_a_message(consumer, broker, QUEUE)
    assert fetches == [1]  # the token's: one slot left of two
    consumer.ack(held)
    consumer.close()


def test_a_message_that_lands_without_a_token_is_fetched_within_the_timeout(broker):
    # Requeued by another worker's maintenance, or sent by a process whose token push failed.
    broker.enqueue(message(QUEUE))
    consumer = broker.consume(QUEUE, prefetch=2, timeout=WORKER_TIMEOUT)
    held = next(consumer)
    assert held is not None
    untold = broker.enqueue(message(QUEUE))
    broker.client.delete(wake_list(broker, QUEUE))
    started = time.monotonic()
    while (delivered := next(consumer)) is None:
        assert time.monotonic() - started < 3 * WORKER_TIMEOUT / 1000
    assert delivered.message_id == untold.message_id
    for each in (held, delivered):
        consumer.ack(each)
    consumer.close()
