"""The rule "no network inside a write transaction", checked where the network is opened.

Work that waits on other people's servers (an HTTP request, a DNS look-up, an SMTP relay) must
never run while a write transaction is open: on the embedded default every write transaction
holds SQLite's one writer lock from its first statement (BEGIN IMMEDIATE), so a link check
that asked its links for seconds inside its request's transaction made every SMTP delivery and
API write of every org wait behind it (a `250` took 4 s instead of 0.05 s; six checks at once
held SMTP for 30 s and got 503s). On PostgreSQL it holds a pooled connection and its locks for
as long. The shape to use instead: read what the work needs, end the transaction, do the slow
work, write the result in a new one.

The database adapter (`models.db`) tells this module when a write transaction begins and ends
in the current context (`write_transaction_began`, `OpenWrite.end`); every outbound adapter
(`burnbox.http_client`, `burnbox.dns`, `burnbox.netguard`, `burnbox.mailer`,
`burnbox.spam_engines`) calls `check_outbound` before it opens anything. A violation raises
`OutboundInTransaction` when the transaction's database was opened with strict checking (the
`test` environment, so the test that reaches it fails), and is logged otherwise, once per
adapter and process with the stack that reached it, so production never fails a request over
it but an operator still learns of it (`OutboundPolicy`, one per database).

Read-only sessions (`Database.session(read_only=True)`) are not write transactions and are
never reported. Object storage is not checked: it is where mail is kept, and a raw message is
written before the rows that name it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# What each adapter reports as `kind`.
HTTP = "HTTP request"
DNS = "DNS look-up"
SMTP = "SMTP connection"
SPAM_ENGINE = "spam engine connection"


class OutboundInTransaction(RuntimeError):
    """An outbound connection was opened while a write transaction of a strict database was
    open in the same context."""


class OutboundPolicy:
    """What a violation inside one database's write transactions does: raise
    OutboundInTransaction (`strict`), or log a warning the first time each adapter commits
    one, with the stack that reached it."""

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def violated(self, kind: str, target: str) -> None:
        """Act on an outbound connection of `kind` to `target` opened inside a transaction."""
        message = (f"{kind} to {target} while a write transaction is open: end the "
                   "transaction before waiting on the network")
        if self.strict:
            raise OutboundInTransaction(message)
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        log.warning(message, stack_info=True)


@dataclass(eq=False)
class OpenWrite:
    """One open write transaction, as the database adapter reported it. `ended` is shared by
    every context that copied the current one (a thread pool's task), so a transaction ended
    in one is ended in all. `still_open`, when given, is asked too: a session dropped without
    ending its transaction (garbage-collected) never reports its end, and would otherwise be
    counted in its thread for good, failing every later outbound call there."""

    policy: OutboundPolicy
    still_open: Callable[[], bool] | None = None
    ended: bool = field(default=False)

    def is_open(self) -> bool:
        """Whether the transaction still counts."""
        return not self.ended and (self.still_open is None or self.still_open())

    def end(self) -> None:
        """The transaction ended (committed or rolled back): it no longer counts anywhere, and
        it leaves the current context's list."""
        self.ended = True
        _open_writes.set(tuple(one for one in _open_writes.get() if one is not self))


_open_writes: ContextVar[tuple[OpenWrite, ...]] = ContextVar("open_write_transactions",
                                                             default=())


def write_transaction_began(policy: OutboundPolicy,
                            still_open: Callable[[], bool] | None = None) -> OpenWrite:
    """Note that a write transaction began in the current context, under `policy`; call
    `end()` on the result when it ends (`still_open`: see OpenWrite)."""
    opened = OpenWrite(policy, still_open)
    _open_writes.set((*(one for one in _open_writes.get() if one.is_open()), opened))
    return opened


def check_outbound(kind: str, target: str) -> None:
    """Call before opening an outbound connection of `kind` (HTTP, DNS, SMTP) to `target`:
    inside a write transaction its policy acts (raise, or log once); otherwise nothing. With
    several open (two databases), a strict one decides."""
    live = [one for one in _open_writes.get() if one.is_open()]
    if live:
        next((one for one in live if one.policy.strict), live[0]).policy.violated(kind, target)
