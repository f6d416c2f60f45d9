"""Releases in the worker: `deliver_release(release_id, attempt)` sends one queued release
through the release relay (models.mail.release); `run_release_rules(email_ids)` runs the
auto-release rules over new mail (models.mail.release_rules), asked by the fan-out of
`email.received` (`send_release_rules`, tasks.fanout) for the e-mails some rule covers.

Rules run after the e-mail is stored and its dispatch committed, never on the SMTP path; the
actor writes the releases it makes (queued or refused) in its one transaction and sends their
deliveries, which wait for that commit. Running it twice releases nothing twice (each
(e-mail, rule) has one release), so it may retry like any actor.

The attempt number travels in the message because the schedule is ours, not Dramatiq's (as for
webhooks): the actor never retries (max_retries=0); after a 4xx reply or no connection it
sends attempt `attempt + 1` itself, `release.retry_delay` later and four times longer each
time, up to MAX_ATTEMPTS; a 5xx reply, a relay gone since the release was queued or a stored
message gone fail it at once. Each attempt reads in one transaction, ends it, talks to the
relay, and writes the outcome in a second one: no transaction is open while the relay answers.
A message delivered twice sends once: only a queued release is attempted, and the outcome is
written under a row lock on a release still queued.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from models.db import end_read_only_transaction
from models.events import Event
from models.mail.release import (
    MAX_ATTEMPTS,
    NO_RELAY,
    QUEUED,
    Outcome,
    attempt_delivery,
    next_delay,
    pending_release,
    record_outcome,
    resent_message,
)
from models.mail.release_rules import apply_release_rules, emails_with_rules
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="mail", max_retries=0)
def deliver_release(release_id: str, attempt: int = 1) -> None:
    """Make attempt `attempt` of release `release_id` if it is still queued, record how it
    went, and send the next attempt when the relay refused for now."""
    rt, db = runtime(), session()
    pending = pending_release(db, rt.settings, uuid.UUID(release_id))
    end_read_only_transaction(db)  # nothing stays open while the relay answers
    if pending is None:
        return
    if pending.relay is None:
        outcome = Outcome(NO_RELAY)
    else:
        try:
            raw = rt.storage.get(pending.raw_key)
        except FileNotFoundError:  # the object went with its e-mails
            outcome = Outcome("the stored message is gone")
        else:
            outcome = attempt_delivery(resent_message(raw, pending, pending.relay), pending,
                                       pending.relay)
    state = record_outcome(db, pending, outcome, final=attempt >= MAX_ATTEMPTS)
    log.info("release attempt", extra={"release_id": release_id, "attempt": attempt,
                                       "state": state, "reply": outcome.reply})
    if state == QUEUED:
        deliver_release.send_with_options(
            args=(release_id, attempt + 1),
            delay=round(next_delay(rt.settings, attempt).total_seconds() * 1000))


@actor(queue_name="mail", max_retries=3, min_backoff=1_000, max_backoff=30_000)
def run_release_rules(email_ids: list[str]) -> None:
    """Release the e-mails `email_ids` (those still there) that the rules covering them
    match, and send the deliveries of the releases queued."""
    rt, db = runtime(), session()
    made = apply_release_rules(db, rt.store, rt.settings, [uuid.UUID(one) for one in email_ids])
    for release in made:
        if release.state == QUEUED:
            deliver_release.send(str(release.release_id))
    log.info("release rules run", extra={"emails": len(email_ids), "releases": len(made)})


def send_release_rules(session: Session, events: Sequence[Event]) -> None:
    """Ask for the auto-release rules to run over the new e-mails of a run of
    `email.received` events that some rule covers (sent once the dispatch commits)."""
    ruled = emails_with_rules(session, [uuid.UUID(event.data["email_id"]) for event in events])
    if ruled:
        run_release_rules.send([str(email_id) for email_id in ruled])
