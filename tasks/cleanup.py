"""The cleanup worker: one periodic job (`clock.cleanup_interval`) that runs every cleanup step.

A step takes the message's database session, removes what has lapsed and returns how many
rows it removed; each step commits on its own, so one failing step neither undoes nor blocks
the others. The first failure is raised once every step has run (the next tick runs them all
again; each step is idempotent). Steps: expired API keys (`models.apikeys`), lapsed invites
(`models.invites`); the inbox expiry joins this list.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.orm import Session

from models.apikeys import delete_expired_keys
from models.invites import purge_expired_invites
from tasks.broker import actor, session

log = logging.getLogger(__name__)

CleanupStep = Callable[[Session], int]

# (name, step), run in this order.
STEPS: list[tuple[str, CleanupStep]] = [
    ("expired_api_keys", delete_expired_keys),
    ("expired_invites", purge_expired_invites),
]


@actor(queue_name="clock", max_retries=0)
def cleanup() -> None:
    """Run every cleanup step, each in its own transaction."""
    db = session()
    failure: Exception | None = None
    for name, step in STEPS:
        try:
            removed = step(db)
            db.commit()
        except Exception as exc:
            db.rollback()
            log.exception("cleanup step failed", extra={"step": name})
            failure = failure or exc
            continue
        if removed:
            log.info("cleanup removed rows", extra={"step": name, "count": removed})
    if failure is not None:
        raise failure
