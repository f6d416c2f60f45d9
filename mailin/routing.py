"""The recipient cache of one SMTP server: recent answers of `models.mail.ingest.lookup_route`.

RCPT must be cheap: a burst of mail for one inbox (or a spammer probing addresses) should not
cost a database round trip per recipient. So answers are kept briefly in process memory:
known inboxes for `smtp.route_cache_ttl`, unknown addresses for the shorter
`smtp.route_cache_negative_ttl` (a new inbox must start receiving quickly). The expiry of a
known inbox is checked every time the answer is used, so a lapsed inbox is refused at once;
an answer that says "lapsed" is looked up again, since the inbox may have been extended.
Inboxes deleted meanwhile are caught when the message is stored: `commit_messages` re-checks
every recipient in its transaction.

The cache belongs to one event loop (one mailin server) and is only touched from it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta

from burnbox.timeutil import utcnow
from models.mail.ingest import Route


class RouteCache:
    """Address -> Route (or None: no such inbox), each answer with its own deadline; the
    oldest answers are dropped beyond `max_entries`."""

    def __init__(self, positive_ttl: timedelta, negative_ttl: timedelta, max_entries: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._positive = positive_ttl.total_seconds()
        self._negative = negative_ttl.total_seconds()
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, Route | None]] = OrderedDict()

    def get(self, address: str) -> tuple[bool, Route | None]:
        """(True, answer) for a usable cached answer: an unknown address, or an inbox that is
        still live; (False, None) when the database must be asked."""
        entry = self._entries.get(address)
        if entry is None:
            return False, None
        deadline, route = entry
        if deadline <= self._clock() or (route is not None and route.expires_at <= utcnow()):
            del self._entries[address]
            return False, None
        return True, route

    def put(self, address: str, route: Route | None) -> None:
        """Remember the database's answer for `address`."""
        ttl = self._positive if route is not None else self._negative
        if ttl <= 0 or self._max <= 0:
            return
        self._entries[address] = (self._clock() + ttl, route)
        self._entries.move_to_end(address)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
