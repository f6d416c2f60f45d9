"""API-key factories: key rows in a chosen state and moved expiries (the API only issues keys,
with their raw value, and sets expiries from now)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.apikeys.keys import ApiKey
from tests.factories.tenancy import OwnedTeam


def make_api_key(session: Session, team: OwnedTeam, **overrides: Any) -> ApiKey:
    """A key of the team created by its owner, as create_key leaves it (scope team.view, no
    expiry, no allowlist; its raw value is unknown), with any column in `overrides`.
    Flushed."""
    now = utcnow()
    values = {"id": uuid.uuid4(), "team_id": team.team_id, "name": "k", "prefix": "bb_00000000",
              "key_hash": uuid.uuid4().hex + uuid.uuid4().hex, "scopes": ["team.view"],
              "allowed_ips": [], "expires_at": None, "is_active": True, "request_count": 0,
              "last_used_at": None, "last_used_ip": None, "created_by": team.owner.id,
              "revoked_at": None, "revoked_by": None, "created_at": now, "updated_at": now,
              **overrides}
    key = ApiKey(**values)
    session.add(key)
    session.flush()
    return key


def set_expiry(session: Session, key_id: str | uuid.UUID, moment: datetime | None) -> None:
    """Move a key's expires_at to `moment`. Flushed."""
    key = session.get(ApiKey, uuid.UUID(str(key_id)))
    assert key is not None
    key.expires_at = moment
    session.flush()
