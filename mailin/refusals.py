"""The log of refused recipients: one line per refusal, a summary under a flood.

A refused recipient is what an operator looks for first when mail "does not arrive" (a typo in
the domain, an inbox that lapsed), so each one is logged with its reason, the client's address
and the recipient's domain (never the whole address: local parts can be personal). A spammer
probing addresses, or a client retrying in a loop, must not turn that into a line per message:
after `burst` lines in one `window`, refusals are only counted, and one summary line is written
when the window ends.

One `RefusalLog` belongs to one SMTP server's event loop and is only touched from it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable

from models.mail.ingest.catchall import DOMAIN_FULL, INVALID_LOCAL_PART
from models.mail.ingest.store import EXPIRED_INBOX, UNKNOWN_DOMAIN, UNKNOWN_INBOX

log = logging.getLogger(__name__)

# At most BURST lines per WINDOW seconds: a few real mistakes all show; a flood is one summary
# a minute.
WINDOW = 60.0
BURST = 10

# How each reason reads in a log line.
WORDS = {UNKNOWN_DOMAIN: "the domain is not served here",
         UNKNOWN_INBOX: "no such inbox", EXPIRED_INBOX: "the inbox has expired",
         INVALID_LOCAL_PART: "not a valid address at a catch-all domain",
         DOMAIN_FULL: "the catch-all domain has reached its limit of live inboxes"}


class RefusalLog:
    """Logs refused recipients, at most `burst` lines per `window` seconds, then a summary of
    the rest when the window ends (see the module docstring)."""

    def __init__(self, window: float = WINDOW, burst: int = BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.burst = burst
        self._clock = clock
        self._window_end = float("-inf")
        self._lines = 0
        self._held: Counter[str] = Counter()
        self._clients: Counter[str] = Counter()
        self._domains: Counter[str] = Counter()
        self._flush_timer: asyncio.TimerHandle | None = None

    def refused(self, reason: str, client_ip: str, domain: str) -> None:
        """Record one refused recipient: a line while the window's burst lasts, else a count
        for the summary (written from a timer of the running loop at the window's end)."""
        now = self._clock()
        if now >= self._window_end:
            self.flush()
            self._window_end = now + self.window
            self._lines = 0
        if self._lines < self.burst:
            self._lines += 1
            log.info("refused mail for %s from %s: %s", domain, client_ip, WORDS[reason],
                     extra={"reason": reason, "client_ip": client_ip,
                            "recipient_domain": domain})
            return
        self._held[reason] += 1
        self._clients[client_ip] += 1
        self._domains[domain] += 1
        if self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(
                max(0.0, self._window_end - now), self.flush)

    def flush(self) -> None:
        """Write the summary of the refusals counted but not logged, if any."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if not self._held:
            return
        total = sum(self._held.values())
        reasons = ", ".join(f"{WORDS[reason]}: {count}"
                            for reason, count in self._held.most_common())
        [(client, _)] = self._clients.most_common(1)
        [(domain, _)] = self._domains.most_common(1)
        log.warning("refused %d more recipients in %g s without a line each (%s); from %d "
                    "client addresses (most: %s), for %d domains (most: %s)", total,
                    self.window, reasons, len(self._clients), client, len(self._domains),
                    domain, extra={"refused": dict(self._held), "clients": len(self._clients),
                                   "domains": len(self._domains), "top_client_ip": client,
                                   "top_recipient_domain": domain})
        self._held.clear()
        self._clients.clear()
        self._domains.clear()
