"""Webhook delivery in the worker: the fan-out, attempt messages, and the clock's jobs.

- `fan_out_webhooks` (an event handler) adds a delivery per subscribed webhook and, after the
  dispatch commits, sends attempt 1 of each. Inside `first_attempts_together` (the dispatch of
  a chunk of events) those first attempts wait for the end of the chunk and leave in messages
  of up to `DELIVERY_BATCH` deliveries of one webhook each.
- `deliver_webhook(delivery_ids, attempt)` makes attempt `attempt` of each delivery listed. The
  attempt number travels in the message because the schedule is ours, not Dramatiq's: 0 s /
  5 s / 25 s before attempts 1, 2, 3 (times `webhooks.backoff_scale`), so the actor never
  retries (max_retries=0) and sends the next attempt itself with a delay. The attempts of a
  message leave side by side, each with its own deadline. The leases are a step committed
  before the first request goes out (the actor commits in steps), and the outcomes the
  message's unit of work, committed when the actor returns: no transaction is open during a
  request (on SQLite every transaction holds the database's write lock), and a worker that
  dies in between, or an outcome whose commit fails, leaves leases the sweep finds.
  Deliveries belong to the worker and its own deadline, not to the request that caused them,
  which would cancel them when it ends.
- `sweep_webhook_deliveries` (clock) re-sends attempts whose worker died or whose message was
  lost, a page per message and the next page at once while pages are full;
  `sweep_webhook_deliveries_after_outage` (clock, once Redis answers again after an outage)
  does the same without the grace. `webhook_retry` (clock) only clears failure counts of 1 or
  2 and sends nothing (a retry that sent would tell every subscriber of events that never
  happened).
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy.orm import Session

from burnbox import http_client, metrics
from burnbox.dns import outbound_resolver
from burnbox.netguard import TargetRefused
from burnbox.settings import Settings
from burnbox.timeutil import isoformat, utcnow
from models.db import after_commit
from models.delivery import webhooks
from models.events import Event
from models.platform.settings import live_settings
from tasks.broker import actor, commit_step, runtime, sent_at, session
from tasks.metrics import observe_attempt

log = logging.getLogger(__name__)


# Deliveries one attempt message carries at most. Per message the worker paid more CPU in the
# broker (fetch, acknowledgement, middleware) and in its two transactions (a connection
# checkout each) than in the HTTP request; a message of several deliveries pays them once.
# Its attempts are made side by side (`_make_attempts`), so a message holds the deliveries of
# one webhook only (a slow receiver then holds its own message's thread, nobody else's).
DELIVERY_BATCH = 8

# session.info key: the first attempts held by `first_attempts_together`, delivery -> webhook.
_HELD = "webhooks.held_first_attempts"


def fan_out_webhooks(db: Session, events: Sequence[Event]) -> None:
    """Create the events' deliveries and, once the dispatch commits them, send their first
    attempts (or hold them for `first_attempts_together`)."""
    created = webhooks.create_deliveries(db, events)
    if created:
        after_commit(db, partial(_first_attempts, db, created))


def _first_attempts(db: Session, created: Mapping[uuid.UUID, uuid.UUID]) -> None:
    held: dict[uuid.UUID, uuid.UUID] | None = db.info.get(_HELD)
    if held is None:
        send_attempts(created, 1)
    else:
        held.update(created)


@contextmanager
def first_attempts_together(db: Session) -> Iterator[None]:
    """Hold the first attempts of the deliveries committed in `db` during the block, and send
    them when it ends, in messages of up to `DELIVERY_BATCH` deliveries per webhook (a chunk
    of events dispatched one transaction each would otherwise send a message per event).
    Deliveries whose attempts are never sent (the process died first, Redis was down) stay
    pending, and the delivery sweep sends them once overdue."""
    held: dict[uuid.UUID, uuid.UUID] = {}
    db.info[_HELD] = held
    try:
        yield
    finally:
        del db.info[_HELD]
        try:
            send_attempts(held, 1)
        except Exception:
            # As an after-commit step's failure: the deliveries are committed, and the sweep
            # sends what did not leave; raising would report the dispatch as failed.
            log.exception("sending first webhook attempts failed; the sweep will send them",
                          extra={"count": len(held)})


def send_attempts(deliveries: Mapping[uuid.UUID, uuid.UUID], number: int) -> None:
    """Send attempt `number` of each delivery (delivery id -> webhook id): a message per
    webhook and `DELIVERY_BATCH` deliveries."""
    by_webhook: dict[uuid.UUID, list[str]] = {}
    for delivery_id, webhook_id in deliveries.items():
        by_webhook.setdefault(webhook_id, []).append(str(delivery_id))
    for ids in by_webhook.values():
        for start in range(0, len(ids), DELIVERY_BATCH):
            deliver_webhook.send(ids[start:start + DELIVERY_BATCH], number)


def send_attempt(attempt: webhooks.Attempt, settings: Settings) -> webhooks.Outcome:
    """Make one HTTP attempt and judge it; never raises for anything the target does."""
    body = webhooks.delivery_body(attempt)
    timeout = settings.defaults.webhook_timeout.total_seconds()
    started = time.monotonic()
    try:
        reply = http_client.post(
            attempt.url, body, webhooks.delivery_headers(attempt, body), timeout=timeout,
            allow_private=settings.webhooks.allow_private_targets,
            resolver=outbound_resolver(settings),
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


class _Helpers(threading.local):
    """Each delivery thread's own helper threads, which make a message's attempts beside its
    own (`_make_attempts`); made on first use, and ended with the thread that owns them."""

    pool: ThreadPoolExecutor | None = None


_helpers = _Helpers()


def _make_attempt(claim: webhooks.Attempt, settings: Settings
                  ) -> tuple[webhooks.Attempt, webhooks.Outcome]:
    # The timestamp a receiver checks is when its request left, not when the batch was
    # claimed.
    sent = dataclasses.replace(claim, started_at=utcnow())
    with metrics.tracking(metrics.WEBHOOK_IN_FLIGHT):
        outcome = send_attempt(sent, settings)
    observe_attempt(sent, outcome)
    return sent, outcome


def _make_attempts(claimed: Sequence[webhooks.Attempt], settings: Settings
                   ) -> list[tuple[webhooks.Attempt, webhooks.Outcome]]:
    """Make the claimed attempts side by side, each with its own deadline, and return them
    with their outcomes in the order given. The first is made on this thread, the others on
    its `DELIVERY_BATCH - 1` helpers, so a message's attempts all leave at once: made one
    after another, a receiver answering in 2 s held a delivery thread 16 s per message, a
    worker process made `delivery_threads / 2` attempts a second to it, and a killed worker's
    leases (one timeout per attempt of the message) lapsed up to 110 s after their claim."""
    if len(claimed) == 1:
        return [_make_attempt(claimed[0], settings)]
    if _helpers.pool is None:
        _helpers.pool = ThreadPoolExecutor(max_workers=DELIVERY_BATCH - 1,
                                           thread_name_prefix="webhook-attempt")
    # Each helper runs in a copy of this thread's context: its log lines carry the message's
    # request id.
    others = [_helpers.pool.submit(contextvars.copy_context().run, _make_attempt, claim,
                                   settings) for claim in claimed[1:]]
    first = _make_attempt(claimed[0], settings)
    return [first, *(other.result() for other in others)]


def attempt_lease(settings: Settings, deliveries: int) -> timedelta:
    """How long a message's claim on `deliveries` deliveries holds them: one attempt's timeout
    for each `DELIVERY_BATCH` of them (they leave side by side, a batch at a time), plus
    `webhooks.lease_grace`."""
    rounds = -(-deliveries // DELIVERY_BATCH)
    return settings.defaults.webhook_timeout * rounds + settings.webhooks.lease_grace


@actor(queue_name="webhooks", max_retries=0,
       commits_in_steps="the leases are committed before any byte goes out")
def deliver_webhook(delivery_ids: list[str] | str, attempt: int) -> None:
    """Make attempt `attempt` of each delivery listed (a single id: a message sent before
    attempts were batched), side by side, log them, and schedule the next attempt of those
    that failed while attempts remain; nothing for a finished, superseded or currently leased
    delivery."""
    listed = [delivery_ids] if isinstance(delivery_ids, str) else delivery_ids
    db = session()
    # The timeout and the attempt count are runtime settings (PUT /admin/platform).
    settings = live_settings(db, runtime().settings)
    claimed = webhooks.claim_attempts(db, [uuid.UUID(one) for one in listed], attempt,
                                      attempt_lease(settings, len(listed)))
    # The leases are committed, and no transaction is open, before any request leaves.
    commit_step(db)
    if not claimed:
        return
    made = []
    for start in range(0, len(claimed), DELIVERY_BATCH):
        made += _make_attempts(claimed[start:start + DELIVERY_BATCH], settings)
    following = webhooks.record_attempts(db, made,
                                         max_attempts=settings.defaults.webhook_max_retries,
                                         backoff_scale=settings.webhooks.backoff_scale)
    if following is not None:  # sent once the outcomes are committed
        deliver_webhook.send_with_options(
            args=([str(one) for one in following.delivery_ids], following.number),
            delay=round(following.wait.total_seconds() * 1000))


@actor(queue_name="clock", max_retries=0)
def sweep_webhook_deliveries(overdue_before: str | None = None) -> None:
    """Send again the attempts whose worker died (lease lapsed) or whose message was lost (due
    before `overdue_before`, an ISO time; by default more than `webhooks.lease_grace` ago):
    one page of `webhooks.sweep_page` deliveries, and after a full page the next one at once,
    in a message of its own with the same cut-off."""
    cut_off = (datetime.fromisoformat(overdue_before) if overdue_before is not None
               else utcnow() - runtime().settings.webhooks.lease_grace)
    _sweep_page(cut_off)


@actor(queue_name="clock", max_retries=0)
def sweep_webhook_deliveries_after_outage() -> None:
    """`sweep_webhook_deliveries` without the grace: every pending attempt due before this
    message was sent. The clock sends it as soon as Redis answers again after failing: the
    first attempts mailin (or the worker) could not hand over meanwhile were lost, and the
    grace would hold them back up to `webhooks.lease_grace` plus a sweep period. An attempt
    whose own message is still on its way gets a second message, which finds it claimed and
    sends nothing; no attempt goes out before it is due."""
    _sweep_page(sent_at())


def _sweep_page(overdue_before: datetime) -> None:
    """Take one page of stalled deliveries, send their attempts, and send the sweep of the next
    page at once when this one was full; the attempts leave once the taking is committed
    (their claims must find the deliveries taken), as every message sent after a write does."""
    db = session()
    page = max(runtime().settings.webhooks.sweep_page, 1)  # a page of 0 would sweep nothing
    stalled = webhooks.take_stalled_deliveries(db, overdue_before, page)
    if not stalled:
        return
    log.warning("re-sending stalled webhook deliveries", extra={"count": len(stalled)})
    by_number: dict[int, dict[uuid.UUID, uuid.UUID]] = {}
    for delivery_id, webhook_id, number in stalled:
        by_number.setdefault(number, {})[delivery_id] = webhook_id
    for number, deliveries in by_number.items():
        send_attempts(deliveries, number)
    if len(stalled) == page:
        # One page per clock period made a backlog wait a period per page (1,000 every 30 s
        # after a Redis outage): the rest is taken now, a page per message so that no message
        # holds a clock thread for long.
        sweep_webhook_deliveries.send(isoformat(overdue_before))


@actor(queue_name="clock", max_retries=0)
def webhook_retry() -> None:
    """The webhook_retry worker: clear failure_count 1 or 2 of active webhooks; nothing else."""
    cleared = webhooks.reset_failure_counts(session())
    if cleared:
        log.info("webhook failure counts cleared", extra={"count": cleared})
