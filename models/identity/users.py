"""User accounts and their single-use account tokens (e-mail verification, password reset).

Rules kept here: e-mail addresses are stored trimmed and lower-cased (one account per address);
display names are 1-200 characters; tokens are 256 random bits, stored only as SHA-256 hashes,
expire, and are consumed at most once.
"""

from __future__ import annotations

import re
import uuid
import zoneinfo
from datetime import datetime, timedelta
from functools import cache

from sqlalchemy import ForeignKey, String, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.security import PasswordHasher, hash_token, new_token
from burnbox.settings import DefaultsSettings, Settings
from burnbox.timeutil import utcnow
from models.db import Base, Timestamps, UUIDKey
from models.errors import ValidationFailed

DATE_FORMATS = ("YYYY-MM-DD", "DD/MM/YYYY", "MM/DD/YYYY", "DD.MM.YYYY")
TIME_FORMATS = ("24h", "12h")
# The web UI's colour schemes; `system` follows the device's preference (prefers-color-scheme).
THEMES = ("system", "light", "dark")
DEFAULT_TIMEZONE = "UTC"
MAX_EMAIL_LENGTH = 254
MAX_DISPLAY_NAME = 200
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

# Purposes of account tokens.
VERIFY_EMAIL = "verify_email"
RESET_PASSWORD = "reset_password"  # noqa: S105 (a purpose name, not a password)


class User(UUIDKey, Timestamps, Base):
    """A person who can sign in (by password, or later by SSO when password_hash is NULL)."""

    __tablename__ = "users"

    email: Mapped[str] = mapped_column(String(MAX_EMAIL_LENGTH), unique=True)
    display_name: Mapped[str] = mapped_column(String(MAX_DISPLAY_NAME))
    password_hash: Mapped[str | None] = mapped_column(String(255))
    is_system_admin: Mapped[bool] = mapped_column(default=False)
    email_verified: Mapped[bool] = mapped_column(default=False)
    timezone: Mapped[str] = mapped_column(String(64), default=DEFAULT_TIMEZONE)
    date_format: Mapped[str] = mapped_column(String(16), default=DATE_FORMATS[0])
    time_format: Mapped[str] = mapped_column(String(8), default=TIME_FORMATS[0])
    theme: Mapped[str] = mapped_column(String(8), default=THEMES[0], server_default=THEMES[0])
    # Per-user session limit; NULL follows the platform default.
    max_sessions: Mapped[int | None]
    last_login_at: Mapped[datetime | None]
    # Set while a system administrator has disabled the account: it cannot sign in, refresh,
    # or act through its API keys (models.admin.users).
    disabled_at: Mapped[datetime | None]


class AccountToken(UUIDKey, Base):
    """A single-use token mailed to a user; only its hash is kept."""

    __tablename__ = "account_tokens"

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"),
                                               index=True)
    purpose: Mapped[str] = mapped_column(String(32))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


def new_user(*, email: str, display_name: str, password_hash: str | None,
             is_system_admin: bool = False,
             datetime_defaults: DefaultsSettings | None = None) -> User:
    """A User with every field set (not added to any session), validating email and name.

    The time zone and formats start as the platform's defaults (`datetime_defaults`, the live
    `defaults.*` settings; without them, UTC / YYYY-MM-DD / 24h)."""
    now = utcnow()
    d = datetime_defaults
    return User(id=uuid.uuid4(), email=normalise_email(email),
                display_name=clean_display_name(display_name), password_hash=password_hash,
                is_system_admin=is_system_admin, email_verified=False,
                timezone=d.timezone if d else DEFAULT_TIMEZONE,
                date_format=d.date_format if d else DATE_FORMATS[0],
                time_format=d.time_format if d else TIME_FORMATS[0], theme=THEMES[0],
                max_sessions=None, last_login_at=None,
                disabled_at=None, created_at=now, updated_at=now)


