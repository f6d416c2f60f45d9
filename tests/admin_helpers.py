"""Helpers of the /admin tests: a system administrator's API key, and the refusals every admin
route gives to an org owner and to such a key."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from models.runtime import Runtime
from tests.apikey_helpers import key_auth, make_key
from tests.factories.tenancy import World


def sysadmin_key(client: FlaskClient, runtime: Runtime, world: World) -> dict[str, str]:
    """The Authorization header of an API key whose creator (the world's team lead) is made a
    system administrator: a key never acts as one."""
    with runtime.db.transaction() as session:  # committed: a bare flush is rolled back
        session.merge(world.users["lead"]).is_system_admin = True
    return key_auth(make_key(client, world, "lead")["raw_key"])


def assert_admin_only(client: FlaskClient, runtime: Runtime, world: World, method: str,
                      path: str, body: Any = None) -> None:
    """An org owner and a system administrator's API key get 403 on `path`; no credentials
    get 401."""
    key = sysadmin_key(client, runtime, world)
    for headers, status in ((world.headers["owner"], 403), (key, 403), ({}, 401)):
        response = client.open(path, method=method, json=body, headers=headers)
        assert response.status_code == status, (path, headers, response.get_json())
        assert response.get_json()["code"] == ("forbidden" if status == 403
                                               else "unauthenticated")
