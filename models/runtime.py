"""The per-process services every face needs, built once from the settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from burnbox.kv import KeyValueStore, make_store
from burnbox.settings import Settings
from burnbox.signing_secret import resolve_jwt_secret
from burnbox.storage import ObjectStorage
from models.caching import new_revisions
from models.db import Database
from models.system_config import follow_storage


@dataclass
class Runtime:
    """Settings, database, key-value store and object storage of one process."""

    settings: Settings
    db: Database
    store: KeyValueStore
    storage: ObjectStorage
    # Per-process caches of the contexts above core, each under its own key (the roles cache,
    # models.tenancy.rbac.GrantsCache; the callers, models.identity.callers): core holds them
    # without knowing them.
    caches: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Every process that writes moves the caches' revisions, whichever face it is. A
        # runtime made from another one (tests swapping an adapter) keeps the first's store.
        if self.db.handoffs.revisions_moved is None:
            self.db.handoffs.revisions_moved = partial(new_revisions, self.store)

    @classmethod
    def from_settings(cls, settings: Settings) -> Runtime:
        """Build every adapter the settings choose; nothing connects until first use (the
        storage follows the configuration an administrator stores, models.system_config). An
        empty `auth.jwt_secret` is resolved first (burnbox.signing_secret; SettingsError when
        it cannot be)."""
        settings = resolve_jwt_secret(settings)
        db = Database(settings)
        return cls(settings=settings, db=db, store=make_store(settings),
                   storage=follow_storage(db, settings))
