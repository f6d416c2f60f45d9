"""The worker's metrics: a Dramatiq middleware counting actor runs, and the helpers the webhook,
outbox and cleanup code call in one line each (families: burnbox.metrics)."""

from __future__ import annotations

import time
from typing import Any

import dramatiq
from dramatiq.middleware import Middleware
from sqlalchemy.orm import Session

from burnbox import metrics
from burnbox.timeutil import utcnow
from models.db import end_read_only_transaction
from models.delivery.webhooks import Attempt, Outcome
from models.events import outbox_backlog

# The clock's jobs run on this queue; their last success is what an operator alerts on.
CLOCK_QUEUE = "clock"


class ActorMetrics(Middleware):
    """Count every processed message by actor and outcome (success, failure, skipped), and
    stamp the last success of each clock job."""

    def after_process_message(self, broker: dramatiq.Broker, message: dramatiq.Message, *,
                              result: Any = None, exception: BaseException | None = None) -> None:
        outcome = "success" if exception is None else "failure"
        metrics.ACTOR_RUNS.labels(message.actor_name, outcome).inc()
        if exception is None and message.queue_name == CLOCK_QUEUE:
            metrics.JOB_LAST_SUCCESS.labels(message.actor_name).set(time.time())

    def after_skip_message(self, broker: dramatiq.Broker, message: dramatiq.Message) -> None:
        metrics.ACTOR_RUNS.labels(message.actor_name, "skipped").inc()


def attempt_outcome(outcome: Outcome) -> str:
    """The bounded label of an attempt's outcome: 2xx, non_2xx (any other HTTP answer, a
    redirect included), timeout, refused_address (the SSRF guard), or error (no answer)."""
    if outcome.success:
        return "2xx"
    if outcome.response_status is not None:
        return "non_2xx"
    error = outcome.error or ""
    # The prefixes tasks.webhooks.send_attempt writes for these two kinds of failure.
    if error.startswith("timeout"):
        return "timeout"
    if error.startswith("address refused"):
        return "refused_address"
    return "error"


def observe_attempt(attempt: Attempt, outcome: Outcome) -> None:
    """Record one webhook attempt; the first attempt also records the lag since its event was
    committed."""
    lag = ((attempt.started_at - attempt.event_created_at).total_seconds()
           if attempt.number == 1 else None)
    metrics.record_webhook_attempt(attempt.number, attempt_outcome(outcome),
                                   (outcome.response_time_ms or 0) / 1000, lag)


def observe_outbox(db: Session) -> None:
    """Set the outbox gauges from the events still undispatched now, ending the read."""
    count, oldest = outbox_backlog(db)
    end_read_only_transaction(db)
    metrics.record_outbox(count, (utcnow() - oldest).total_seconds() if oldest else 0.0)
