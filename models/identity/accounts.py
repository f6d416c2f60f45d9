"""Account actions: registration, password change and reset, e-mail verification, and the checks
before a deletion (the deletion itself reaches every context: `models.lifecycle.users`).

Actions write through the session they are given and never commit: the caller does. Actions that
mail someone return the messages (`OutgoingMail`) for the caller to send (the `send_mail` actor,
which waits for the commit). Password hashes are computed with no transaction open (see
`models.identity.sessions.login`).
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from burnbox.kv import KeyValueStore
from burnbox.security import encode_access_token, new_token
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import after_commit, end_read_only_transaction
from models.errors import Conflict, Forbidden, NotFound, ValidationFailed
from models.identity.account_mail import (
    OutgoingMail,
    existing_account_mail,
    reset_mail,
    verification_mail,
)
from models.identity.credentials import check_password, clear_failures
from models.identity.sessions import (
    PASSWORD_CHANGE,
    PASSWORD_RESET,
    SignedIn,
    Tokens,
    lock_user,
    open_session,
    revoke_user_sessions,
)
from models.identity.users import (
    RESET_PASSWORD,
    VERIFY_EMAIL,
    User,
    consume_account_token,
    find_by_email,
    issue_account_token,
    new_user,
    normalise_email,
    password_hasher,
)
from models.platform import audit
from models.platform.audit import Origin, record_audit
from models.platform.settings import current_platform, live_settings, lock_platform


@dataclass(frozen=True)
class Registered:
    """The outcome of a registration: the sign-in to return, the mail to send after commit."""

    signed_in: SignedIn
    mails: list[OutgoingMail] = field(default_factory=list)


def register(session: Session, settings: Settings, *, email: str, password: str,
             display_name: str, origin: Origin) -> Registered:
    """Create an account and sign it in, mailing a verification link.

    An address that already has an account gets the same answer, after the same work: a
    well-formed user and tokens that match no account (they fail on first use), while the
    owner is mailed a notice. Raise Forbidden when registration is disabled, ValidationFailed
    for a bad address, name or password."""
    platform = current_platform(session, settings)
    if not platform.registration_enabled:
        raise Forbidden("registration is disabled")
    platform.password_policy.check(password)
    live = platform.settings  # the verification link's lifetime and the date/time defaults
    candidate = new_user(email=email, display_name=display_name, password_hash=None,
                         datetime_defaults=live.defaults)
    end_read_only_transaction(session)  # no transaction open during the slow hash
    candidate.password_hash = password_hasher(settings).hash(password)
    if find_by_email(session, candidate.email) is None:
        try:
            # A savepoint, so that losing the race below undoes only this attempt.
            with session.begin_nested():
                session.add(candidate)
                session.flush()  # the user row must exist before rows that refer to it
                signed_in = open_session(session, settings, candidate, origin)
                token = issue_account_token(session, candidate.id, VERIFY_EMAIL,
                                            live.auth.email_verification_ttl)
                record_audit(session, audit.REGISTER, actor_id=candidate.id,
                             resource_type="user", resource_id=candidate.id, ip=origin.ip,
                             user_agent=origin.user_agent, after={"email": candidate.email})
            return Registered(signed_in, [verification_mail(live, candidate.email,
                                                            candidate.display_name, token)])
        except IntegrityError:
            # A concurrent registration took the address first: answer as for any taken one.
            pass
    existing = find_by_email(session, candidate.email)
    record_audit(session, audit.REGISTER_EXISTING, actor_id=None, resource_type="user",
                 resource_id=existing.id if existing else None, ip=origin.ip,
                 user_agent=origin.user_agent)
    return Registered(_decoy(live, candidate), [existing_account_mail(settings,
                                                                          candidate.email)])


def _decoy(settings: Settings, candidate: User) -> SignedIn:
    """A sign-in that looks like a fresh registration's but names no stored user or session."""
    user = new_user(email=candidate.email, display_name=candidate.display_name,
                    password_hash=None, datetime_defaults=settings.defaults)
    user.last_login_at = utcnow()
    session_id = uuid.uuid4()
    access = encode_access_token(settings.auth.jwt_secret, user_id=user.id,
                                 session_id=session_id, ttl=settings.auth.access_token_ttl)
    tokens = Tokens(access_token=access, refresh_token=new_token(),
                    expires_in=int(settings.auth.access_token_ttl.total_seconds()))
    return SignedIn(user=user, session_id=session_id, tokens=tokens)


def _confirm_password(session: Session, store: KeyValueStore, settings: Settings, user: User,
                      password: str) -> uuid.UUID:
    """Check the user's current password (counted by the lockout); return their id with no
    transaction left open. Raise Forbidden when it is wrong."""
    user_id, email, stored = user.id, user.email, user.password_hash
    live = live_settings(session, settings)  # the lockout keys, read before the transaction ends
    end_read_only_transaction(session)
    if not check_password(store, live, email, stored, password):
        raise Forbidden("password is incorrect")
    return user_id


def _locked(session: Session, user_id: uuid.UUID) -> User:
    user = lock_user(session, user_id)
    if user is None:
        raise Forbidden("the account no longer exists")
    return user


