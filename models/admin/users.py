"""Users as a system administrator manages them: the list, changes to an account, deletion,
ending every session, and switching how an account signs in.

Rules kept here:
- The actor's rights are read again from their user row, under the platform lock that every
  change to the set of system administrators takes (`lock_platform`), so two administrators
  removing each other at once cannot both succeed, and an administrator demoted a moment ago
  can do nothing more.
- Nobody changes their own system-administrator flag, disables or deletes themselves: an
  administrator must not lock themselves out by mistake.
- So at least one enabled system administrator always remains: whoever demotes, disables or
  deletes an administrator is another one, still enabled when the change commits (checked under
  the lock). That is the last-administrator rule; it needs no count of its own.
- A disabled account (`users.disabled_at`) has its sessions ended at once and cannot sign in,
  refresh or act through its API keys (`models.identity`, `models.apikeys` refuse it); enabling
  it again lets it sign in, and its keys work again.
- Deleting a user revokes every API key they created (a deleted user's keys once stayed
  active), ends their sessions, and keeps the audit entries that name them (the trail has no
  foreign keys); every other reference to the user is CASCADE or SET NULL in the schema, so the
  delete never fails on a foreign key. A user who is the only owner of an org is not deleted
  (Conflict naming the orgs), as for self-deletion: no org is left without an owner.
- "To SSO" means: the password is removed, so the account signs in only through its SSO
  identities; it is refused (Conflict) for an account with no linked identity, which would be
  left with no way in. "To password" sets a new password (checked against the policy).

Every change is audited as a platform entry (no org), updates with before and after. The
actions flush but never commit: the caller does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import end_read_only_transaction
from models.errors import Conflict, Forbidden, NotFound, ValidationFailed
from models.identity.sessions import lock_user, revoke_user_sessions
from models.identity.users import User, clean_display_name, password_hasher
from models.lifecycle.users import check_no_sole_ownership, remove_user
from models.platform.audit import record_audit
from models.platform.settings import current_platform, lock_platform
from models.search import contains
from models.sso.identities import count_identities
from models.tenancy.access import Caller

# Audit actions (org-less entries).
USER_UPDATE = "admin.user_update"
USER_DELETE = "admin.user_delete"
USER_SESSIONS_REVOKE = "admin.user_sessions_revoke"
USER_MIGRATE_AUTH = "admin.user_migrate_auth"

# Why a session ended (sessions.revoked_reason), beside the identity context's reasons.
ADMIN_REVOKED = "admin_revoked"
DISABLED = "account_disabled"

# How an account signs in.
PASSWORD = "password"  # noqa: S105 (a sign-in method's name)
SSO = "sso"
AUTH_METHODS = (PASSWORD, SSO)

MIN_MAX_SESSIONS = 1
MAX_MAX_SESSIONS = 100
# The fields PATCH /admin/users/:id may change.
CHANGEABLE = ("display_name", "is_system_admin", "email_verified", "max_sessions", "disabled")


@dataclass(frozen=True)
class UserFilters:
    """What the user list is narrowed to; None leaves a filter off."""

    q: str = ""
    system_admin: bool | None = None
    disabled: bool | None = None
    sso_only: bool | None = None


def auth_method(user: User) -> str:
    """How the account signs in: PASSWORD while it has one, else SSO."""
    return PASSWORD if user.password_hash is not None else SSO


def admin_user_view(user: User) -> dict[str, Any]:
    """The user as administrators see it: the account fields, plus whether it is disabled and
    how it signs in (never the password hash)."""
    return {"id": user.id, "email": user.email, "display_name": user.display_name,
            "is_system_admin": user.is_system_admin, "email_verified": user.email_verified,
            "timezone": user.timezone, "date_format": user.date_format,
            "time_format": user.time_format, "max_sessions": user.max_sessions,
            "created_at": user.created_at, "updated_at": user.updated_at,
            "last_login_at": user.last_login_at, "disabled": user.disabled_at is not None,
            "disabled_at": user.disabled_at, "auth_method": auth_method(user)}


def users_query(filters: UserFilters) -> Select[Any]:
    """Users matching `filters`, oldest first: `q` is a case-blind substring of the e-mail or
    the display name; `sso_only` means "has no password"."""
    query = select(User).order_by(User.created_at, User.id)
    if filters.q:
        text = filters.q.lower()
        query = query.where(or_(contains(func.lower(User.email), text),
                                contains(func.lower(User.display_name), text)))
    if filters.system_admin is not None:
        query = query.where(User.is_system_admin.is_(filters.system_admin))
    if filters.disabled is not None:
        query = query.where(User.disabled_at.is_not(None) if filters.disabled
                            else User.disabled_at.is_(None))
    if filters.sso_only is not None:
        query = query.where(User.password_hash.is_(None) if filters.sso_only
                            else User.password_hash.is_not(None))
    return query


def _acting_admin(session: Session, actor: Caller) -> None:
    """Take the platform lock, then check that the actor is still an enabled system
    administrator (their row as it is now, not as it was when the request began)."""
    lock_platform(session)
    row = session.get(User, actor.user_id, populate_existing=True)
    if row is None or not row.is_system_admin or row.disabled_at is not None or \
            not actor.is_system_admin:
        raise Forbidden("system administrator only")


def _target(session: Session, user_id: uuid.UUID) -> User:
    """The user row, locked; NotFound when there is none."""
    user = lock_user(session, user_id)
    if user is None:
        raise NotFound("user not found")
    return user


def _not_yourself(actor: Caller, user_id: uuid.UUID, field: str, what: str) -> None:
    """Raise ValidationFailed (on `field`) when the actor would `what` themselves."""
    if actor.user_id == user_id:
        raise ValidationFailed(f"you cannot {what} yourself",
                               details={field: [f"cannot {what} yourself"]})


def _snapshot(user: User, names: list[str]) -> dict[str, Any]:
    """The fields `names` (of CHANGEABLE: all JSON values) as the admin view shows them."""
    view = admin_user_view(user)
    return {name: view[name] for name in names}


def _checked_changes(changes: dict[str, Any]) -> dict[str, Any]:
    """The changes with their values checked; ValidationFailed naming every bad field."""
    errors: dict[str, list[str]] = {}
    checked: dict[str, Any] = {}
    for name, value in changes.items():
        if name not in CHANGEABLE:
            errors[name] = ["not a field an administrator can change"]
        elif name == "display_name":
            try:
                checked[name] = clean_display_name(value)
            except ValidationFailed as exc:
                errors.update(exc.details or {})
        elif name == "max_sessions":
            if value is not None and not MIN_MAX_SESSIONS <= value <= MAX_MAX_SESSIONS:
                errors[name] = [f"must be {MIN_MAX_SESSIONS}-{MAX_MAX_SESSIONS}, or null for "
                                "the platform default"]
            checked[name] = value
        elif not isinstance(value, bool):
            errors[name] = ["must be true or false"]
        else:
            checked[name] = value
    if errors:
        raise ValidationFailed("invalid user change", details=errors)
    return checked


def update_user(session: Session, actor: Caller, user_id: uuid.UUID,
                changes: dict[str, Any]) -> User:
    """Apply `changes` (any of CHANGEABLE; `max_sessions` None returns to the platform
    default) to the user. Disabling ends every session at once. Raise ValidationFailed for a
    bad value, or for demoting or disabling oneself; NotFound; Forbidden when the actor is no
    longer an enabled administrator."""
    checked = _checked_changes(changes)
    if checked.get("is_system_admin") is False:
        _not_yourself(actor, user_id, "is_system_admin", "demote")
    if checked.get("disabled") is True:
        _not_yourself(actor, user_id, "disabled", "disable")
    _acting_admin(session, actor)
    user = _target(session, user_id)
    changed = [name for name, value in checked.items()
               if admin_user_view(user)[name] != value]
    if not changed:
        return user
    before = _snapshot(user, changed)
    for name in changed:
        if name == "disabled":
            user.disabled_at = utcnow() if checked[name] else None
        else:
            setattr(user, name, checked[name])
    user.updated_at = utcnow()
    if checked.get("disabled") is True:
        revoke_user_sessions(session, user.id, reason=DISABLED, origin=actor.origin,
                             actor_id=actor.user_id)
    record_audit(session, USER_UPDATE, actor_id=actor.user_id, resource_type="user",
                 resource_id=user.id, ip=actor.origin.ip, user_agent=actor.origin.user_agent,
                 channel=actor.origin.channel, before=before,
                 after=_snapshot(user, changed))
    session.flush()
    return user


def delete_user_as_admin(session: Session, actor: Caller, user_id: uuid.UUID) -> None:
    """Delete another user: revoke every API key they created, end their sessions (audited),
    then delete the row. Raise ValidationFailed for oneself, NotFound, Forbidden, Conflict for
    the only owner of an org (the org ids in `org_ids`)."""
    _not_yourself(actor, user_id, "id", "delete")
    _acting_admin(session, actor)
    user = _target(session, user_id)
    check_no_sole_ownership(session, user, "the user is the only owner of some orgs: give "
                            "each another owner, or delete it, first")
    origin = actor.origin
    before = {"email": user.email, "display_name": user.display_name,
              "is_system_admin": user.is_system_admin}
    ended = revoke_user_sessions(session, user.id, reason=ADMIN_REVOKED, origin=origin,
                                 actor_id=actor.user_id)
    revoked_keys = remove_user(session, user)
    record_audit(session, USER_DELETE, actor_id=actor.user_id, resource_type="user",
                 resource_id=user_id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, before=before,
                 after={"sessions_ended": ended, "api_keys_revoked": revoked_keys})


def end_user_sessions(session: Session, actor: Caller, user_id: uuid.UUID) -> int:
    """End every active session of the user (their access tokens stop at the next request);
    return how many. Raise NotFound, Forbidden."""
    _acting_admin(session, actor)
    user = _target(session, user_id)
    origin = actor.origin
    ended = revoke_user_sessions(session, user.id, reason=ADMIN_REVOKED, origin=origin,
                                 actor_id=actor.user_id)
    record_audit(session, USER_SESSIONS_REVOKE, actor_id=actor.user_id, resource_type="user",
                 resource_id=user.id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, after={"email": user.email, "sessions_ended": ended})
    return ended


def has_sso_identity(session: Session, user: User) -> bool:
    """Whether the user can sign in through SSO: at least one linked identity."""
    return count_identities(session, user.id) > 0


def migrate_auth(session: Session, settings: Settings, actor: Caller, user_id: uuid.UUID, *,
                 target: str, new_password: str | None) -> User:
    """Switch how the user signs in (see the module docstring). To PASSWORD: `new_password` is
    required when the account has none, and when given replaces the current one; every
    session then ends (as a password reset does). To SSO: the password is removed, which needs
    an SSO identity. Raise ValidationFailed (unknown target, missing or weak password),
    NotFound, Forbidden, Conflict (already that way, no SSO identity)."""
    if target not in AUTH_METHODS:
        raise ValidationFailed("unknown sign-in method",
                               details={"target": [f"must be one of {', '.join(AUTH_METHODS)}"]})
    new_hash = None
    if target == PASSWORD and new_password is not None:
        current_platform(session, settings).password_policy.check(new_password, "new_password")
        end_read_only_transaction(session)  # no lock held while argon2 runs
        new_hash = password_hasher(settings).hash(new_password)
    _acting_admin(session, actor)
    user = _target(session, user_id)
    before = auth_method(user)
    if target == PASSWORD:
        if new_hash is None:
            if user.password_hash is None:
                raise ValidationFailed("the account has no password: give it one",
                                       details={"new_password": ["required"]})
            raise Conflict("the account already signs in with a password")
        user.password_hash = new_hash
    else:
        if user.password_hash is None:
            raise Conflict("the account already signs in only through SSO")
        if not has_sso_identity(session, user):
            raise Conflict("the account has no SSO identity to sign in with")
        user.password_hash = None
    user.updated_at = utcnow()
    origin = actor.origin
    ended = revoke_user_sessions(session, user.id, reason=ADMIN_REVOKED, origin=origin,
                                 actor_id=actor.user_id)
    record_audit(session, USER_MIGRATE_AUTH, actor_id=actor.user_id, resource_type="user",
                 resource_id=user.id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, before={"auth_method": before, "email": user.email},
                 after={"auth_method": target, "sessions_ended": ended})
    session.flush()
    return user
