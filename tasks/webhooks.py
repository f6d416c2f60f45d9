"""Webhook delivery in the worker: the fan-out, one message per attempt, and the two clock jobs.

- `fan_out_webhooks` (an event handler) adds a delivery per subscribed webhook and, after the
  dispatch commits, sends attempt 1 of each.
- `deliver_webhook(delivery_id, attempt)` makes one attempt. The attempt number travels in the
  message because the schedule is ours, not Dramatiq's: 0 s / 5 s / 25 s before attempts 1, 2, 3
  (times `webhooks.backoff_scale`), so the actor never retries (max_retries=0) and sends the next
  attempt itself with a delay. The lease is committed before the request goes out and the outcome
  in a second transaction after it: no transaction is open during the request (on SQLite every
  transaction holds the database's write lock), and a worker that dies in between leaves a lease
  the sweep finds. Deliveries belong to the worker and its own deadline, not to the request
  that caused them, which would cancel them when it ends.
- `sweep_webhook_deliveries` (clock) re-sends attempts whose worker died or whose message was
  lost; `webhook_retry` (clock) only clears failure counts of 1 or 2 and sends nothing (a retry
  that sent would tell every subscriber of events that never happened).
"""

from __future__ import annotations

import logging
import time
import uuid

from sqlalchemy.orm import Session

from burnbox import http_client
from burnbox.dns import make_resolver
from burnbox.netguard import TargetRefused
from burnbox.settings import Settings
from models.delivery import webhooks
from models.events import Event
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


def fan_out_webhooks(db: Session, event: Event) -> None:
    """Create the event's deliveries and send their first attempts (which wait for the
    dispatch to commit them)."""
    for delivery_id in webhooks.create_deliveries(db, event):
        deliver_webhook.send(str(delivery_id), 1)


def send_attempt(attempt: webhooks.Attempt, settings: Settings) -> webhooks.Outcome:
    """Make one HTTP attempt and judge it; never raises for anything the target does."""
    body = webhooks.delivery_body(attempt)
    timeout = settings.defaults.webhook_timeout.total_seconds()
    started = time.monotonic()
    try:
        reply = http_client.post(
            attempt.url, body, webhooks.delivery_headers(attempt, body), timeout=timeout,
            allow_private=settings.webhooks.allow_private_targets,
            resolver=make_resolver(settings) if settings.dns.nameservers else None,
            ca_file=settings.webhooks.ca_file)
    except TargetRefused as exc:
        return webhooks.not_answered(f"address refused: {exc}", _since(started))
    except http_client.OutboundTimeout as exc:
        return webhooks.not_answered(f"timeout: {exc}", _since(started))
    except http_client.OutboundError as exc:
        return webhooks.not_answered(str(exc), _since(started))
    return webhooks.answered(reply.status, reply.elapsed_ms, reply.location)


def _since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


@actor(queue_name="webhooks", max_retries=0)
def deliver_webhook(delivery_id: str, attempt: int) -> None:
    """Make attempt `attempt` of a delivery, log it, and schedule the next one if it failed and
    attempts remain; a no-op for a finished, superseded or currently leased delivery."""
    db = session()
    settings = runtime().settings
    lease = settings.defaults.webhook_timeout + settings.webhooks.lease_grace
    claimed = webhooks.claim_attempt(db, uuid.UUID(delivery_id), attempt, lease)
    db.commit()
    if claimed is None:
        return
    outcome = send_attempt(claimed, settings)
    wait = webhooks.record_attempt(db, claimed, outcome,
                                   max_attempts=settings.defaults.webhook_max_retries,
                                   backoff_scale=settings.webhooks.backoff_scale)
    db.commit()
    if wait is not None:
        deliver_webhook.send_with_options(args=(delivery_id, attempt + 1),
                                          delay=round(wait.total_seconds() * 1000))


@actor(queue_name="clock", max_retries=0)
def sweep_webhook_deliveries() -> None:
    """Send again the attempts whose worker died (lease expired) or whose message was lost."""
    stalled = webhooks.stalled_deliveries(session(), runtime().settings.webhooks.lease_grace)
    if stalled:
        log.warning("re-sending stalled webhook deliveries", extra={"count": len(stalled)})
    for delivery_id, attempt in stalled:
        deliver_webhook.send(str(delivery_id), attempt)


@actor(queue_name="clock", max_retries=0)
def webhook_retry() -> None:
    """The webhook_retry worker: clear failure_count 1 or 2 of active webhooks; nothing else."""
    db = session()
    cleared = webhooks.reset_failure_counts(db)
    db.commit()
    if cleared:
        log.info("webhook failure counts cleared", extra={"count": cleared})
