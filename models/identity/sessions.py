"""Sessions, tokens and the session limit.

A session is one signed-in device. It holds opaque refresh tokens (stored as SHA-256 hashes) and
is named by the `sid` claim of the short-lived JWT access tokens, so revoking the session row
stops its access tokens at the next request. Refresh tokens rotate on every use; presenting a
rotated one again means it was copied, and revokes the session, unless it is the session's
latest spent token and was spent less than `auth.refresh_reuse_grace` ago (a reload aborted the
refresh whose answer carried its successor).

The session limit (per-user `max_sessions`, else the platform default; 0 means none): a sign-in
that would exceed it revokes nothing and answers SessionLimitReached with a pending token kept
`auth.pending_login_ttl` in the key-value store; `resolve_login` with that token and a session to
revoke completes it. Every sign-in runs under a row lock on the user (SELECT ... FOR UPDATE), so
concurrent sign-ins are serialised and can never leave a user above the limit. Only when the
key-value store is unavailable does a sign-in revoke the oldest sessions instead.

Actions write through the session they are given and never commit: the caller does. A refusal
that must leave its trace (a failed sign-in's audit entry, a session revoked for a reused refresh
token, the session a resolve revoked) raises an error with `keeps_changes`, and the caller commits
before answering it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Select, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.kv import KeyValueStore, StoreUnavailable
from burnbox.security import InvalidToken, decode_access_token, encode_access_token, hash_token
from burnbox.security import new_token as random_token
from burnbox.settings import Settings
from burnbox.timeutil import isoformat, utcnow
from models.caching import Lookup, uncached
from models.db import Base, UUIDKey, detached_copy, end_read_only_transaction
from models.errors import Conflict, Forbidden, NotFound, Unauthenticated
from models.identity.callers import attach
from models.identity.credentials import check_password
from models.identity.users import User, find_by_email, normalise_email, password_hasher
from models.platform import audit
from models.platform.audit import Origin, record_audit
from models.platform.settings import current_platform, live_settings

log = logging.getLogger(__name__)

# Why a session ended (sessions.revoked_reason).
LOGOUT = "logout"
REVOKED = "revoked"
SESSION_LIMIT = "session_limit"
REFRESH_REUSE = "refresh_token_reuse"
PASSWORD_CHANGE = "password_change"  # noqa: S105 (a reason name, not a password)
PASSWORD_RESET = "password_reset"  # noqa: S105 (a reason name, not a password)
SSO_UNLINKED = "sso_unlinked"

ACCOUNT_DISABLED = "this account has been disabled by an administrator"


class UserSession(UUIDKey, Base):
    """One signed-in device; active while not revoked and not expired."""

    __tablename__ = "sessions"

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"),
                                               index=True)
    ip_address: Mapped[str] = mapped_column(String(45))
    user_agent: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Sliding: every refresh moves it to now + auth.refresh_token_ttl.
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    revoked_reason: Mapped[str | None] = mapped_column(String(32))


class RefreshToken(UUIDKey, Base):
    """A refresh token of a session (hash only). `rotated_at` is set when it is used; the rows
    of rotated tokens are what makes reuse detectable, until they would have expired anyway."""

    __tablename__ = "refresh_tokens"

    session_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    rotated_at: Mapped[datetime | None]


@dataclass(frozen=True)
class Tokens:
    """What a sign-in or refresh hands the client."""

    access_token: str
    refresh_token: str
    expires_in: int  # seconds the access token lives


@dataclass(frozen=True)
class SignedIn:
    """A completed sign-in: the user, the new session's id and its tokens."""

    user: User
    session_id: uuid.UUID
    tokens: Tokens


class SessionLimitReached(Conflict):
    """409 session_limit: the body carries the pending token, the active sessions and the limit.
    What the sign-in wrote before it stopped stands (see `sign_in`)."""

    code = "session_limit"

    def __init__(self, pending_token: str, sessions: list[UserSession], limit: int) -> None:
        super().__init__("session limit reached: revoke a session to sign in", extra={
            "pending_token": pending_token,
            "sessions": [session_summary(s) for s in sessions],
            "limit": limit,
        }, keeps_changes=True)


def session_summary(user_session: UserSession) -> dict[str, Any]:
    """The public fields of a session (docs/identity.md, "Sessions"), JSON-ready."""
    return {"id": str(user_session.id), "ip_address": user_session.ip_address,
            "user_agent": user_session.user_agent,
            "last_used_at": isoformat(user_session.last_used_at),
            "created_at": isoformat(user_session.created_at)}


