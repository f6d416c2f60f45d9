"""API keys through the API for the API-key tests: keys made as a world's user, their headers,
their rows as stored, and the usage flush."""

from __future__ import annotations

import uuid
from typing import Any

from flask.testing import FlaskClient

from models.apikeys.keys import ApiKey, taken_usage, write_usage
from models.db import Database
from models.runtime import Runtime
from tests.factories.tenancy import World

KEYS = "/orgs/{org}/teams/{team}/api-keys"


def make_key(client: FlaskClient, world: World, who: str = "lead", *,
             team: str = "/orgs/{org}/teams/{team}", **body: Any) -> dict[str, Any]:
    """Create a key through the API as `who` (default scopes: team.view); the JSON, raw_key
    included."""
    body.setdefault("name", "ci")
    body.setdefault("scopes", ["team.view"])
    response = client.post(world.path(team + "/api-keys"), json=body,
                           headers=world.headers[who])
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def key_auth(raw_key: str) -> dict[str, str]:
    """The Authorization header of an API key."""
    return {"Authorization": f"Bearer {raw_key}"}


def stored(runtime: Runtime, key_id: str | uuid.UUID) -> ApiKey | None:
    """The key's row as the database holds it now (None when deleted)."""
    with runtime.db.session() as session:
        return session.get(ApiKey, uuid.UUID(str(key_id)))


def flush(runtime: Runtime, db: Database | None = None) -> int:
    """Write the usage counted so far to the rows (through `db`, else the runtime's database)
    as the clock's job does: committed inside the `taken_usage` block."""
    with (db or runtime.db).session() as session, taken_usage(runtime.store) as usages:
        written = write_usage(session, usages)
        session.commit()
    return written
