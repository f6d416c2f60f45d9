"""Capture logins at the SMTP server: SMTP AUTH (PLAIN, LOGIN) checked against the inboxes'
capture credentials (models.mail.smtp_credentials), failed attempts limited per client IP.

- A login whose username is a credential's and whose secret hashes to its hash (compared in
  constant time), for an inbox that has not lapsed, is answered `235 2.7.0`; the session is
  then a capture session (`CaptureLogin` in aiosmtpd's `session.auth_data`: mailin/handler.py).
- Anything else is answered `535 5.7.8 Authentication credentials invalid`, the same words
  whether the username or the secret was wrong, so the answer tells nothing of which inboxes
  have credentials. A wrong username or secret counts one failure against the client's IP in
  the key-value store (a fixed window per minute, shared by every mailin process); once
  `smtp.auth_failures_per_minute` are counted, AUTH from that IP is answered
  `454 4.7.0 Too many failed logins, try again later` without checking the credentials (so a
  guess cannot succeed meanwhile) and the connection is closed. With the store unreachable
  failures are not counted (logged): the secrets are 256 random bits, so the limit guards the
  server's work more than the secrets.
- The count is taken before the check, not after: each attempt first reserves one of the
  window's failures (one atomic increment) and is checked only when the reservation is
  within the limit; a good login gives its reservation back. Reading the count, checking,
  then counting let parallel sessions all read the same count: 25 at once got 13 to 17
  guesses checked against a limit of 10. So at most the limit are checked per IP and window,
  however many sessions try at once.
- An AUTH exchange line longer than the server reads (`mailin.server`) is a failed attempt
  too (`refuse`): counted, and answered `500 5.5.6 Authentication Exchange line is too long`
  (RFC 4954), or 454 past the limit.
- Credentials are read under `SMTP_CREDENTIALS_REVISION_KEY` (models.caching): a created,
  rotated or revoked credential applies to the next AUTH in every mailin process. Unknown
  usernames are not cached (they are counted as failures instead).

`check` blocks (the key-value store, and the database on a cache miss): the handler runs it in
the loop's executor.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.exc import SQLAlchemyError

from burnbox.kv import StoreUnavailable
from burnbox.timeutil import utcnow
from models.caching import SMTP_CREDENTIALS_REVISION_KEY, RevisionedCache, Revisions, kept_in
from models.mail.smtp_credentials import USE_RECORDED_EVERY, Login, find_login, record_use
from models.runtime import Runtime

log = logging.getLogger(__name__)

INVALID = "535 5.7.8 Authentication credentials invalid"
TOO_MANY_FAILURES = "454 4.7.0 Too many failed logins, try again later"
LINE_TOO_LONG = "500 5.5.6 Authentication Exchange line is too long"
# Key-value store keys of the failure counters: the prefix, then the IP and the minute.
FAILURES_KEY = "smtp-auth-failures:"
WINDOW = 60


@dataclass(frozen=True)
class CaptureLogin:
    """A session logged in with an inbox's capture credentials: its mail is stored once in
    that inbox, whoever it names. (`login` is what aiosmtpd keeps as `session.login_data`.)"""

    inbox_id: uuid.UUID
    address: str
    login: bytes


class LoginGate:
    """Checks one SMTP server's logins; shared by its sessions."""

    CACHE = "mailin.smtp-credentials"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._cache: RevisionedCache[Login] = kept_in(
            runtime.caches, self.CACHE, lambda: RevisionedCache(SMTP_CREDENTIALS_REVISION_KEY))

    def check(self, ip: str, username: bytes, secret: bytes) -> CaptureLogin | str:
        """The capture login of `username` and `secret` from client `ip`, or the reply that
        refuses it (`INVALID` or `TOO_MANY_FAILURES`). Blocks."""
        counter = self._counter(ip)
        if not self._reserve(counter):
            return TOO_MANY_FAILURES
        try:
            name, given = username.decode("utf-8"), secret.decode("utf-8")
        except UnicodeDecodeError:
            name, given = "", ""
        login = self._login(name) if name else None
        if login is None or not login.accepts(given):
            # The reservation stays: it is this failure's count. Not the username in the
            # log: a client that swapped the fields would log its secret.
            log.info("SMTP login refused from %s", ip)
            return INVALID
        self._give_back(counter)
        if login.expires_at <= utcnow():
            login = self._load(name)  # lapsed as cached: maybe extended since
            if login is None or login.expires_at <= utcnow():
                return INVALID
        self._record_use(login)
        return CaptureLogin(inbox_id=login.inbox_id, address=login.address, login=username)

    def _login(self, username: str) -> Login | None:
        return self._cache.get(Revisions(self.runtime.store, {}), username.strip().lower(),
                               lambda: self._load(username))

    def _load(self, username: str) -> Login | None:
        with self.runtime.db.session() as db:
            return find_login(db, username)

    def refuse(self, ip: str, reply: str) -> str:
        """Count an attempt from `ip` that is refused whatever it holds (an exchange line too
        long) as a failure: `reply`, or TOO_MANY_FAILURES when it is past the limit. Blocks."""
        return reply if self._reserve(self._counter(ip)) else TOO_MANY_FAILURES

    @staticmethod
    def _counter(ip: str) -> str:
        return f"{FAILURES_KEY}{ip}:{int(time.time() // WINDOW)}"

    def _reserve(self, counter: str) -> bool:
        """Count one failure ahead of the check (one atomic increment); whether it is within
        the limit, i.e. the attempt may be checked. True with the store unreachable."""
        try:
            counted = self.runtime.store.incr(counter, timedelta(seconds=2 * WINDOW))
        except StoreUnavailable:
            log.warning("the key-value store is unreachable: SMTP login failures not counted")
            return True
        return counted <= self.runtime.settings.smtp.auth_failures_per_minute

    def _give_back(self, counter: str) -> None:
        """Take back the failure `_reserve` counted for an attempt that did not fail."""
        try:
            self.runtime.store.incr(counter, timedelta(seconds=2 * WINDOW), -1)
        except StoreUnavailable:
            log.warning("the key-value store is unreachable: SMTP login failures not counted")

    def _record_use(self, login: Login) -> None:
        """Write `last_used_at` when the cached one is older than `USE_RECORDED_EVERY` (the
        write moves the revision, so the cache then holds the new time). A failure to write
        it does not refuse the login."""
        if login.last_used_at is not None and utcnow() - login.last_used_at < USE_RECORDED_EVERY:
            return
        try:
            with self.runtime.db.transaction() as db:
                record_use(db, login)
        except SQLAlchemyError:
            log.warning("recording an SMTP credential's use failed", exc_info=True)