def active_sessions_query(user_id: uuid.UUID) -> Select[Any]:
    """The user's active sessions, oldest first (a unique order, for pagination)."""
    return (select(UserSession)
            .where(UserSession.user_id == user_id, UserSession.revoked_at.is_(None),
                   UserSession.expires_at > utcnow())
            .order_by(UserSession.created_at, UserSession.id))


def active_sessions(session: Session, user_id: uuid.UUID) -> list[UserSession]:
    """The user's active sessions, oldest first."""
    return list(session.scalars(active_sessions_query(user_id)))


def session_limit(session: Session, settings: Settings, user: User) -> int:
    """The user's own limit, else the platform default; 0 means no limit."""
    if user.max_sessions is not None:
        return user.max_sessions
    return current_platform(session, settings).max_sessions_per_user


def lock_user(session: Session, user_id: uuid.UUID) -> User | None:
    """The user row, locked FOR UPDATE until the transaction ends (None if it is gone)."""
    query = (select(User).where(User.id == user_id).with_for_update()
             .execution_options(populate_existing=True))
    return session.scalars(query).one_or_none()


def _access_token(settings: Settings, user_id: uuid.UUID, session_id: uuid.UUID) -> str:
    return encode_access_token(settings.auth.jwt_secret, user_id=user_id, session_id=session_id,
                               ttl=settings.auth.access_token_ttl)


def _tokens(settings: Settings, user_id: uuid.UUID, session_id: uuid.UUID,
            refresh: str) -> Tokens:
    return Tokens(access_token=_access_token(settings, user_id, session_id), refresh_token=refresh,
                  expires_in=int(settings.auth.access_token_ttl.total_seconds()))


def _add_refresh_token(session: Session, settings: Settings, session_id: uuid.UUID) -> str:
    now = utcnow()
    raw = random_token()
    session.add(RefreshToken(id=uuid.uuid4(), session_id=session_id, token_hash=hash_token(raw),
                             created_at=now, expires_at=now + settings.auth.refresh_token_ttl))
    return raw


def open_session(session: Session, settings: Settings, user: User, origin: Origin, *,
                 via: Mapping[str, str] | None = None) -> SignedIn:
    """Create a session for `user` and its first tokens, without any limit check (for accounts
    that cannot have sessions yet: registration, setup). Records the sign-in, with `via` (how:
    `{"method": "sso", "provider": ...}`) in the audit entry when given."""
    now = utcnow()
    user_session = UserSession(
        id=uuid.uuid4(), user_id=user.id, ip_address=(origin.ip or "")[:45],
        user_agent=(origin.user_agent or "")[:512], created_at=now, last_used_at=now,
        expires_at=now + settings.auth.refresh_token_ttl)
    session.add(user_session)
    session.flush()
    refresh = _add_refresh_token(session, settings, user_session.id)
    user.last_login_at = now
    record_audit(session, audit.LOGIN, actor_id=user.id, resource_type="session",
                 resource_id=user_session.id, ip=origin.ip, user_agent=origin.user_agent,
                 after=dict(via) if via else None)
    return SignedIn(user=user, session_id=user_session.id,
                    tokens=_tokens(settings, user.id, user_session.id, refresh))


def issue_tokens(session: Session, settings: Settings, user_id: uuid.UUID,
                 session_id: uuid.UUID) -> SignedIn:
    """New tokens for the user's session, opened a moment ago by a sign-in that handed them
    over another way (the SSO callback gives the browser a one-time code, not tokens).
    Unauthenticated when the session is no longer active or the account is disabled."""
    user_session = session.get(UserSession, session_id)
    user = session.get(User, user_id)
    if (user_session is None or user is None or user_session.user_id != user_id
            or user_session.revoked_at is not None or user_session.expires_at <= utcnow()):
        raise Unauthenticated("invalid or expired code")
    if user.disabled_at is not None:
        raise Unauthenticated(ACCOUNT_DISABLED)
    refresh = _add_refresh_token(session, settings, session_id)
    return SignedIn(user=user, session_id=session_id,
                    tokens=_tokens(settings, user_id, session_id, refresh))


def _pending_key(token: str) -> str:
    return f"pending-login:{hash_token(token)}"