def change_password(session: Session, store: KeyValueStore, settings: Settings, user: User, *,
                    current_password: str, new_password: str, current_session: uuid.UUID,
                    origin: Origin) -> None:
    """Set a new password after checking the current one, and revoke every other session.

    Raise ValidationFailed when the account has no password (SSO-only: use the reset flow) or
    the new one breaks the policy, Forbidden when the current one is wrong."""
    if user.password_hash is None:
        raise ValidationFailed("this account has no password; set one with forgot-password",
                               details={"current_password": ["the account has no password"]})
    current_platform(session, settings).password_policy.check(new_password, "new_password")
    user_id = _confirm_password(session, store, settings, user, current_password)
    new_hash = password_hasher(settings).hash(new_password)
    locked = _locked(session, user_id)
    locked.password_hash = new_hash
    revoke_user_sessions(session, user_id, reason=PASSWORD_CHANGE, origin=origin,
                         actor_id=user_id, keep=current_session)
    record_audit(session, audit.PASSWORD_CHANGE, actor_id=user_id, resource_type="user",
                 resource_id=user_id, ip=origin.ip, user_agent=origin.user_agent)


def confirm_account_deletion(session: Session, store: KeyValueStore, settings: Settings,
                             user: User, *, password: str | None) -> User:
    """The identity checks before the account goes; return the user, locked.

    A user with a password must confirm with it (checked with no transaction open); an SSO-only
    user is confirmed by the session making the request. Raise ValidationFailed (password
    missing), Forbidden (wrong password, account gone), Conflict for the last system
    administrator. It does not commit: the deletion follows in the same transaction."""
    if user.password_hash is not None:
        if not password:
            raise ValidationFailed("confirm with your password",
                                   details={"password": ["required to delete the account"]})
        user_id = _confirm_password(session, store, settings, user, password)
    else:
        user_id = user.id
    if user.is_system_admin:
        lock_platform(session)  # serialises admin removals, so two cannot each leave the other
    locked = _locked(session, user_id)
    if locked.is_system_admin:
        # Disabled administrators cannot act: they do not count as the ones who remain.
        admins = session.scalar(select(func.count()).select_from(User)
                                .where(User.is_system_admin.is_(True),
                                       User.disabled_at.is_(None))) or 0
        if admins <= 1:
            raise Conflict("the last system administrator cannot delete their account")
    return locked


def request_password_reset(session: Session, settings: Settings, email: str) -> list[OutgoingMail]:
    """Mail a reset link if an account has this address (earlier unused links stop working).
    The answer to the client must not depend on the outcome."""
    try:
        user = find_by_email(session, normalise_email(email))
    except ValidationFailed:
        return []
    if user is None:
        return []
    token = issue_account_token(session, user.id, RESET_PASSWORD, settings.auth.password_reset_ttl)
    return [reset_mail(settings, user.email, token)]


def reset_password(session: Session, store: KeyValueStore, settings: Settings, *, token: str,
                   password: str, origin: Origin) -> None:
    """Set a new password with a mailed reset token; revoke every session, mark the address
    verified (the mail reached its owner) and lift any lockout. Raise ValidationFailed for a
    bad password or an unknown, used or expired token (the token stays usable after a bad
    password)."""
    current_platform(session, settings).password_policy.check(password)
    end_read_only_transaction(session)
    new_hash = password_hasher(settings).hash(password)
    user = consume_account_token(session, token, RESET_PASSWORD)
    if user is None:
        raise ValidationFailed("invalid or expired reset token",
                               details={"token": ["invalid, used or expired"]})
    user.password_hash = new_hash
    user.email_verified = True
    revoke_user_sessions(session, user.id, reason=PASSWORD_RESET, origin=origin,
                         actor_id=user.id)
    record_audit(session, audit.PASSWORD_RESET, actor_id=user.id, resource_type="user",
                 resource_id=user.id, ip=origin.ip, user_agent=origin.user_agent)
    email = user.email
    # Lift the lockout only once the new password is committed.
    after_commit(session, lambda: clear_failures(store, email))


def made_up_password() -> str:
    """A new random password that any password policy accepts: 144 random bits, with letters of
    each case, a digit and a symbol."""
    return f"{secrets.token_urlsafe(18)}-Aa1"


def set_password(session: Session, store: KeyValueStore, settings: Settings, *, email: str,
                 password: str, origin: Origin) -> User:
    """The operator's reset, from a shell on the server (no token, no mail): set the password
    of the account with this address, revoke every session of it, and lift any lockout once
    committed; audited as a password reset with no actor. Return the user. Raise NotFound for
    an unknown address, ValidationFailed for a password the policy refuses."""
    current_platform(session, settings).password_policy.check(password)
    end_read_only_transaction(session)
    new_hash = password_hasher(settings).hash(password)
    user = find_by_email(session, normalise_email(email))
    if user is None:
        raise NotFound(f"no account with the e-mail address {email}")
    locked = _locked(session, user.id)
    locked.password_hash = new_hash
    revoke_user_sessions(session, locked.id, reason=PASSWORD_RESET, origin=origin,
                         actor_id=None)
    record_audit(session, audit.PASSWORD_RESET, actor_id=None, resource_type="user",
                 resource_id=locked.id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel)
    address = locked.email
    after_commit(session, lambda: clear_failures(store, address))
    return locked


def verify_email(session: Session, token: str, origin: Origin) -> User:
    """Mark the address of the token's user verified; raise ValidationFailed for an unknown,
    used or expired token."""
    user = consume_account_token(session, token, VERIFY_EMAIL)
    if user is None:
        raise ValidationFailed("invalid or expired verification token",
                               details={"token": ["invalid, used or expired"]})
    user.email_verified = True
    record_audit(session, audit.EMAIL_VERIFIED, actor_id=user.id, resource_type="user",
                 resource_id=user.id, ip=origin.ip, user_agent=origin.user_agent)
    return user
