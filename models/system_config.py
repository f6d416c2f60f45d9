"""The mailer and storage configuration an administrator sets at run time
(GET/PUT /admin/config/mailer and /admin/config/storage): the stored groups and how every
process reads them. The change itself is models.admin.runtime_config.update_config.

One `system_configs` row per group (`mailer`, `storage`) holds the whole group as a JSON object
by settings field name, its secret field sealed with burnbox.secretbox. The settings (`mailer.*`,
`storage.*` from the file or environment) are the floor: without a row they apply unchanged;
with one, the stored fields replace theirs. Every process reads the row where it builds the
adapter (the `send_mail` actor per message; the storage at most every
`storage.config_refresh`, through burnbox.storage.FollowingStorage), so a change needs no restart.

A secret is never shown: views say `has_password` / `has_secret_key`. A PUT without a secret,
or with an empty one, keeps the stored one (or the configured one). Storing a secret without an
encryption key is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.secretbox import SecretBox
from burnbox.settings import MailerSettings, Settings, StorageSettings
from burnbox.storage import FollowingStorage, ObjectStorage, make_storage
from burnbox.timeutil import utcnow
from models.db import Base, Database


class SystemConfig(Base):
    """One configuration group (`key`) as a JSON object."""

    __tablename__ = "system_configs"

    key: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[dict[str, Any]]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


@dataclass(frozen=True)
class Group:
    """A configuration group: its row key, its settings section, the fields an administrator
    may set (settings field names), the secret one, and its audit action."""

    key: str
    section: str
    fields: tuple[str, ...]
    secret: str
    audit_action: str


MAILER = Group("mailer", "mailer", ("host", "port", "username", "password", "starttls",
                                    "from_address"), "password", "admin.mailer_config_updated")
STORAGE = Group("storage", "storage", ("backend", "path", "s3_endpoint_url", "s3_bucket",
                                       "s3_region", "s3_access_key", "s3_secret_key",
                                       "s3_prefix", "s3_addressing_style"),
                "s3_secret_key", "admin.storage_config_updated")


def stored_row(session: Session, group: Group) -> SystemConfig | None:
    return session.get(SystemConfig, group.key)


def effective_group(settings: Settings, group: Group, stored: Mapping[str, Any] | None,
               box: SecretBox) -> Any:
    """The group's settings section with the stored fields (secret opened) over it."""
    section = getattr(settings, group.section)
    if not stored:
        return section
    values = {name: stored[name] for name in group.fields if name in stored}
    if values.get(group.secret):
        values[group.secret] = box.open(values[group.secret])
    else:
        values.pop(group.secret, None)
    return dataclasses.replace(section, **values)


def stored_group(session: Session, group: Group) -> dict[str, Any] | None:
    """The stored object of `group` (secret still sealed), or None when never stored."""
    row = stored_row(session, group)
    return None if row is None else dict(row.value)


def mailer_config(session: Session, settings: Settings) -> MailerSettings:
    """The mailer in force. Raise SecretsUnavailable when the stored password cannot be
    opened (its key was removed)."""
    return effective_group(settings, MAILER, stored_group(session, MAILER),
                           SecretBox.from_settings(settings))


def storage_config(session: Session, settings: Settings) -> StorageSettings:
    """The storage in force (SecretsUnavailable as for `mailer_config`)."""
    return effective_group(settings, STORAGE, stored_group(session, STORAGE),
                           SecretBox.from_settings(settings))


def config_view(session: Session, settings: Settings, group: Group) -> dict[str, Any]:
    """The group as GET shows it: every field but the secret, `has_secret` in its place,
    `stored` (whether the database overrides the settings) and `updated_at`. Never opens the
    secret, so it answers even when the key that sealed it is gone."""
    row = stored_row(session, group)
    section = getattr(settings, group.section)
    stored = dict(row.value) if row else {}
    shown = {name: stored.get(name, getattr(section, name)) for name in group.fields
             if name != group.secret}
    return {**shown, "has_secret": bool(stored.get(group.secret) or getattr(section,
                                                                             group.secret)),
            "stored": row is not None, "updated_at": row.updated_at if row else None}


def follow_storage(db: Database, settings: Settings) -> ObjectStorage:
    """The process's object storage: the one in force now, re-read at most every
    `storage.config_refresh` (see burnbox.storage.FollowingStorage)."""

    def build(config: StorageSettings) -> ObjectStorage:
        return make_storage(dataclasses.replace(settings, storage=config))

    def source() -> StorageSettings:
        # Read-only: the storage is used from inside transactions that hold SQLite's write
        # lock (a dispatch deleting objects), and this read must wait neither for that lock
        # nor for a connection of the writers' pool (models.db's read-only sessions).
        with db.session(read_only=True) as session:
            return storage_config(session, settings)

    return FollowingStorage(settings.storage, build, source, settings.storage.config_refresh)

