"""The callers' cache (models.identity.callers) across processes: a web process answers from
its cached credential without reading it, and a change committed by another process (a key
revoked, a session ended, an account disabled or renamed, a team deleted with its keys) is
seen at its very next request.

Each "process" is an app on its own runtime: the same database and key-value store, its own
per-process caches, as two gunicorn workers or two hosts have."""

from __future__ import annotations

import pytest

from tests.apikey_helpers import key_auth, make_key
from tests.statements import recorded

READ_SCOPES = ["team.view"]


@pytest.fixture
def team_key(client, world) -> dict:
    """An API key of the team lead's, as the API created it."""
    return make_key(client, world, "lead", scopes=READ_SCOPES)


def _reads_callers(statements: list[str]) -> list[str]:
    return [s for s in statements if " sessions" in s or " api_keys" in s]


@pytest.mark.postgres  # only with Redis: without it nothing is cached (web.auth)
@pytest.mark.parametrize("credential", ["jwt", "key"])
def test_a_cached_caller_is_not_read_again(client, engine, world, team_key, credential):
    headers = world.headers["lead"] if credential == "jwt" else key_auth(team_key["raw_key"])
    team = world.path("/orgs/{org}/teams/{team}")
    assert client.get(team, headers=headers).status_code == 200  # fills the cache
    with recorded(engine) as statements:
        assert client.get(team, headers=headers).status_code == 200
    assert _reads_callers(statements) == [], statements


def test_a_key_revoked_in_one_process_is_refused_by_another_at_its_next_request(
        client, other_process, world, team_key):
    team = world.path("/orgs/{org}/teams/{team}")
    assert other_process.get(team, headers=key_auth(team_key["raw_key"])).status_code == 200
    revoked = client.delete(world.path("/orgs/{org}/teams/{team}/api-keys/") + team_key["id"],
                            headers=world.headers["lead"])
    assert revoked.status_code == 200, revoked.get_json()
    refused = other_process.get(team, headers=key_auth(team_key["raw_key"]))
    assert refused.status_code == 401
    assert refused.get_json()["error"] == "API key revoked"


def test_a_rotated_key_s_old_secret_is_refused_by_another_process(client, other_process, world,
                                                                  team_key):
    team = world.path("/orgs/{org}/teams/{team}")
    assert other_process.get(team, headers=key_auth(team_key["raw_key"])).status_code == 200
    rotated = client.post(world.path("/orgs/{org}/teams/{team}/api-keys/") + team_key["id"]
                          + "/rotate", headers=world.headers["lead"], json={})
    assert rotated.status_code == 200, rotated.get_json()
    assert other_process.get(team, headers=key_auth(team_key["raw_key"])).status_code == 401
    assert other_process.get(team, headers=key_auth(rotated.get_json()["raw_key"])
                             ).status_code == 200


def test_a_session_ended_in_one_process_is_refused_by_another_at_its_next_request(
        client, other_process, world):
    headers = world.headers["member"]
    assert other_process.get("/api/v1/auth/me", headers=headers).status_code == 200
    assert client.post("/api/v1/auth/logout", json={}, headers=headers).status_code == 200
    refused = other_process.get("/api/v1/auth/me", headers=headers)
    assert refused.status_code == 401
    assert refused.get_json()["error"] == "session revoked"


def test_an_account_disabled_in_one_process_is_refused_by_another_with_its_keys(
        client, other_process, world, team_key):
    team = world.path("/orgs/{org}/teams/{team}")
    assert other_process.get(team, headers=key_auth(team_key["raw_key"])).status_code == 200
    assert other_process.get(team, headers=world.headers["lead"]).status_code == 200
    disabled = client.patch(f"/api/v1/admin/users/{world.users['lead'].id}",
                            json={"disabled": True}, headers=world.headers["sysadmin"])
    assert disabled.status_code == 200, disabled.get_json()
    assert other_process.get(team, headers=key_auth(team_key["raw_key"])).status_code == 401
    assert other_process.get(team, headers=world.headers["lead"]).status_code == 401


def test_a_rename_in_one_process_shows_in_another_and_a_cached_user_can_be_changed(
        client, other_process, world):
    headers = world.headers["member"]
    assert other_process.get("/api/v1/auth/me", headers=headers).status_code == 200
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 200  # cached here too
    renamed = client.patch("/api/v1/auth/me", headers=headers, json={"display_name": "Renamed"})
    assert renamed.status_code == 200, renamed.get_json()
    assert other_process.get("/api/v1/auth/me", headers=headers
                             ).get_json()["display_name"] == "Renamed"
    again = client.patch("/api/v1/auth/me", headers=headers, json={"display_name": "Again"})
    assert again.status_code == 200, again.get_json()
    assert client.get("/api/v1/auth/me", headers=headers).get_json()["display_name"] == "Again"


def test_a_team_deleted_with_its_keys_refuses_them_in_another_process(client, other_process,
                                                                      world, team_key):
    own_team = world.path("/orgs/{org}/teams/{team}")
    assert other_process.get(own_team, headers=key_auth(team_key["raw_key"])).status_code == 200
    deleted = client.delete(own_team, headers=world.headers["owner"])
    assert deleted.status_code == 200, deleted.get_json()
    assert other_process.get(own_team, headers=key_auth(team_key["raw_key"])).status_code == 401
