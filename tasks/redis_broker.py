"""Dramatiq's Redis broker, with idle consumers woken by each new message instead of polling.

Dramatiq's Redis consumer, finding its queue empty, sleeps a pause that doubles up to the
worker's timeout (100 ms for `burnbox worker`) before it looks again. A message sent to an idle
worker therefore waited half that pause on average and the whole of it at worst: most of the
time from an SMTP 250 to the inbox socket's `email.received`, and to a request waiting for the
mail, went there. Here every enqueue also pushes a token on the queue's wake list, in the same
round trip (one pipeline), and an idle consumer waits for a token with BLPOP (the same pause as
its timeout), so it looks again the moment a message lands. A token is a hint, never the
message: the messages stay where Dramatiq keeps them, tokens nobody takes are capped at a few
per queue, and a consumer woken for nothing finds the queue empty and waits again.

Since a token says when a queue changes, a consumer that holds no message waits for one for
the worker's whole timeout (1 s for `burnbox worker`) rather than its pause: an idle worker no
longer asks each of its queues ten times a second. A delayed message wakes its delay queue's
consumer the same way.
"""

from __future__ import annotations

from dramatiq.brokers.redis import RedisBroker

from burnbox.patches.dramatiq import WakingConsumer, enqueue_and_wake

# Tokens kept on a queue's wake list at most: enough to wake every idle consumer of a
# deployment's worker processes at once; more would only wake consumers for nothing later.
WAKE_TOKENS = 16


class WakingRedisBroker(RedisBroker):
    """A RedisBroker whose idle consumers wake when a message is enqueued (module docstring)."""

    @property
    def consumer_class(self) -> type[WakingConsumer]:
        """Consumers that wait on the wake list rather than sleep (`WakingConsumer`)."""
        return WakingConsumer

    def do_enqueue(self, queue_name: str, message_id: str, data: bytes) -> None:
        """Store the message as Dramatiq does and wake a consumer of the queue it went to, in
        one Redis round trip (`enqueue_and_wake`). Every enqueue comes here, the delay queue's
        too: a delayed message goes to the delay queue, whose consumer holds it until its
        time, then enqueues it again undelayed, which wakes the queue's consumers."""
        enqueue_and_wake(self, queue_name, message_id, data, WAKE_TOKENS)