def password_hasher(settings: Settings) -> PasswordHasher:
    """The argon2id hasher with the configured parameters."""
    auth = settings.auth
    return PasswordHasher(time_cost=auth.argon2_time_cost, memory_kib=auth.argon2_memory_kib,
                          parallelism=auth.argon2_parallelism)


def normalise_email(email: str) -> str:
    """The stored form of an address (trimmed, lower-case); ValidationFailed if malformed."""
    value = email.strip().lower()
    if len(value) > MAX_EMAIL_LENGTH or not _EMAIL.match(value):
        raise ValidationFailed("invalid e-mail address", details={"email": ["not a valid address"]})
    return value


def clean_display_name(name: str) -> str:
    """A trimmed display name of 1-200 printable characters; ValidationFailed otherwise."""
    value = name.strip()
    if not 1 <= len(value) <= MAX_DISPLAY_NAME or not value.isprintable():
        raise ValidationFailed("invalid display name", details={
            "display_name": [f"must be 1-{MAX_DISPLAY_NAME} printable characters"]})
    return value


@cache
def _timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def find_by_email(session: Session, email: str) -> User | None:
    """The user with this address (any case), or None."""
    return session.scalars(select(User).where(User.email == email.strip().lower())).one_or_none()


def update_profile(session: Session, user: User, *, display_name: str | None = None,
                   timezone: str | None = None, date_format: str | None = None,
                   time_format: str | None = None, theme: str | None = None) -> User:
    """Change the given profile fields (None leaves one unchanged).

    Raise ValidationFailed naming every bad field; nothing changes then."""
    errors: dict[str, list[str]] = {}
    changes: dict[str, str] = {}
    if display_name is not None:
        try:
            changes["display_name"] = clean_display_name(display_name)
        except ValidationFailed as exc:
            errors.update(exc.details or {})
    if timezone is not None:
        if timezone in _timezones():
            changes["timezone"] = timezone
        else:
            errors["timezone"] = ["not an IANA time zone name"]
    for field, value, allowed in (("date_format", date_format, DATE_FORMATS),
                                  ("time_format", time_format, TIME_FORMATS),
                                  ("theme", theme, THEMES)):
        if value is not None:
            if value in allowed:
                changes[field] = value
            else:
                errors[field] = [f"must be one of {', '.join(allowed)}"]
    if errors:
        raise ValidationFailed("invalid profile", details=errors)
    for field, value in changes.items():
        setattr(user, field, value)
    return user


def issue_account_token(session: Session, user_id: uuid.UUID, purpose: str,
                        ttl: timedelta) -> str:
    """Create a token for `purpose`, retiring the user's unused ones for it; return the raw
    token (to mail; it is not stored). The caller commits."""
    now = utcnow()
    session.execute(update(AccountToken)
                    .where(AccountToken.user_id == user_id, AccountToken.purpose == purpose,
                           AccountToken.used_at.is_(None))
                    .values(used_at=now))
    raw = new_token()
    session.add(AccountToken(id=uuid.uuid4(), user_id=user_id, purpose=purpose,
                             token_hash=hash_token(raw), created_at=now, expires_at=now + ttl))
    return raw


def consume_account_token(session: Session, raw: str, purpose: str) -> User | None:
    """Mark the token used and return its user, or None when it is unknown, for another
    purpose, used or expired. The token row is locked, so two concurrent uses cannot both
    succeed. The caller commits."""
    query = (select(AccountToken).where(AccountToken.token_hash == hash_token(raw))
             .with_for_update().execution_options(populate_existing=True))
    token = session.scalars(query).one_or_none()
    now = utcnow()
    if token is None or token.purpose != purpose or token.used_at is not None \
            or token.expires_at <= now:
        return None
    token.used_at = now
    return session.get(User, token.user_id)


def delete_user(session: Session, user: User) -> None:
    """Delete the user (rows referring to them cascade or are detached by the database).
    Unchecked and unaudited: `models.lifecycle.users.delete_account`, the whole action, does
    both, revokes what must not outlive the account quietly first, and commits."""
    session.delete(user)
    session.flush()
