"""Attempts a team asks for by hand: redelivering a logged delivery, and pinging a webhook.

- A redelivery sends a delivery of the log once more: the same delivery id and payload, the next
  attempt number, signed with the webhook's current secret and sent to its current URL. Only a
  finished delivery (succeeded, failed or cancelled) is redelivered: one whose attempts are still
  scheduled or in flight gets 409, since sending it beside them would race its own retries.
- A ping is a new delivery of the test event `webhook.ping`, with `{"webhook_id"}` as its data,
  signed like any other.
- Both are one attempt, made by the worker (the request answers 202 at once) and logged with the
  webhook's other attempts. A failed one is not retried and does not count in the webhook's
  failure_count: that counts events whose every scheduled attempt failed, and a hand-made
  attempt is no event. The disabled webhook of an archived team is refused (409) like any other.
- Both are audited (`webhook.redeliver`, `webhook.ping`). Actions flush; the caller commits and
  then has the worker send the attempt (`tasks.webhook_manual`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.delivery.webhooks import (
    FAILED,
    FINISHED,
    PENDING,
    SUCCEEDED,
    Attempt,
    DeliveryLogEntry,
    Outcome,
    Webhook,
    WebhookDelivery,
)
from models.errors import Conflict, NotFound
from models.tenancy.access import audit
from models.tenancy.teams import TeamAccess, ensure_team_active

PING = "webhook.ping"


@dataclass(frozen=True)
class Requested:
    """An attempt a request asked for: what the worker is to send, and what the API answers."""

    delivery_id: uuid.UUID
    webhook_id: uuid.UUID
    event: str
    attempt: int


def _ensure_sendable(webhook: Webhook, access: TeamAccess) -> None:
    ensure_team_active(access.team)
    if not webhook.is_active:
        raise Conflict("the webhook is disabled: enable it (is_active true) first")


def redeliver(session: Session, access: TeamAccess, webhook: Webhook, delivery_id: uuid.UUID
              ) -> Requested:
    """Make a finished delivery of the webhook due again as its next attempt. NotFound when the
    webhook has no such delivery; Conflict when it is still being attempted or the webhook is
    disabled."""
    delivery = session.get(WebhookDelivery, delivery_id, with_for_update=True)
    # The webhook is already the team's: its delivery id alone must not reach another's.
    if delivery is None or delivery.webhook_id != webhook.id:
        raise NotFound("delivery not found")
    _ensure_sendable(webhook, access)
    if delivery.state not in FINISHED:
        raise Conflict("the delivery is still being attempted: wait until it has finished")
    delivery.state, delivery.due_at, delivery.completed_at = PENDING, utcnow(), None
    requested = Requested(delivery.id, webhook.id, delivery.event, delivery.attempts + 1)
    session.flush()
    audit(session, access.org.caller, "webhook.redeliver", org_id=access.team.org_id,
          resource_type="webhook", resource_id=webhook.id,
          after={"delivery_id": str(delivery.id), "attempt": requested.attempt})
    return requested


def ping(session: Session, access: TeamAccess, webhook: Webhook) -> Requested:
    """Add a delivery of the test event to the webhook, due now. Conflict when the webhook is
    disabled or the team archived."""
    _ensure_sendable(webhook, access)
    now = utcnow()
    delivery = WebhookDelivery(id=uuid.uuid4(), webhook_id=webhook.id, event_id=uuid.uuid4(),
                               event=PING, payload={"webhook_id": str(webhook.id)},
                               event_created_at=now, state=PENDING, attempts=0, due_at=now,
                               created_at=now)
    session.add(delivery)
    session.flush()
    audit(session, access.org.caller, "webhook.ping", org_id=access.team.org_id,
          resource_type="webhook", resource_id=webhook.id,
          after={"delivery_id": str(delivery.id), "attempt": 1})
    return Requested(delivery.id, webhook.id, PING, 1)


def record_single_attempt(session: Session, attempt: Attempt, outcome: Outcome) -> bool:
    """Log a hand-made attempt and finish its delivery (succeeded or failed: no retry, no
    failure count). Nothing is recorded, and False returned, when the lease was lost meanwhile:
    whoever took it over records that attempt."""
    now = utcnow()
    moved = session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id == attempt.delivery_id,
               WebhookDelivery.lease_token == attempt.lease_token)
        .values(attempts=attempt.number, state=SUCCEEDED if outcome.success else FAILED,
                lease_token=None, lease_until=None, completed_at=now)
        .execution_options(synchronize_session=False))
    if not moved.rowcount:
        return False
    session.add(DeliveryLogEntry(
        id=uuid.uuid4(), delivery_id=attempt.delivery_id, webhook_id=attempt.webhook_id,
        event=attempt.event, attempt=attempt.number, success=outcome.success,
        response_status=outcome.response_status, response_time_ms=outcome.response_time_ms,
        error=outcome.error, created_at=attempt.started_at))
    session.flush()
    return True
