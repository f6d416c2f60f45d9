"""Dramatiq's Redis broker, with idle consumers woken by each new message instead of polling.

Dramatiq's Redis consumer, finding its queue empty, sleeps a pause that doubles up to the
worker's timeout (100 ms for `burnbox worker`) before it looks again. A message sent to an idle
worker therefore waited half that pause on average and the whole of it at worst: most of the
time from an SMTP 250 to the inbox socket's `email.received`, and to a request waiting for the
mail, went there. Here every immediate enqueue also pushes a token on the queue's wake list,
and an idle consumer waits for a token with BLPOP (the same pause as its timeout), so it looks
again the moment a message lands. A token is a hint, never the message: the messages stay
where Dramatiq keeps them, tokens nobody takes are capped at a few per queue, and a consumer
woken for nothing finds the queue empty and waits again.
"""

from __future__ import annotations

import time
from typing import Any

import redis
from dramatiq import Message
from dramatiq.broker import MessageProxy
from dramatiq.brokers.redis import RedisBroker, _RedisConsumer
from dramatiq.common import compute_backoff
from dramatiq.errors import ConnectionClosed

# Tokens kept on a queue's wake list at most: enough to wake every idle consumer of a
# deployment's worker processes at once; more would only wake consumers for nothing later.
WAKE_TOKENS = 16


def wake_list(broker: RedisBroker, queue_name: str) -> str:
    """The Redis list whose tokens wake the consumers of `queue_name`."""
    return f"{broker.namespace}:{queue_name}.wake"


class WakingRedisBroker(RedisBroker):
    """A RedisBroker whose idle consumers wake when a message is enqueued (module docstring)."""

    @property
    def consumer_class(self) -> type[_RedisConsumer]:
        """Consumers that wait on the wake list rather than sleep."""
        return _WakingConsumer

    def enqueue(self, message: Message[Any], *, delay: int | None = None) -> Message[Any]:
        """Enqueue as Dramatiq does, then wake a consumer of the queue. A delayed message
        goes to the delay queue, whose consumer keeps polling: it holds the message until its
        time anyway, then enqueues it again undelayed, which wakes the queue's consumers."""
        enqueued = super().enqueue(message, delay=delay)
        if delay is None:
            key = wake_list(self, enqueued.queue_name)
            with self.client.pipeline(transaction=False) as pipe:
                pipe.lpush(key, "1")
                pipe.ltrim(key, 0, WAKE_TOKENS - 1)
                pipe.execute()
        return enqueued


class _WakingConsumer(_RedisConsumer):  # type: ignore[misc]
    """Dramatiq's Redis consumer (dramatiq 2.2), except that an empty fetch waits on the queue's
    wake list for at most the backoff pause, where Dramatiq sleeps it out."""

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
                    return MessageProxy(message)
                messages = []
                if self.outstanding_message_count < self.prefetch:
                    self.message_cache = messages = self.broker.do_fetch(
                        self.queue_name, self.prefetch - self.outstanding_message_count)
                if messages:
                    continue
                self.misses, backoff_ms = compute_backoff(self.misses, max_backoff=self.timeout)
                # Never 0: BLPOP takes a timeout of 0 as "wait forever".
                pause = max(backoff_ms, 1) / 1000
                if self.outstanding_message_count < self.prefetch:
                    # Woken by a token: look again at once, from the shortest pause.
                    if self.broker.client.blpop([wake_list(self.broker, self.queue_name)],
                                                timeout=pause):
                        self.misses = 0
                else:
                    # Full: a token taken now could not be used, and another consumer may
                    # need it.
                    time.sleep(pause)
                return None
        except redis.ConnectionError as error:
            raise ConnectionClosed(error) from None
