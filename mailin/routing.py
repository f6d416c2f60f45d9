"""The recipient cache of one SMTP server: recent answers of
`models.mail.ingest.store.lookup_recipient`.

RCPT must be cheap: a burst of mail for one inbox (or a spammer probing addresses) should not
cost a database round trip per recipient. So answers are kept briefly in process memory:
known inboxes for `smtp.route_cache_ttl`, unknown addresses (with why: an unknown domain or
an unknown inbox) for the shorter `smtp.route_cache_negative_ttl` (a new inbox must start
receiving quickly). The expiry of a
known inbox is checked every time the answer is used, so a lapsed inbox is refused at once;
an answer that says "lapsed" is looked up again, since the inbox may have been extended.
A catch-all answer (models/mail/ingest/catchall.py: no inbox yet, one will be made with the message)
is not kept: the first message makes it wrong, and a kept one sent the next messages within
`smtp.route_cache_negative_ttl` on as if the inbox did not exist, past the chaos rules it was
given. The refusals a catch-all gives (an invalid local part, the domain full) are kept as
unknown addresses are, so a domain made catch-all applies within that time.
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
from models.mail.ingest.catchall import CatchAll
from models.mail.ingest.store import Route


class RouteCache:
    """Address -> Route (or the reason there is none, a `models.mail.ingest.store` constant), each
    answer with its own deadline; the oldest answers are dropped beyond `max_entries`."""

    def __init__(self, positive_ttl: timedelta, negative_ttl: timedelta, max_entries: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._positive = positive_ttl.total_seconds()
        self._negative = negative_ttl.total_seconds()
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, Route | CatchAll | str]] = OrderedDict()

    def get(self, address: str) -> Route | CatchAll | str | None:
        """The usable cached answer: why the address is refused, or an inbox that is still
        live; None when the database must be asked."""
        entry = self._entries.get(address)
        if entry is None:
            return None
        deadline, route = entry
        if deadline <= self._clock() or (isinstance(route, Route)
                                         and route.expires_at <= utcnow()):
            del self._entries[address]
            return None
        return route

    def put(self, address: str, route: Route | CatchAll | str) -> None:
        """Remember the database's answer for `address` (not a CatchAll: see the module)."""
        ttl = self._positive if isinstance(route, Route) else self._negative
        if ttl <= 0 or self._max <= 0 or isinstance(route, CatchAll):
            return
        self._entries[address] = (self._clock() + ttl, route)
        self._entries.move_to_end(address)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
