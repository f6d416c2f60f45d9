"""Platform-wide settings an administrator changes at run time (GET/PUT /admin/platform):
registration, e-mail verification, password policy, lockout, inbox TTLs, attachment limits,
tenant limits, session limit, webhook delivery, date/time defaults, the demo switch; and
whether setup is complete.

The configuration (defaults < file < environment, burnbox/settings.py) is the floor. One row
(id 1) of `platform_settings` holds an `overrides` document: the settings keys an administrator
pinned (`{"defaults.inbox_ttl": "2h"}`), JSON-ready, with a `revision` counting changes. A key
absent from the document follows the configuration. The row may be missing (a fresh database):
readers then see the configuration.

Every process (web, worker, mailin, clock) reads the row where it uses one of these keys, through
`current_platform` or `live_settings`: one primary-key read of a one-row table, so a change made
through any web process is seen by every other process on its next use, with no restart and no
message that could be lost. A web request with Redis behind it reads the row from a
`PlatformCache` instead (`serve_platform_from`): kept under the platform revision
(models.caching), which every committed write of the row moves, so the next request of every
process reads it again. Without Redis nothing is cached: a process's memory store is its own,
and a change committed by another process on the same database (a CLI beside `burnbox serve`)
could not move the revision this one reads.
"""

from __future__ import annotations

import dataclasses
import zoneinfo
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Mapped, Session, mapped_column
from sqlalchemy.orm.util import identity_key

from burnbox.durations import DurationError, format_duration, parse_duration
from burnbox.settings import DefaultsSettings, Settings
from burnbox.timeutil import utcnow
from models.caching import PLATFORM_REVISION_KEY, RevisionedCache, Revisions, kept_in
from models.db import Base, conflict_insert
from models.errors import ValidationFailed
from models.platform.audit import Origin, record_audit

ROW_ID = 1
# Audit action of PUT /admin/platform (severity critical: it changes every tenant's rules).
PLATFORM_UPDATED = "admin.platform_updated"


class PlatformSettings(Base):
    """The single row of administrator overrides (a key absent: use the configured value)."""

    __tablename__ = "platform_settings"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    # Settings key -> JSON value, only for the keys an administrator pinned.
    overrides: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default="{}")
    revision: Mapped[int] = mapped_column(default=0, server_default="0")
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
class PlatformKey:
    """One runtime-changeable key: its API name, the settings key it overrides, its kind
    (bool, int, timedelta or str), inclusive bounds for numbers and durations, and the values
    a string may take (`choices`, called when needed)."""

    name: str
    setting: str
    kind: type
    low: int | timedelta | None = None
    high: int | timedelta | None = None
    choices: Callable[[], Collection[str]] | None = None
    described: str = ""  # what a value must be, when listing `choices` would not help

    def load(self, raw: Any) -> Any:
        """The typed value of a JSON value; ValidationFailed naming the key when it is of the
        wrong kind or out of bounds."""
        try:
            value = self._typed(raw)
        except (TypeError, ValueError, DurationError):
            raise _invalid(self.name, f"must be {self._expected()}") from None
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            raise _invalid(self.name, f"must be between {self._shown(self.low)} and "
                                      f"{self._shown(self.high)}")
        if self.choices is not None and value not in self.choices():
            raise _invalid(self.name, f"must be {self._expected()}")
        return value

    def dump(self, value: Any) -> Any:
        """The JSON form of a typed value (durations as Go-style strings)."""
        return format_duration(value) if isinstance(value, timedelta) else value

    def _typed(self, raw: Any) -> Any:
        # bool is an int in Python: `true` must not pass as 1 for a number, nor 1 as a bool.
        if self.kind is bool:
            if not isinstance(raw, bool):
                raise TypeError
            return raw
        if self.kind is int:
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise TypeError
            return raw
        if not isinstance(raw, str):
            raise TypeError
        return raw if self.kind is str else parse_duration(raw)

    def _expected(self) -> str:
        if self.described:
            return self.described
        if self.choices is not None:
            return f"one of {', '.join(sorted(self.choices()))}"
        return {bool: "true or false", int: "an integer"}.get(
            self.kind, "a duration such as '90m' or '24h'")

    def _shown(self, bound: int | timedelta) -> str:
        return str(self.dump(bound))


def _invalid(name: str, problem: str) -> ValidationFailed:
    return ValidationFailed(f"{name} {problem}", details={name: [problem]})


@cache
def _timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _setting_choices(section: type, name: str) -> Callable[[], Collection[str]]:
    """The values the settings field allows (its `choices`): one list for file and database."""
    allowed = next(f for f in dataclasses.fields(section) if f.name == name).metadata["choices"]
    return lambda: allowed


