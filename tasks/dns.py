"""Domain verification in the worker: one check per message, and the hourly re-check of them all.

Checks are requested by domain actions (registration: auto_create; the verify endpoints: manual)
through the `domain.check_requested` event, so the message is sent only after the request
committed; the clock's `recheck_domains` job sends a background check for every domain.
A trusted domain (`domains.trusted`) is never looked up: its check records the operator's trust.
A DNS look-up error is a normal outcome of a check (recorded, previous result kept), not an
exception: only unexpected failures (database down) make Dramatiq retry. A check that runs twice
adds two history rows and leaves the same state.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from models.domains.domains import BACKGROUND, all_domain_ids
from models.domains.verification import run_check
from models.events import Event
from tasks.broker import actor, runtime, session


@actor(queue_name="dns", max_retries=3, min_backoff=5_000, max_backoff=60_000)
def check_domain(domain_id: str, trigger: str) -> None:
    """Check one domain (its DNS records, or the operator's trust) and record the outcome; a
    no-op if it was deleted."""
    run_check(session(), runtime().settings, uuid.UUID(domain_id), trigger)


def send_requested_check(_session: Session, events: Sequence[Event]) -> None:
    """Turn committed check requests into `check_domain` messages."""
    for event in events:
        check_domain.send(event.data["domain_id"], event.data["trigger"])


@actor(queue_name="clock", max_retries=0)
def recheck_domains() -> None:
    """Send a background check for every domain (the clock runs this hourly)."""
    for domain_id in all_domain_ids(session()):
        check_domain.send(str(domain_id), BACKGROUND)
