"""SMTP command hooks for aiosmtpd: refuse early, store durably, then answer 250.

- RCPT: at most `smtp.max_recipients` per message (`452 4.5.3`); an address whose domain is
  not served here is refused with `550 5.1.2`, an unknown inbox of a served domain or a lapsed
  one (at once, before the cleanup removes it) with `550 5.1.1`, each reply saying which, and
  each refusal is logged (`mailin.refusals`: a summary instead under a flood). At a catch-all
  domain an address without a live inbox is accepted (its inbox is made with the message) or
  refused by the catch-all's own rules (models/mail/ingest/catchall.py). Look-ups go through the
  short-lived `RouteCache`, and to the database on a miss.
- AUTH (capture credentials, mailin/logins.py): a session logged in with an inbox's
  credentials may name any syntactically valid recipient (no domain check, no inbox look-up,
  nothing is ever relayed): RCPT answers 250 for each, up to `smtp.max_recipients`, and DATA
  stores ONE copy in that inbox with the envelope recipients kept (`envelope_to`). The inbox's
  chaos rules apply: its RCPT rules to the first recipient of each transaction (the message's
  one delivery), its DATA rules as usual. A session that did not log in keeps the rules below.
- DATA: `models.mail.ingest.store.accept_message` parses the message, then the `Committer` writes
  its objects and stores it with whatever else is waiting, in one transaction (group commit), in a
  thread of this process or in the store process (mailin/store_process.py); only
  once that has committed is the answer `250 2.0.0`. A failure answers `451 4.3.0` (the sender
  retries), a full disk `452 4.3.1` (mailin/full_disk.py: logged once until space is back),
  never a 250 for what was not stored: the sender forgets a message once it has its
  250, so a message acknowledged but not stored is lost for good.

Where the work runs: the loop parses messages up to `INLINE_PARSE_BYTES` itself (a fraction of
a millisecond of CPU, which a hop to another thread and back would cost again under the GIL);
larger ones, and route look-ups that miss the cache, go to the loop's default executor (a
thread pool of `smtp.store_threads`, set by `mailin.server.start_server`); storage writes and
commits run on the committer's thread (in the store process under `burnbox mailin`). Nothing
that waits on a disk or the database runs on the loop, so a slow commit does not stall the other
sessions.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
import weakref
from typing import Protocol

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from sqlalchemy.exc import SQLAlchemyError

from burnbox import metrics
from burnbox.outages import disk_full
from burnbox.timeutil import utcnow
from mailin.chaos import ChaosGate
from mailin.full_disk import FullDisk
from mailin.logins import LINE_TOO_LONG, TOO_MANY_FAILURES, CaptureLogin, LoginGate
from mailin.refusals import RefusalLog
from mailin.routing import RouteCache
from models.mail.entities import MAX_ADDRESS
from models.mail.inboxes import normalise_address
from models.mail.ingest.catchall import DOMAIN_FULL, INVALID_LOCAL_PART, CatchAll
from models.mail.ingest.store import (
    EXPIRED_INBOX,
    UNKNOWN_DOMAIN,
    UNKNOWN_INBOX,
    Accepted,
    AttachmentPolicy,
    Route,
    accept_message,
    lookup_recipient,
)
from models.platform.settings import live_settings
from models.runtime import Runtime

log = logging.getLogger(__name__)

EXTENSIONS = ("250-PIPELINING", "250-ENHANCEDSTATUSCODES")
# RFC 3463: X.1.1 is a bad destination mailbox, X.1.2 a bad destination system.
# X.1.3 a bad destination mailbox address syntax; X.2.2 a full mailbox (here: the domain's
# limit of live inboxes, which a catch-all recipient would exceed: the sender retries later).
NOT_AN_ADDRESS = "550 5.1.3 Not a valid mailbox address"
REFUSALS = {UNKNOWN_DOMAIN: "550 5.1.2 Domain not served here",
            UNKNOWN_INBOX: "550 5.1.1 No such inbox here",
            EXPIRED_INBOX: "550 5.1.1 Inbox expired",
            INVALID_LOCAL_PART: NOT_AN_ADDRESS,
            DOMAIN_FULL: "452 4.2.2 The domain has reached its limit of live inboxes"}
INBOXES_GONE = "550 5.1.1 Inbox deleted or expired"
TOO_MANY_RECIPIENTS = "452 4.5.3 Too many recipients"
RECIPIENT_OK = "250 2.1.5 Recipient OK"
STORED = "250 2.0.0 Message stored"
TRY_LATER = "451 4.3.0 Temporary failure, try again later"
IN_TRANSACTION = "503 5.5.1 AUTH not permitted during a mail transaction"
# Messages up to this size are parsed on the event loop (the parser's work is bounded by the
# size); larger ones in the executor so one big message never holds up the other sessions.
INLINE_PARSE_BYTES = 256 * 1024
# Seconds between reads of the platform's attachment limits (docs/admin.md: "within seconds").
POLICY_REFRESH = 2.0


class Storer(Protocol):
    """What stores accepted mail: `mailin.committer.Committer` (a thread) or
    `mailin.store_process.StoreProcess`."""

    async def commit(self, message: Accepted) -> list[uuid.UUID]:
        """Store the message; its new e-mail ids (empty: no recipient is live any more)."""
        ...


class IngestHandler:
    """aiosmtpd handler: EHLO extensions, recipient checks, and storing durably on DATA."""

    def __init__(self, runtime: Runtime, committer: Storer) -> None:
        self.runtime = runtime
        self.committer = committer
        smtp = runtime.settings.smtp
        self.routes = RouteCache(smtp.route_cache_ttl, smtp.route_cache_negative_ttl,
                                 smtp.route_cache_size)
        self._policy = AttachmentPolicy.of(runtime.settings)
        self._policy_read = -POLICY_REFRESH  # monotonic time of the last read: none yet
        self.refusals = RefusalLog()
        self.chaos = ChaosGate(runtime)
        self.logins = LoginGate(runtime)
        self.full_disk = FullDisk()
        # Transactions with a recipient whose inbox their message creates (a catch-all).
        self._catching: weakref.WeakSet[Envelope] = weakref.WeakSet()

    async def _attachment_policy(self) -> AttachmentPolicy:
        """The platform's attachment limits, read again at most every POLICY_REFRESH seconds,
        so an administrator's change applies within seconds without a query per message."""
        now = time.monotonic()
        if now - self._policy_read >= POLICY_REFRESH:
            self._policy_read = now
            await asyncio.get_running_loop().run_in_executor(None, self._read_policy)
        return self._policy

    def _read_policy(self) -> None:
        # A failed read keeps the last policy: storing mail must not hinge on this look-up.
        try:
            with self.runtime.db.session() as db:
                self._policy = AttachmentPolicy.of(live_settings(db, self.runtime.settings))
        except SQLAlchemyError:
            log.warning("reading the attachment limits failed; the last ones apply",
                        exc_info=True)

    async def handle_EHLO(self, server: SMTP, session: Session, envelope: Envelope,
                          hostname: str, responses: list[str]) -> list[str]:
        """Add PIPELINING and ENHANCEDSTATUSCODES (both honoured by aiosmtpd) before HELP."""
        session.host_name = hostname
        return [*responses[:-1], *EXTENSIONS, responses[-1]]

    async def check_login(self, server: SMTP, login: LoginPassword) -> AuthResult:
        """The answer to an AUTH's username and secret (mailin/logins.py), checked off the
        loop; after too many failures from the client's IP, the connection is closed once
        the 454 is written."""
        if server.envelope is not None and server.envelope.mail_from is not None:
            # RFC 4954 4: the recipients named so far were checked under the other rules.
            return AuthResult(success=False, handled=False, message=IN_TRANSACTION)
        ip = _client_ip(server)
        checked = await asyncio.get_running_loop().run_in_executor(
            None, self.logins.check, ip, login.login, login.password)
        if isinstance(checked, CaptureLogin):
            log.info("SMTP login from %s for %s", ip, checked.address,
                     extra={"inbox": str(checked.inbox_id)})
            return AuthResult(success=True, auth_data=checked)
        _close_when_locked_out(server, checked)
        return AuthResult(success=False, handled=False, message=checked)

    async def refuse_long_auth_line(self, server: SMTP) -> str:
        """The reply to an AUTH exchange line longer than the server reads, counted as a
        failed login: `500 5.5.6`, or 454 past the limit (the connection then closed). (Not
        named `auth_*`: aiosmtpd offers a handler's `auth_*` methods as mechanisms.)"""
        ip = _client_ip(server)
        reply = await asyncio.get_running_loop().run_in_executor(
            None, self.logins.refuse, ip, LINE_TOO_LONG)
        log.info("SMTP login refused from %s: an exchange line too long", ip)
        _close_when_locked_out(server, reply)
        return reply

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope,
                          address: str, rcpt_options: list[str]) -> str:
        """Accept a live inbox's address (kept in its routing form), or any address in a
        capture session; refuse anything else."""
        if len(envelope.rcpt_tos) >= self.runtime.settings.smtp.max_recipients:
            metrics.SMTP_RECIPIENTS_REFUSED.labels("too_many_recipients").inc()
            return TOO_MANY_RECIPIENTS
        normalised = normalise_address(address)
        if normalised is None:
            metrics.SMTP_RECIPIENTS_REFUSED.labels("not_an_address").inc()
            return NOT_AN_ADDRESS
        if isinstance(session.auth_data, CaptureLogin):
            return await self._capture_rcpt(server, envelope, session.auth_data, address)
        route = await self._route(normalised)
        if isinstance(route, CatchAll):  # its inbox is created with the message
            envelope.rcpt_tos.append(route.address)
            self._catching.add(envelope)
            return RECIPIENT_OK
        if isinstance(route, Route) and route.expires_at <= utcnow():
            route = EXPIRED_INBOX
        if not isinstance(route, Route):
            metrics.SMTP_RECIPIENTS_REFUSED.labels(route).inc()
            self.refusals.refused(route, session.peer[0] if session.peer else "unknown",
                                  normalised.rpartition("@")[2])
            return REFUSALS[route]
        chaos = await self.chaos.at_rcpt(server, envelope, route.inbox_id)
        if chaos is not None:
            return chaos
        envelope.rcpt_tos.append(route.full_address)
        return RECIPIENT_OK

    async def _capture_rcpt(self, server: SMTP, envelope: Envelope, capture: CaptureLogin,
                            address: str) -> str:
        """RCPT in a capture session: the address is kept as the client wrote it (once); the
        inbox's RCPT chaos rules answer the transaction's first recipient."""
        if len(address) > MAX_ADDRESS:
            metrics.SMTP_RECIPIENTS_REFUSED.labels("not_an_address").inc()
            return NOT_AN_ADDRESS
        if not envelope.rcpt_tos:
            chaos = await self.chaos.at_rcpt(server, envelope, capture.inbox_id)
            if chaos is not None:
                return chaos
        if address not in envelope.rcpt_tos:
            envelope.rcpt_tos.append(address)
        return RECIPIENT_OK

    async def _route(self, address: str) -> Route | CatchAll | str:
        route = self.routes.get(address)
        if route is not None:
            return route
        route = await asyncio.get_running_loop().run_in_executor(None, self._lookup, address)
        self.routes.put(address, route)
        return route

    def _lookup(self, address: str) -> Route | CatchAll | str:
        with self.runtime.db.session() as db:
            return lookup_recipient(db, self.runtime.settings, address)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Store the message for every recipient still live, and say 250 only once that has
        committed."""
        ended = time.perf_counter()  # the end of DATA: the server calls this hook at once
        content = envelope.content
        assert isinstance(content, bytes)  # the server is built with decode_data=False
        metrics.SMTP_RECEIVED_BYTES.inc(len(content))
        chaos = await self.chaos.at_data(server, envelope)
        if chaos is not None:
            return chaos
        capture = session.auth_data if isinstance(session.auth_data, CaptureLogin) else None
        try:
            policy = await self._attachment_policy()
            accept = functools.partial(
                accept_message, content, mail_from=envelope.mail_from or "",
                recipients=[capture.address] if capture else list(envelope.rcpt_tos),
                envelope_to=list(envelope.rcpt_tos) if capture else None, policy=policy,
                peer_ip=session.peer[0] if session.peer else "", helo=session.host_name or "",
                spam_engine=bool(self.runtime.settings.checks.spam_engine))
            if len(content) <= INLINE_PARSE_BYTES:
                message = accept()
            else:
                message = await asyncio.get_running_loop().run_in_executor(None, accept)
            email_ids = await self.committer.commit(message)
        except Exception as error:
            if disk_full(error):
                return self.full_disk.failed(error, len(envelope.rcpt_tos))
            log.exception("storing a message failed; answered 451",
                          extra={"recipients": envelope.rcpt_tos, "size": len(content)})
            metrics.SMTP_RECIPIENTS_REFUSED.labels("not_stored").inc(len(envelope.rcpt_tos))
            return TRY_LATER
        self.full_disk.stored()
        if envelope in self._catching:
            # Its catch-all inboxes now exist, with copies of their assignment's chaos rules.
            self._catching.discard(envelope)
            self.chaos.inboxes_created()
        if not email_ids:
            # Every recipient was deleted or lapsed since RCPT.
            metrics.SMTP_RECIPIENTS_REFUSED.labels(UNKNOWN_INBOX).inc(len(envelope.rcpt_tos))
            return INBOXES_GONE
        metrics.SMTP_MESSAGES_ACCEPTED.inc()
        metrics.SMTP_REPLY_SECONDS.observe(time.perf_counter() - ended)
        log.info("mail stored for %s from %s (%d bytes)", ", ".join(envelope.rcpt_tos),
                 envelope.mail_from or "<>", len(content),
                 extra={"emails": [str(i) for i in email_ids], "size": len(content)})
        return STORED

    async def handle_exception(self, error: Exception) -> str:
        """Any other failure (the database down during RCPT...): log it and answer 451, never
        aiosmtpd's default 500 with the exception's text."""
        log.error("SMTP command failed; answered 451", exc_info=error)
        return TRY_LATER


def _client_ip(server: SMTP) -> str:
    session = server.session
    return session.peer[0] if session is not None and session.peer else "unknown"


def _close_when_locked_out(server: SMTP, reply: str) -> None:
    """Close the connection once `reply` is written when it is the lockout's 454: the reply
    is pushed right after the caller returns."""
    if reply == TOO_MANY_FAILURES and server.transport is not None:
        asyncio.get_running_loop().call_soon(server.transport.close)