def _stash_pending(store: KeyValueStore, settings: Settings, user_id: uuid.UUID) -> str:
    token = random_token()
    store.set(_pending_key(token), str(user_id), settings.auth.pending_login_ttl)
    return token


def sign_in(session: Session, store: KeyValueStore, settings: Settings, user: User,
            origin: Origin, *, via: Mapping[str, str] | None = None) -> SignedIn:
    """Open a session for `user`, whose row the caller has locked (`lock_user`), within the
    session limit.

    At the limit: raise SessionLimitReached with a new pending token; it keeps what the
    transaction holds (an upgraded password hash, the session a resolve revoked). When the
    store is unavailable, revoke the oldest sessions instead and go on. Raise Forbidden for an
    account a system administrator disabled (asked only after the password was right, so it
    tells nothing to someone guessing)."""
    if user.disabled_at is not None:
        raise Forbidden(ACCOUNT_DISABLED)
    limit = session_limit(session, settings, user)
    active = active_sessions(session, user.id)
    if limit and len(active) >= limit:
        try:
            token = _stash_pending(store, settings, user.id)
        except StoreUnavailable:
            log.warning("pending-login store unavailable; revoking the oldest sessions",
                        extra={"user_id": str(user.id)})
            for oldest in active[:len(active) - limit + 1]:
                _revoke(session, oldest, SESSION_LIMIT, origin, actor_id=user.id)
        else:
            raise SessionLimitReached(token, active, limit)
    return open_session(session, settings, user, origin, via=via)


def login(session: Session, store: KeyValueStore, settings: Settings, *, email: str,
          password: str, origin: Origin) -> SignedIn:
    """Password sign-in: `check_login`, then `sign_in`. Raise as they do."""
    user = check_login(session, store, settings, email=email, password=password, origin=origin)
    return sign_in(session, store, settings, user, origin)


def check_login(session: Session, store: KeyValueStore, settings: Settings, *, email: str,
                password: str, origin: Origin) -> User:
    """The user of a right address and password, their row locked (`lock_user`) for
    `sign_in`. Raise Unauthenticated for a wrong address or password (same answer, same
    time), RateLimited while the address is locked, Forbidden (403 `forbidden`, as
    docs/admin.md says) when the platform requires verified addresses and this one is not."""
    email = normalise_email(email)
    user = find_by_email(session, email)
    user_id, stored = (user.id, user.password_hash) if user else (None, None)
    live = live_settings(session, settings)  # the lockout keys, read before the transaction ends
    end_read_only_transaction(session)  # nothing held open while argon2 runs
    if not check_password(store, live, email, stored, password):
        record_audit(session, audit.LOGIN_FAILED, actor_id=user_id, resource_type="user",
                     resource_id=user_id, ip=origin.ip, user_agent=origin.user_agent,
                     after={"email": email})
        raise Unauthenticated("invalid email or password", keeps_changes=True)
    hasher = password_hasher(settings)
    upgraded = hasher.hash(password) if stored and hasher.needs_rehash(stored) else None
    locked = lock_user(session, user_id) if user_id else None
    if locked is None:
        raise Unauthenticated("invalid email or password")
    # Only after the password matched: answering this earlier would tell anyone which
    # addresses have an account (lessons: no existence leak through a different answer).
    if live.auth.require_email_verification and not locked.email_verified:
        raise Forbidden("verify your e-mail address before signing in: open the link "
                               "mailed to you at registration")
    if upgraded:
        locked.password_hash = upgraded
    return locked


def _pending_user_id(store: KeyValueStore, token: str, *, consume: bool) -> uuid.UUID:
    try:
        value = store.take(_pending_key(token)) if consume else store.get(_pending_key(token))
    except StoreUnavailable as exc:
        raise Unauthenticated("pending logins are unavailable; sign in again") from exc
    if value is None:
        raise Unauthenticated("invalid or expired pending login token")
    return uuid.UUID(value)


def resolve_login(session: Session, store: KeyValueStore, settings: Settings, *,
                  pending_token: str, revoke_session_id: uuid.UUID,
                  origin: Origin) -> SignedIn:
    """Complete a pending sign-in by revoking one of the user's sessions. The pending token is
    consumed. If the limit is still reached (another sign-in took the freed place, or the
    session was not one of the user's active ones), raise SessionLimitReached with a fresh
    token and the current sessions; the chosen session stays revoked."""
    user_id = _pending_user_id(store, pending_token, consume=True)
    user = lock_user(session, user_id)
    if user is None:
        raise Unauthenticated("invalid or expired pending login token")
    target = session.get(UserSession, revoke_session_id)
    if target is not None and target.user_id == user.id and target.revoked_at is None:
        _revoke(session, target, SESSION_LIMIT, origin, actor_id=user.id)
    return sign_in(session, store, settings, user, origin)


