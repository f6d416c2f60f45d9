"""Requests that wait for something published on a realtime channel (`GET .../emails/wait`).

A waiting request holds no database connection: it looks once, then releases the request's
session and sleeps on the process's realtime subscriber (`web.sockets.Hub`, the one that feeds
the WebSockets), looking again only when a message arrives on its channels or the time is up.
Under gunicorn's gevent workers the sleep is a gevent queue wait, so it blocks only the
request's greenlet; under Werkzeug's threaded server it blocks only the request's thread. The
publishers are other processes (mailin right after its commit, the worker after its fan-out),
so it works across hosts through Redis.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TypeVar

from burnbox import metrics
from web.context import close_db
from web.sockets import Listener, hub

T = TypeVar("T")


@metrics.tracking(metrics.WAITS_IN_PROGRESS)
def wait_for(channels: list[str], look: Callable[[], Sequence[T]], count: int,
             timeout: timedelta) -> tuple[Sequence[T], bool]:
    """Call `look` (which reads through the request's session, `web.context.db`) until it finds
    `count` items or `timeout` passes: at once, then after each message on `channels` and
    each time the process's subscription is made (again, or late: mail stored before it was
    published to nobody here). Return
    what the last look found and whether the time ran out first. The last look's session is
    still open, so the caller can serialise what it found (lazy relationships)."""
    deadline = time.monotonic() + timeout.total_seconds()
    listener = Listener(channels)
    subscriber = hub()
    # Listen before the first look: mail stored between that look and the subscription would
    # otherwise wake nobody, and the request would sleep through it until its timeout.
    subscriber.add(listener)
    try:
        # The looks read in the request's read-only session, whose every statement sees what
        # was committed when it began (models.db.Database.session): a snapshot taken by an
        # earlier read of the request (its permission check's) would miss mail committed
        # between that read and the subscription.
        found = look()
        while len(found) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return found, True
            # A waiting request must not pin one of the pool's few connections for up to
            # minutes: a handful of waiting test clients would starve every other request.
            close_db()
            if listener.next(timeout=remaining) is not None:
                while listener.next(timeout=0) is not None:
                    pass  # a burst of mail costs one more look, not one per message
            found = look()
        return found, False
    finally:
        subscriber.remove(listener)
