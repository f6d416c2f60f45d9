"""API-key usage: the clock's job that writes the usage counted in the key-value store to the
keys' rows (`models.apikeys.keys.flush_usage`; exact, and nothing is lost when a write fails)."""

from __future__ import annotations

import logging

from models.apikeys.keys import flush_usage
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="clock", max_retries=0)
def flush_api_key_usage() -> None:
    """Add the counted requests, last use time and address to each key used since last time."""
    flushed = flush_usage(session(), runtime().store)
    if flushed:
        log.debug("API key usage written", extra={"count": flushed})