def pending_login_sessions(session: Session, store: KeyValueStore, settings: Settings,
                           pending_token: str) -> tuple[list[UserSession], int]:
    """The active sessions and the limit behind a pending token, without consuming it."""
    user = session.get(User, _pending_user_id(store, pending_token, consume=False))
    if user is None:
        raise Unauthenticated("invalid or expired pending login token")
    return active_sessions(session, user.id), session_limit(session, settings, user)


def refresh(session: Session, settings: Settings, *, refresh_token: str,
            origin: Origin) -> Tokens:
    """Rotate a refresh token: the presented one is spent, a new one and a new access token
    are returned. Presenting a spent token revokes its session (it was copied), except the
    session's most recently spent token within `auth.refresh_reuse_grace` of its rotation:
    that one gets a new pair for the same session and spends nothing (docs/identity.md,
    "Refresh token"). Raise Unauthenticated for an unknown, spent, or expired token or an
    inactive session."""
    query = (select(RefreshToken, UserSession)
             .join(UserSession, RefreshToken.session_id == UserSession.id)
             .where(RefreshToken.token_hash == hash_token(refresh_token))
             .with_for_update().execution_options(populate_existing=True))
    row = session.execute(query).one_or_none()
    if row is None:
        raise Unauthenticated("invalid refresh token")
    token, user_session = row
    now = utcnow()
    if user_session.revoked_at is not None:
        raise Unauthenticated("session revoked")
    owner = session.get(User, user_session.user_id)
    if owner is None or owner.disabled_at is not None:
        # Disabling ends the sessions; this also covers a refresh racing the disabling.
        raise Unauthenticated(ACCOUNT_DISABLED)
    if token.rotated_at is not None and not _just_rotated_away(
            session, settings, user_session.id, token.rotated_at, now):
        _revoke(session, user_session, REFRESH_REUSE, origin, actor_id=user_session.user_id)
        log.warning("refresh token reused; session revoked",
                    extra={"session_id": str(user_session.id)})
        raise Unauthenticated("refresh token already used; the session has been revoked",
                              keeps_changes=True)
    if token.expires_at <= now or user_session.expires_at <= now:
        raise Unauthenticated("refresh token expired")
    if token.rotated_at is None:
        token.rotated_at = now
        # Spent tokens past their own expiry can no longer be replayed usefully: forget them.
        session.execute(delete(RefreshToken).where(RefreshToken.session_id == user_session.id,
                                                   RefreshToken.rotated_at.is_not(None),
                                                   RefreshToken.expires_at <= now))
    # Else the token was spent moments ago by a refresh whose answer never arrived (a reload
    # aborted it; without the grace two quick reloads signed the user out). The new pair spends
    # nothing: the token it was traded for may be held by a racing tab, and this one stays the
    # latest spent, so further aborted reloads within the grace work too.
    raw = _add_refresh_token(session, settings, user_session.id)
    user_session.last_used_at = now
    user_session.expires_at = now + settings.auth.refresh_token_ttl
    return _tokens(settings, user_session.user_id, user_session.id, raw)


def _just_rotated_away(session: Session, settings: Settings, session_id: uuid.UUID,
                       rotated_at: datetime, now: datetime) -> bool:
    """Whether a token of the session spent at `rotated_at` is within
    `auth.refresh_reuse_grace` of it and no token of the session was spent after it (an older
    spent token is reuse)."""
    if rotated_at + settings.auth.refresh_reuse_grace <= now:
        return False
    later = select(RefreshToken.id).where(RefreshToken.session_id == session_id,
                                          RefreshToken.rotated_at > rotated_at).limit(1)
    return session.scalar(later) is None


@dataclass(frozen=True)
class KnownSession:
    """A session as the callers' cache keeps it: what authenticating checks, and a detached
    copy of its user."""

    id: uuid.UUID
    user: User
    expires_at: datetime
    revoked_at: datetime | None


