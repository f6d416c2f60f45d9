"""How often a Dramatiq consumer looks at its queue: the times it comes back empty-handed before
a message sent a moment later reaches it (the tests of the consumers' idle waits,
`burnbox.patches.dramatiq`, on Redis and in process)."""

from __future__ import annotations

import threading

import dramatiq
from dramatiq import Message
from dramatiq.common import dq_name

from tasks.wiring import PROCESS_TIMEOUT_MS

SENT_AFTER = 0.6  # seconds from the first look to the message's enqueue
WORKER_TIMEOUT = PROCESS_TIMEOUT_MS  # as `burnbox worker` and `burnbox serve` run their consumers


def message(queue: str) -> Message:
    """A message for `queue` of an actor nobody runs (the consumer alone is under test)."""
    return Message(queue_name=queue, actor_name="nothing", args=(), kwargs={}, options={})


def looks_until_a_message(consumer: dramatiq.Consumer, broker: dramatiq.Broker, queue: str,
                          delay: int | None = None) -> int:
    """How many times `consumer` came back empty-handed before the message a timer enqueues
    on `queue` (with `delay`) SENT_AFTER from now reached it; that message is acked."""
    sender = threading.Timer(SENT_AFTER, lambda: broker.enqueue(message(queue), delay=delay))
    sender.start()
    looks = 0
    while (delivered := next(consumer)) is None:
        looks += 1
    sender.join()
    assert delivered.queue_name == (dq_name(queue) if delay else queue)
    consumer.ack(delivered)
    return looks
