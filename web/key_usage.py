"""An API key's usage (request_count, last_used_at, last_used_ip) as one request counts it:
once per accepted request, never for a refused one (401, 403).

A request with a key this process already knows has its usage counted ahead, in the rate
limiter's round trip to the store (saving the key's own round trip); any other request's is
counted after its answer. This module owns the one per-request record that connects the two
steps, so neither the limiter nor authentication keeps a flag of its own:

1. `write_ahead` (the limiter, before authentication): what to count in its round trip, or
   None when this process does not know the key;
2. `counted_ahead` (the limiter): the store counted it;
3. `accepted` (authentication, once the key is accepted): the request's usage is settled when
   it ends: counted after the answer, or, when it was counted ahead and the answer is a 401 or
   403 after all, taken back;
4. `release_unclaimed` (the limiter, when the request ends): usage counted ahead for a key that
   was never accepted (refused at authentication, a public endpoint, an error on the way) is
   taken back.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask import Response, after_this_request, g

from burnbox.kv import KeyValueStore
from models.apikeys.keys import UsageWrite, record_usage, uncount_usage, usage_write
from models.identity.callers import CallerCache
from web.context import runtime

_RECORD = "key_usage"


@dataclass
class _RequestUsage:
    """This request's usage counted ahead: the key id (the store's member), until claimed."""

    ahead: str | None = None


def _this_request() -> _RequestUsage:
    record = g.get(_RECORD)
    if record is None:
        record = g.setdefault(_RECORD, _RequestUsage())
    return record


def write_ahead(key_hash: str, ip: str) -> UsageWrite | None:
    """The usage writes of a request with the key of `key_hash`, to count in the limiter's
    round trip, when this process has the key in its callers' cache; None otherwise (its usage
    is then counted after the answer)."""
    known = CallerCache.of(runtime().caches).peek(("key", key_hash))
    return None if known is None else usage_write(known.grant.id, ip)


def counted_ahead(usage: UsageWrite) -> None:
    """Note that the limiter's round trip counted `usage` for this request."""
    _this_request().ahead = usage.member


def accepted(key_id: uuid.UUID, ip: str) -> None:
    """The key was accepted for this request: settle its usage when the request ends (counted
    once for an accepted answer, nothing for a 401 or 403)."""
    record = _this_request()
    was_ahead = record.ahead == str(key_id)
    if was_ahead:
        record.ahead = None
    store = runtime().store

    @after_this_request
    def settle(response: Response) -> Response:
        refused = response.status_code in (401, 403)
        if was_ahead and refused:
            uncount_usage(store, key_id)
        elif not was_ahead and not refused:
            record_usage(store, key_id, ip)
        return response


def release_unclaimed(store: KeyValueStore) -> None:
    """Take back usage counted ahead for a key never accepted in this request."""
    record = g.get(_RECORD)
    if record is not None and record.ahead is not None:
        uncount_usage(store, uuid.UUID(record.ahead))
        record.ahead = None