_DAY = timedelta(days=1)
PLATFORM_KEYS: Mapping[str, PlatformKey] = {key.name: key for key in (
    PlatformKey("allow_registration", "defaults.registration_enabled", bool),
    PlatformKey("require_email_verification", "auth.require_email_verification", bool),
    PlatformKey("email_verification_ttl", "auth.email_verification_ttl", timedelta,
                timedelta(minutes=10), 30 * _DAY),
    PlatformKey("password_min_length", "defaults.password_min_length", int, 6, 128),
    PlatformKey("password_require_upper", "defaults.password_require_uppercase", bool),
    PlatformKey("password_require_lower", "defaults.password_require_lowercase", bool),
    PlatformKey("password_require_number", "defaults.password_require_digit", bool),
    PlatformKey("password_require_special", "defaults.password_require_symbol", bool),
    PlatformKey("lockout_max_attempts", "auth.lockout_threshold", int, 0, 100),
    PlatformKey("lockout_duration", "auth.lockout_duration", timedelta,
                timedelta(minutes=1), _DAY),
    PlatformKey("default_inbox_ttl", "defaults.inbox_ttl", timedelta,
                timedelta(minutes=1), 365 * _DAY),
    PlatformKey("max_inbox_ttl", "defaults.inbox_max_ttl", timedelta,
                timedelta(minutes=1), 365 * _DAY),
    PlatformKey("max_domains", "defaults.max_domains", int, 0, 10_000),
    PlatformKey("max_teams", "defaults.max_teams", int, 0, 10_000),
    PlatformKey("max_inboxes_per_domain", "defaults.max_inboxes_per_domain", int, 0, 100_000),
    PlatformKey("max_sessions_per_user", "defaults.max_sessions_per_user", int, 0, 100),
    PlatformKey("webhook_max_retries", "defaults.webhook_max_retries", int, 1, 10),
    PlatformKey("webhook_timeout", "defaults.webhook_timeout", timedelta,
                timedelta(seconds=1), timedelta(seconds=60)),
    PlatformKey("attachments_enabled", "defaults.attachments_enabled", bool),
    PlatformKey("max_attachment_size_mb", "defaults.max_attachment_size_mb", int, 0, 100),
    PlatformKey("timezone", "defaults.timezone", str, choices=_timezones,
                described="an IANA time zone name such as 'Europe/Berlin'"),
    PlatformKey("date_format", "defaults.date_format", str,
                choices=_setting_choices(DefaultsSettings, "date_format")),
    PlatformKey("time_format", "defaults.time_format", str,
                choices=_setting_choices(DefaultsSettings, "time_format")),
    PlatformKey("demo_enabled", "demo.enabled", bool),
    PlatformKey("enforce_sso", "sso.enforce_sso", bool),
    PlatformKey("enforce_sso_for_system_admins", "sso.enforce_sso_for_system_admins", bool),
)}
_BY_SETTING = {key.setting: key for key in PLATFORM_KEYS.values()}


@dataclass(frozen=True)
class Platform:
    """The effective platform settings: the row's overrides over the configuration.

    `settings` is the whole settings object with the overrides applied; the other fields are
    the views of it the identity code asks for."""

    settings: Settings
    overridden: frozenset[str]
    revision: int
    updated_at: datetime | None

    @property
    def registration_enabled(self) -> bool:
        """Anyone may create an account (else only with an invitation)."""
        return self.settings.defaults.registration_enabled

    @property
    def max_sessions_per_user(self) -> int:
        """Active sessions a user may hold by default (0: no limit)."""
        return self.settings.defaults.max_sessions_per_user

    @property
    def password_policy(self) -> PasswordPolicy:
        """What a new password must satisfy."""
        return default_policy(self.settings)

    def values(self) -> dict[str, Any]:
        """Every platform key's effective value, JSON-ready, by API name."""
        found = {}
        for key in PLATFORM_KEYS.values():
            section, _, name = key.setting.partition(".")
            found[key.name] = key.dump(getattr(getattr(self.settings, section), name))
        return found


def default_policy(settings: Settings) -> PasswordPolicy:
    """The password policy of the defaults.password_* settings."""
    d = settings.defaults
    return PasswordPolicy(
        min_length=d.password_min_length, max_length=d.password_max_length,
        require_uppercase=d.password_require_uppercase,
        require_lowercase=d.password_require_lowercase,
        require_digit=d.password_require_digit, require_symbol=d.password_require_symbol,
    )


class PlatformCache:
    """The effective platform settings of one process, read again when the platform revision
    moves (a `models.caching.RevisionedCache` of one entry)."""

    KEY = "platform.settings"

    @classmethod
    def of(cls, caches: dict[str, Any]) -> PlatformCache:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, cls)

    def __init__(self) -> None:
        self._cache = RevisionedCache[tuple[Settings, Platform]](PLATFORM_REVISION_KEY,
                                                                 capacity=1)

    def get(self, revisions: Revisions, settings: Settings,
            load: Callable[[], Platform]) -> Platform:
        """The platform settings over `settings`: cached, or `load()`ed when the revision
        moved. An entry is kept by the configuration it was merged over (the runtime's, the
        same object at every call), which it holds: no other object can take its id."""
        entry = self._cache.get(revisions, id(settings), lambda: (settings, load()))
        assert entry is not None  # the load never answers None
        return entry[1]


_SERVED_FROM = "platform.served_from"
_ROW = identity_key(PlatformSettings, ROW_ID)


