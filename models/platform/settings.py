"""Platform-wide settings an administrator can change at run time (later via PUT /admin/platform):
registration, password policy, the default session limit, and whether setup is complete.

They live in one row (id 1) of `platform_settings`. A NULL column means "the configured default"
(the `defaults.*` settings), so a value changes with the configuration until an administrator
pins it. The row may be missing (a fresh database): readers then see the defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import Base
from models.errors import ValidationFailed

ROW_ID = 1


class PlatformSettings(Base):
    """The single row of administrator overrides (NULL: use the configured default)."""

    __tablename__ = "platform_settings"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    registration_enabled: Mapped[bool | None]
    max_sessions_per_user: Mapped[int | None]
    # Only the keys an administrator changed: a subset of PasswordPolicy's fields.
    password_policy: Mapped[dict[str, Any] | None]
    setup_completed_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


@dataclass(frozen=True)
class PasswordPolicy:
    """What a new password must satisfy."""

    min_length: int
    max_length: int
    require_uppercase: bool
    require_lowercase: bool
    require_digit: bool
    require_symbol: bool

    def problems(self, password: str) -> list[str]:
        """Every rule `password` breaks, as messages; empty when it is acceptable."""
        found = []
        if len(password) < self.min_length:
            found.append(f"must be at least {self.min_length} characters")
        if len(password) > self.max_length:
            found.append(f"must be at most {self.max_length} characters")
        if self.require_uppercase and not any(c.isupper() for c in password):
            found.append("must contain an upper-case letter")
        if self.require_lowercase and not any(c.islower() for c in password):
            found.append("must contain a lower-case letter")
        if self.require_digit and not any(c.isdigit() for c in password):
            found.append("must contain a digit")
        if self.require_symbol and all(c.isalnum() for c in password):
            found.append("must contain a character that is not a letter or digit")
        return found

    def check(self, password: str, field: str = "password") -> None:
        """Raise ValidationFailed naming `field` when `password` breaks the policy."""
        found = self.problems(password)
        if found:
            raise ValidationFailed(f"{field} does not meet the password policy",
                                   details={field: found})

    def as_dict(self) -> dict[str, Any]:
        """The policy as JSON-ready fields (for GET /auth/sso-status)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Platform:
    """The effective platform settings: the row's overrides over the configured defaults."""

    registration_enabled: bool
    max_sessions_per_user: int
    password_policy: PasswordPolicy


def default_policy(settings: Settings) -> PasswordPolicy:
    """The password policy of the defaults.password_* settings."""
    d = settings.defaults
    return PasswordPolicy(
        min_length=d.password_min_length, max_length=d.password_max_length,
        require_uppercase=d.password_require_uppercase,
        require_lowercase=d.password_require_lowercase,
        require_digit=d.password_require_digit, require_symbol=d.password_require_symbol,
    )


def current_platform(session: Session, settings: Settings) -> Platform:
    """The effective platform settings (no lock taken)."""
    row = session.get(PlatformSettings, ROW_ID)
    return effective(row, settings)


def effective(row: PlatformSettings | None, settings: Settings) -> Platform:
    """Merge a row's overrides (or none) over the configured defaults."""
    policy = default_policy(settings)
    if row is None:
        return Platform(registration_enabled=settings.defaults.registration_enabled,
                        max_sessions_per_user=settings.defaults.max_sessions_per_user,
                        password_policy=policy)
    known = {f.name for f in dataclasses.fields(PasswordPolicy)}
    overrides = {k: v for k, v in (row.password_policy or {}).items() if k in known}
    return Platform(
        registration_enabled=_pick(row.registration_enabled,
                                   settings.defaults.registration_enabled),
        max_sessions_per_user=_pick(row.max_sessions_per_user,
                                    settings.defaults.max_sessions_per_user),
        password_policy=dataclasses.replace(policy, **overrides),
    )


def _pick(value: Any, default: Any) -> Any:
    return default if value is None else value


def lock_platform(session: Session) -> PlatformSettings:
    """The settings row, created if missing, locked FOR UPDATE until the transaction ends.

    Writers of platform-wide state (setup completion, admin changes) serialise on this lock.
    The insert does nothing when the row exists, so concurrent callers cannot collide on it."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    session.execute(insert(PlatformSettings).values(id=ROW_ID, updated_at=utcnow())
                    .on_conflict_do_nothing(index_elements=["id"]))
    query = (select(PlatformSettings).where(PlatformSettings.id == ROW_ID).with_for_update()
             .execution_options(populate_existing=True))
    return session.scalars(query).one()
