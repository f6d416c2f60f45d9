"""Domain verification in the worker: one check per message, and the hourly re-check of them all.

Checks are requested by domain actions (registration: auto_create; the verify endpoints: manual)
through the `domain.check_requested` event, so the message is sent only after the request
committed; the clock's `recheck_domains` job sends a background check for every domain.
A DNS look-up error is a normal outcome of a check (recorded, previous result kept), not an
exception: only unexpected failures (database down) make Dramatiq retry. A check that runs twice
adds two history rows and leaves the same state.
"""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from burnbox.dns import make_resolver
from models.domains.domains import BACKGROUND, all_domain_ids
from models.domains.verification import check_target, mx_target, observe, record_check
from models.events import Event
from tasks.broker import actor, runtime, session


@actor(queue_name="dns", max_retries=3, min_backoff=5_000, max_backoff=60_000)
def check_domain(domain_id: str, trigger: str) -> None:
    """Check one domain's DNS records and record the outcome; a no-op if it was deleted."""
    db = session()
    target = check_target(db, uuid.UUID(domain_id))
    # End the read transaction before the look-ups: on SQLite every transaction holds the
    # database's write lock, and DNS can take dns.timeout per look-up.
    db.rollback()
    if target is None:
        return
    settings = runtime().settings
    observation = observe(make_resolver(settings), target.domain_name)
    record_check(db, target.domain_id, observation, mx_target(settings), trigger)
    db.commit()


def send_requested_check(_session: Session, event: Event) -> None:
    """Turn a committed check request into a `check_domain` message."""
    check_domain.send(event.data["domain_id"], event.data["trigger"])


@actor(queue_name="clock", max_retries=0)
def recheck_domains() -> None:
    """Send a background check for every domain (the clock runs this hourly)."""
    for domain_id in all_domain_ids(session()):
        check_domain.send(str(domain_id), BACKGROUND)
