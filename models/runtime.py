"""The per-process services every face needs, built once from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from burnbox.kv import KeyValueStore, make_store
from burnbox.settings import Settings
from burnbox.signing_secret import resolve_jwt_secret
from burnbox.storage import ObjectStorage, make_storage
from models.db import Database


@dataclass
class Runtime:
    """Settings, database, key-value store and object storage of one process."""

    settings: Settings
    db: Database
    store: KeyValueStore
    storage: ObjectStorage

    @classmethod
    def from_settings(cls, settings: Settings) -> Runtime:
        """Build every adapter the settings choose; nothing connects until first use. An empty
        `auth.jwt_secret` is resolved first (burnbox.signing_secret; SettingsError when it
        cannot be)."""
        settings = resolve_jwt_secret(settings)
        return cls(settings=settings, db=Database(settings), store=make_store(settings),
                   storage=make_storage(settings))