def _known_session(session: Session, session_id: uuid.UUID) -> KnownSession | None:
    query = (select(User, UserSession).join(UserSession, UserSession.user_id == User.id)
             .where(UserSession.id == session_id))
    row = session.execute(query).one_or_none()
    if row is None:
        return None
    user, user_session = row
    return KnownSession(id=user_session.id, user=detached_copy(user),
                        expires_at=user_session.expires_at, revoked_at=user_session.revoked_at)


def authenticate(session: Session, settings: Settings, access_token: str,
                 lookup: Lookup[KnownSession] = uncached) -> tuple[User, uuid.UUID]:
    """The user (an entity of `session`) and the session id behind an access token. Raise
    Unauthenticated when the token is invalid or expired, or its session is revoked, expired
    or gone (so revocation is immediate). The user row is read fresh: rights never come from
    the token.

    `lookup` may serve the session and user from a `models.identity.callers.CallerCache`, which
    every write to them invalidates; the checks run on every call either way."""
    try:
        claims = decode_access_token(settings.auth.jwt_secret, access_token)
    except InvalidToken as exc:
        raise Unauthenticated(str(exc)) from exc
    known = lookup(("session", claims.session_id),
                   lambda: _known_session(session, claims.session_id))
    if known is None or known.user.id != claims.user_id:
        raise Unauthenticated("invalid access token")
    if known.revoked_at is not None or known.expires_at <= utcnow():
        raise Unauthenticated("session revoked")
    if known.user.disabled_at is not None:
        raise Unauthenticated(ACCOUNT_DISABLED)
    return attach(session, known.user), known.id


def _revoke(session: Session, user_session: UserSession, reason: str, origin: Origin, *,
            actor_id: uuid.UUID | None) -> None:
    user_session.revoked_at = utcnow()
    user_session.revoked_reason = reason
    record_audit(session, audit.SESSION_REVOKE, actor_id=actor_id, resource_type="session",
                 resource_id=user_session.id, ip=origin.ip, user_agent=origin.user_agent,
                 after={"user_id": str(user_session.user_id), "reason": reason})


def logout(session: Session, *, refresh_token: str | None, session_id: uuid.UUID | None,
           origin: Origin) -> None:
    """End the session of `refresh_token` (else of `session_id`). Unknown tokens and sessions
    already ended are ignored: logging out twice is not an error."""
    user_session: UserSession | None = None
    if refresh_token:
        query = (select(UserSession).join(RefreshToken)
                 .where(RefreshToken.token_hash == hash_token(refresh_token)))
        user_session = session.scalars(query).one_or_none()
    elif session_id is not None:
        user_session = session.get(UserSession, session_id)
    if user_session is not None and user_session.revoked_at is None:
        _revoke(session, user_session, LOGOUT, origin, actor_id=user_session.user_id)


def revoke_session(session: Session, user: User, session_id: uuid.UUID,
                   origin: Origin) -> None:
    """Revoke one of the user's active sessions (possibly the current one); raise NotFound when
    it is not an active session of theirs."""
    target = session.scalars(active_sessions_query(user.id)
                             .where(UserSession.id == session_id)).one_or_none()
    if target is None:
        raise NotFound("session not found")
    _revoke(session, target, REVOKED, origin, actor_id=user.id)


def revoke_user_sessions(session: Session, user_id: uuid.UUID, *, reason: str, origin: Origin,
                         actor_id: uuid.UUID | None, keep: uuid.UUID | None = None) -> int:
    """Revoke every active session of the user except `keep` (password change and reset, admin
    revocation); return how many."""
    revoked = 0
    for user_session in active_sessions(session, user_id):
        if user_session.id != keep:
            _revoke(session, user_session, reason, origin, actor_id=actor_id)
            revoked += 1
    return revoked


def revoke_sessions_of(session: Session, user_id: uuid.UUID, session_ids: Collection[uuid.UUID],
                       *, reason: str, origin: Origin) -> int:
    """Revoke those of `session_ids` that are active sessions of the user (SSO: the sessions
    opened through a provider whose identity was unlinked); return how many."""
    revoked = 0
    for user_session in active_sessions(session, user_id):
        if user_session.id in session_ids:
            _revoke(session, user_session, reason, origin, actor_id=user_id)
            revoked += 1
    return revoked


def revoke_other_sessions(session: Session, user: User, current: uuid.UUID,
                          origin: Origin) -> int:
    """Revoke every active session of the user but the current one; return how many."""
    return revoke_user_sessions(session, user.id, reason=REVOKED, origin=origin,
                                actor_id=user.id, keep=current)