def serve_platform_from(session: Session, cache: PlatformCache,
                        revisions: Callable[[], Revisions]) -> None:
    """Have `current_platform` and `live_settings` answer from `cache` in `session`, checked
    against the unit of work's revisions (`revisions()`, asked at each use: the web request's
    come with its rate limiter's round trip). For a process whose store every process shares
    (Redis): see the module docstring."""
    session.info[_SERVED_FROM] = (cache, revisions)


def current_platform(session: Session, settings: Settings) -> Platform:
    """The effective platform settings (no lock taken): from the session's `PlatformCache`
    when it has one (`serve_platform_from`), else read. A session that holds the row (it
    locked it to write: `lock_platform`) always uses it, since its own changes move the
    revision only once they are committed."""
    served_from = session.info.get(_SERVED_FROM)
    if served_from is None or _ROW in session.identity_map:
        return read_platform(session, settings)
    cache, revisions = served_from
    return cache.get(revisions(), settings, lambda: read_platform(session, settings))


def read_platform(session: Session, settings: Settings) -> Platform:
    """The effective platform settings as the database holds them now (what a `PlatformCache`
    keeps)."""
    return effective(session.get(PlatformSettings, ROW_ID), settings)


def live_settings(session: Session, settings: Settings) -> Settings:
    """`settings` with the administrator's overrides applied: what every process uses for a
    runtime-changeable key (see the module docstring)."""
    return current_platform(session, settings).settings


def effective(row: PlatformSettings | None, settings: Settings) -> Platform:
    """Merge a row's overrides (or none) over the configuration. A stored key this version
    does not know, or a value that no longer loads, is ignored rather than failing every
    request that reads the settings."""
    if row is None:
        return Platform(settings=settings, overridden=frozenset(), revision=0, updated_at=None)
    sections: dict[str, dict[str, Any]] = {}
    overridden = set()
    for setting, raw in (row.overrides or {}).items():
        key = _BY_SETTING.get(setting)
        if key is None:
            continue
        try:
            value = key.load(raw)
        except ValidationFailed:
            continue
        section, _, name = setting.partition(".")
        sections.setdefault(section, {})[name] = value
        overridden.add(key.name)
    changed = {section: dataclasses.replace(getattr(settings, section), **items)
               for section, items in sections.items()}
    return Platform(settings=dataclasses.replace(settings, **changed),
                    overridden=frozenset(overridden), revision=row.revision,
                    updated_at=row.updated_at)


def validated_overrides(current: Mapping[str, Any], changes: Mapping[str, Any],
                        settings: Settings) -> dict[str, Any]:
    """The overrides document after `changes` (API name -> JSON value; None removes the
    override, so the key follows the configuration again). Raise ValidationFailed naming the
    key for an unknown key or a value of the wrong kind or out of bounds, and when the
    resulting default inbox TTL exceeds the maximum."""
    document = {k: v for k, v in current.items() if k in _BY_SETTING}
    for name, raw in changes.items():
        key = PLATFORM_KEYS.get(name)
        if key is None:
            raise _invalid(name, "is not a platform setting")
        if raw is None:
            document.pop(key.setting, None)
        else:
            document[key.setting] = key.dump(key.load(raw))
    result = effective(PlatformSettings(overrides=document, revision=0), settings).settings
    if result.defaults.inbox_ttl > result.defaults.inbox_max_ttl:
        raise _invalid("default_inbox_ttl", "must not exceed max_inbox_ttl")
    return document


def lock_platform(session: Session) -> PlatformSettings:
    """The settings row, created if missing, locked FOR UPDATE until the transaction ends.

    Writers of platform-wide state (setup completion, admin changes) serialise on this lock.
    The insert does nothing when the row exists, so concurrent callers cannot collide on it."""
    dialect = session.get_bind().dialect.name
    insert = conflict_insert(dialect)
    session.execute(insert(PlatformSettings).values(id=ROW_ID, updated_at=utcnow())
                    .on_conflict_do_nothing(index_elements=["id"]))
    query = (select(PlatformSettings).where(PlatformSettings.id == ROW_ID).with_for_update()
             .execution_options(populate_existing=True))
    return session.scalars(query).one()


def update_platform(session: Session, settings: Settings, changes: Mapping[str, Any], *,
                    actor_id: Any, origin: Origin) -> Platform:
    """Apply `changes` (see `validated_overrides`) under the row lock, bump the revision and
    audit the change (org-less, before/after of the changed keys). Nothing is written when a
    value is refused or nothing changes. The caller commits."""
    row = lock_platform(session)
    before = effective(row, settings)
    document = validated_overrides(row.overrides or {}, changes, settings)
    if document == (row.overrides or {}):
        return before  # nothing to change: no new revision, nothing to audit
    row.overrides = document
    row.revision += 1
    row.updated_at = utcnow()
    after = effective(row, settings)
    old, new = before.values(), after.values()
    changed = sorted(name for name in changes if old[name] != new[name]
                     or (name in before.overridden) != (name in after.overridden))
    record_audit(session, PLATFORM_UPDATED, actor_id=actor_id, resource_type="platform",
                 resource_id="platform", ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, before={k: old[k] for k in changed},
                 after={k: new[k] for k in changed})
    return after
