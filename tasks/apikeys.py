"""API-key usage: the clock's job that writes the usage counted in the key-value store to the
keys' rows (`models.apikeys.keys.taken_usage`; exact, and nothing is lost when a write fails)."""

from __future__ import annotations

import logging

from models.apikeys.keys import taken_usage, write_usage
from tasks.broker import actor, commit_step, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="clock", max_retries=0,
       commits_in_steps="the usage is committed inside the block that takes it from the store, "
                        "so a commit that fails gives it back")
def flush_api_key_usage() -> None:
    """Add the counted requests, last use time and address to each key used since last time."""
    db = session()
    with taken_usage(runtime().store) as usages:
        flushed = write_usage(db, usages)
        commit_step(db)
    if flushed:
        log.debug("API key usage written", extra={"count": flushed})
