"""Chaos rules at the SMTP server: the inbox's failure rules (models.mail.chaos) applied to
RCPT and DATA.

The process keeps every rule that may still fire under `CHAOS_REVISION_KEY`, the revision
each committed write of a rule moves (models.caching). A connection's first transaction reads
the rules, so a rule set, cleared or spent in any process applies to every SMTP connection
opened after it in every mailin process. An open connection keeps what it read for
`REREAD_SECONDS`, then takes the process's latest read when that started within the last
`REREAD_SECONDS`, and reads itself only when none did: a change reaches connections already
open within about a second, for one read per process and second rather than one per open
connection (a hop to the executor and a key-value read each). The rules a catch-all copies to
the inbox its first message creates apply at once to the next transaction of every connection
of the process that stored it (`inboxes_created`). With no rule set, no database query is
made; the rules are read from the database only when the revision moved.

- RCPT: the rules of that recipient's inbox answer for that recipient alone.
- DATA: the rules of every recipient's inbox apply to the message as a whole, since SMTP has
  one reply to DATA for all of them: a reply or a close there refuses the message for every
  recipient (nothing is stored; the sender retries or gives up for all of them). Storing it
  for the others while answering 4xx would store it twice there when the sender retries.

Per inbox and stage, rules are tried in order: a `delay` that fires waits and the next rule is
tried; the first `reply` or `close` that fires answers. A rule fires when its trigger draws
it (every message for `times`, a random `percent` of them) and its counter could be moved
(`models.mail.chaos.fire`: a spent rule no longer fires, whichever process spent it).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

from aiosmtpd.smtp import SMTP, Envelope

from models.caching import CHAOS_REVISION_KEY, RevisionedCache, Revisions, kept_in
from models.mail.chaos import CLOSE, DATA, DELAY, RCPT, ActiveRule, active_rules, fire
from models.runtime import Runtime

log = logging.getLogger(__name__)

Rules = dict[uuid.UUID, tuple[ActiveRule, ...]]

# How long an open connection works with the rules it read before it reads the revision again.
REREAD_SECONDS = 1.0


@dataclass
class _Transaction:
    """The rules one SMTP transaction works with, and its accepted recipients' inboxes."""

    rules: Rules
    inboxes: list[uuid.UUID] = field(default_factory=list)


class ChaosGate:
    """Applies the inboxes' chaos rules to one SMTP server's transactions."""

    CACHE = "mailin.chaos"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._cache: RevisionedCache[Rules] = kept_in(
            runtime.caches, self.CACHE, lambda: RevisionedCache(CHAOS_REVISION_KEY))
        # Each open transaction's rules and the inboxes of the recipients it accepted.
        self._transactions: weakref.WeakKeyDictionary[Envelope, _Transaction] = (
            weakref.WeakKeyDictionary())
        # Each open connection's rules and when the read that gave them started
        # (time.monotonic()), and the process's latest read the same way.
        self._connections: weakref.WeakKeyDictionary[SMTP, tuple[Rules, float]] = (
            weakref.WeakKeyDictionary())
        self._latest: tuple[Rules, float] | None = None

    async def at_rcpt(self, server: SMTP, envelope: Envelope, inbox_id: uuid.UUID
                      ) -> str | None:
        """The reply of a rule of inbox `inbox_id` for its RCPT; None when the recipient may be
        accepted (it is then remembered for `at_data`)."""
        transaction = self._transactions.get(envelope)
        if transaction is None:
            transaction = self._transactions[envelope] = _Transaction(await self._rules(server))
        reply = await self._apply(server, transaction.rules.get(inbox_id, ()), RCPT)
        if reply is None:
            transaction.inboxes.append(inbox_id)
        return reply

    async def at_data(self, server: SMTP, envelope: Envelope) -> str | None:
        """The reply of a rule of any accepted recipient's inbox for the message; None to
        store it."""
        transaction = self._transactions.pop(envelope, None)
        if transaction is None:
            return None
        for inbox_id in transaction.inboxes:
            reply = await self._apply(server, transaction.rules.get(inbox_id, ()), DATA)
            if reply is not None:
                return reply
        return None

    def inboxes_created(self) -> None:
        """Inboxes with copies of their assignment's rules were committed by this process (a
        catch-all's first messages): every connection reads the rules at its next transaction
        (the copies moved the revision), so they apply from the inbox's second message on,
        whichever connection carries it. Kept reads gave an open connection the rules read
        before the inbox existed for up to REREAD_SECONDS."""
        self._connections.clear()
        self._latest = None

    async def _rules(self, server: SMTP) -> Rules:
        """The rules for a new transaction of `server`'s connection. Its first transaction
        reads them (a rule set before the connection opened applies to it); later ones keep
        what it has until REREAD_SECONDS have passed since that read started, then take the
        process's latest read if that started less than REREAD_SECONDS ago, or read. (Each
        connection reading on its own cost a hop to the thread pool and a key-value read per
        connection and second: 3 % of the SMTP process's CPU with 128 connections open.)"""
        kept = self._connections.get(server)
        now = time.monotonic()
        if kept is not None and now - kept[1] < REREAD_SECONDS:
            return kept[0]
        latest = self._latest
        if kept is not None and latest is not None and now - latest[1] < REREAD_SECONDS:
            self._connections[server] = latest
            return latest[0]
        rules = await asyncio.get_running_loop().run_in_executor(None, self._read)
        if self._latest is None or self._latest[1] < now:
            self._latest = (rules, now)
        self._connections[server] = (rules, now)
        return rules

    def _read(self) -> Rules:
        """Every rule that may fire, from the cache while the revision stands."""
        def load() -> Rules:
            with self.runtime.db.session() as db:
                return active_rules(db)

        return self._cache.get(Revisions(self.runtime.store, {}), "rules", load) or {}

    async def _apply(self, server: SMTP, rules: Iterable[ActiveRule], stage: str
                     ) -> str | None:
        for rule in rules:
            if rule.stage != stage:
                continue
            # A percentage is drawn per message.
            if rule.percent is not None and random.random() * 100 >= rule.percent:
                continue
            if not await asyncio.get_running_loop().run_in_executor(None, self._fire, rule.id):
                continue  # spent meanwhile, maybe by another process
            log.info("chaos rule fired at %s: %s", stage, rule.action,
                     extra={"rule": str(rule.id), "action": rule.action})
            if rule.action == DELAY:
                await asyncio.sleep(rule.delay)
                continue
            if rule.action == CLOSE and server.transport is not None:
                # Closed once the 421 is written: the reply is pushed right after this returns.
                asyncio.get_running_loop().call_soon(server.transport.close)
            return rule.reply
        return None

    def _fire(self, rule_id: uuid.UUID) -> bool:
        with self.runtime.db.transaction() as db:
            return fire(db, rule_id)
