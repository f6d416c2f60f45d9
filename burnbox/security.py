"""Security primitives: JWT access tokens, argon2id password hashing, random tokens and their
hashes, constant-time comparison. No business rules live here (who may log in, how long a
session lasts): the callers in `models/` decide; this module only does the cryptography right.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TypeVar

import jwt
from passlib.hash import argon2

from burnbox.timeutil import utcnow

log = logging.getLogger(__name__)

# The only algorithm accepted when decoding: pinning it defeats "alg": "none" and key-confusion
# tokens whatever the header claims.
JWT_ALGORITHM = "HS256"
JWT_CLAIMS = ("sub", "sid", "iat", "exp")
# 32 random bytes: far above the 128 bits every single-use token needs.
TOKEN_BYTES = 32

T = TypeVar("T")


class InvalidToken(ValueError):
    """A JWT that is malformed, badly signed, expired, or missing a required claim."""


@dataclass(frozen=True)
class AccessClaims:
    """The verified claims of an access token."""

    user_id: uuid.UUID
    session_id: uuid.UUID
    issued_at: datetime
    expires_at: datetime


# What a token signed with another key is told: its claims are ours, only the key differs, so
# the likely cause is a secret that changed (a restart without auth.jwt_secret, processes with
# different secrets), which "invalid access token" hid.
FOREIGN_SIGNATURE = "access token signed with a different secret: the server's secret changed"


def _key(secret: str) -> str:
    """The signing key; an empty one is a wiring mistake (Runtime.from_settings resolves it),
    never a reason to make up a key the other processes do not share."""
    if not secret:
        raise ValueError("auth.jwt_secret is empty: build the settings through "
                         "burnbox.signing_secret.resolve_jwt_secret")
    return secret


def encode_access_token(secret: str, *, user_id: uuid.UUID, session_id: uuid.UUID,
                        ttl: timedelta, now: datetime | None = None) -> str:
    """A signed HS256 access token with the claims sub, sid, iat and exp."""
    issued = now or utcnow()
    claims = {"sub": str(user_id), "sid": str(session_id), "iat": int(issued.timestamp()),
              "exp": int((issued + ttl).timestamp())}
    return jwt.encode(claims, _key(secret), algorithm=JWT_ALGORITHM)


# Access tokens this process has verified, by a digest of the secret and the token: a client
# polling with one token pays the signature check and the decoding once (they were a tenth of
# a cached read's CPU), while its expiry is still checked at every use. The oldest go first.
VERIFIED_TOKENS_KEPT = 10_000
_verified: dict[bytes, AccessClaims] = {}
_verified_lock = threading.Lock()


def decode_access_token(secret: str, token: str) -> AccessClaims:
    """Verify an access token's signature (HS256 only), expiry and claims; raise InvalidToken,
    saying so when the token is well formed but signed with another key. A token verified
    before is not verified again (nothing about it can change but the time), only its
    expiry."""
    digest = hashlib.sha256(f"{secret}\0{token}".encode()).digest()
    claims = _verified.get(digest)
    if claims is None:
        claims = _verify_access_token(secret, token)
        with _verified_lock:
            if len(_verified) >= VERIFIED_TOKENS_KEPT:
                _verified.pop(next(iter(_verified)))
            _verified[digest] = claims
    # As PyJWT judges it: expired once `exp` is not after now.
    elif claims.expires_at.timestamp() <= time.time():
        raise InvalidToken("access token expired")
    return claims


def _verify_access_token(secret: str, token: str) -> AccessClaims:
    key = _key(secret)
    try:
        claims = jwt.decode(token, key, algorithms=[JWT_ALGORITHM],
                            options={"require": list(JWT_CLAIMS)})
        return AccessClaims(
            user_id=uuid.UUID(str(claims["sub"])),
            session_id=uuid.UUID(str(claims["sid"])),
            issued_at=datetime.fromtimestamp(int(claims["iat"]), UTC),
            expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
        )
    except jwt.ExpiredSignatureError as exc:
        raise InvalidToken("access token expired") from exc
    except jwt.InvalidSignatureError as exc:
        message = FOREIGN_SIGNATURE if _ours_but_unverified(token) else "invalid access token"
        raise InvalidToken(message) from exc
    except (jwt.InvalidTokenError, ValueError, TypeError) as exc:
        raise InvalidToken("invalid access token") from exc


def _ours_but_unverified(token: str) -> bool:
    """Whether a token whose signature failed has our header and claims: HS256, a user and a
    session id, integer times. Only the message depends on it; the token is refused anyway."""
    try:
        if jwt.get_unverified_header(token).get("alg") != JWT_ALGORITHM:
            return False
        claims = jwt.decode(token, options={"verify_signature": False})
        uuid.UUID(str(claims["sub"]))
        uuid.UUID(str(claims["sid"]))
        return isinstance(claims["iat"], int) and isinstance(claims["exp"], int)
    except (jwt.InvalidTokenError, KeyError, ValueError, TypeError, AttributeError):
        return False


def new_token() -> str:
    """A random URL-safe token of 256 bits (refresh, reset, verification, pending-login...)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """The SHA-256 hex digest under which a token is stored (the token itself never is).

    A fast hash is right here: the tokens carry 256 random bits, so there is nothing to
    brute-force, unlike passwords."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def constant_time_equals(left: str, right: str) -> bool:
    """Compare two secrets in time independent of where they differ."""
    return hmac.compare_digest(left.encode("utf-8"), right.encode("utf-8"))


def offload(fn: Callable[..., T], *args: object) -> T:
    """Run a CPU-heavy call without stalling a gevent worker.

    Under gevent monkey-patching every request of the worker shares one OS thread, so a 50 ms
    argon2 hash would freeze all of them; the hub's thread pool runs it on a real thread (argon2
    releases the GIL) while other greenlets carry on. Without gevent the call runs directly.
    """
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None and monkey.is_module_patched("threading"):
        import gevent

        return gevent.get_hub().threadpool.apply(fn, args)
    return fn(*args)


@dataclass(frozen=True)
class PasswordHasher:
    """argon2id with fixed parameters (from settings: auth.argon2_*)."""

    time_cost: int
    memory_kib: int
    parallelism: int

    def _scheme(self) -> type:
        return argon2.using(type="ID", time_cost=self.time_cost, memory_cost=self.memory_kib,
                            parallelism=self.parallelism)

    def hash(self, password: str) -> str:
        """The argon2id hash of `password` (a PHC string carrying salt and parameters)."""
        return offload(self._scheme().hash, password)

    def verify(self, password: str, stored: str | None) -> bool:
        """True when `password` matches `stored`. With no stored hash (an unknown user, or an
        SSO-only one) a dummy hash made with the CURRENT parameters is checked instead, so the
        answer takes as long either way and is always False. A dummy pinned to older, cheaper
        parameters would answer faster for unknown users once the cost rose: an oracle for
        which addresses have accounts."""
        if not stored:
            # The dummy is made BEFORE `verify` is looked up: passlib loads its argon2 backend
            # on first use and replaces the methods then, so a `verify` fetched before the
            # first hash of the process is a stale stub that raises (a 500 for the first
            # sign-in of an unknown address on a fresh worker).
            dummy = _dummy_hash(self)
            offload(self._scheme().verify, password, dummy)
            return False
        try:
            return offload(self._scheme().verify, password, stored)
        except ValueError:
            # Not a hash this scheme can read: treat as a mismatch rather than a server error.
            log.warning("stored password hash is not a readable argon2 hash")
            return False

    def needs_rehash(self, stored: str) -> bool:
        """True when `stored` was made with other parameters (upgrade it on the next login)."""
        return bool(self._scheme().needs_update(stored))


@cache
def _dummy_hash(hasher: PasswordHasher) -> str:
    # Cached per parameter set: a change of parameters yields a new dummy at once.
    return offload(hasher._scheme().hash, secrets.token_urlsafe(16))
