"""Password checks with a time-limited lockout.

The rule: `auth.lockout_threshold` failed checks for one e-mail address within
`auth.lockout_window` lock that address for `auth.lockout_duration`; while locked, no password is
checked at all (RateLimited, 429). The lock always expires on its own, so an attacker can delay a
user but never shut them out for good, and a password reset lifts it at once.

Counters live in the key-value store, keyed by a hash of the address whether or not an account
has it, so the lockout itself reveals nothing about which addresses are registered. When the store
is unavailable the check fails open: sign-in keeps working, without the lockout, until it is back.
"""

from __future__ import annotations

import logging

from burnbox.kv import KeyValueStore, StoreUnavailable
from burnbox.security import hash_token
from burnbox.settings import Settings
from models.errors import RateLimited
from models.identity.users import password_hasher

log = logging.getLogger(__name__)

LOCKED_MESSAGE = "too many failed sign-in attempts; try again later"


def _keys(email: str) -> tuple[str, str]:
    digest = hash_token(email.strip().lower())
    return f"login-failures:{digest}", f"login-lock:{digest}"


def ensure_not_locked(store: KeyValueStore, email: str) -> None:
    """Raise RateLimited while the address is locked (fails open without the store)."""
    _, lock_key = _keys(email)
    try:
        locked = store.get(lock_key) is not None
    except StoreUnavailable:
        log.warning("lockout store unavailable; password checks are not rate limited")
        return
    if locked:
        raise RateLimited(LOCKED_MESSAGE)


def note_failure(store: KeyValueStore, settings: Settings, email: str) -> None:
    """Count one failed check; lock the address when the count reaches the threshold."""
    threshold = settings.auth.lockout_threshold
    if threshold < 1:
        return
    failures_key, lock_key = _keys(email)
    try:
        if store.incr(failures_key, settings.auth.lockout_window) >= threshold:
            store.set(lock_key, "1", settings.auth.lockout_duration)
            store.delete(failures_key)
            log.warning("sign-in locked after repeated failures",
                        extra={"email_hash": failures_key.rpartition(":")[2]})
    except StoreUnavailable:
        log.warning("lockout store unavailable; failure not counted")


def clear_failures(store: KeyValueStore, email: str) -> None:
    """Forget the address's failures and any lock (after a success or a password reset)."""
    for key in _keys(email):
        try:
            store.delete(key)
        except StoreUnavailable:
            return


def check_password(store: KeyValueStore, settings: Settings, email: str,
                   stored_hash: str | None, password: str) -> bool:
    """Check `password` against the hash stored for the account at `email` (None when there is
    no account or no password, which still costs one full hash). `settings` must carry the
    platform overrides (models.platform.settings.live_settings): the lockout keys are runtime
    settings. Raise RateLimited while the
    address is locked; count a failure; clear the count on success."""
    ensure_not_locked(store, email)
    ok = password_hasher(settings).verify(password, stored_hash)
    if ok:
        clear_failures(store, email)
    else:
        note_failure(store, settings, email)
    return ok
