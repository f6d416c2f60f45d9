"""`GET /api/v1/auth/key`: an API key learns its own team and scopes (the MCP server lists only
the tools they allow); a signed-in user's token is not a key."""

from tests.apikey_helpers import key_auth, make_key


def test_a_key_reads_its_own_team_and_scopes(client, world):
    key = make_key(client, world, scopes=["team.inboxes.view", "team.emails.view"])
    response = client.get("/api/v1/auth/key", headers=key_auth(key["raw_key"]))
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {
        "id": key["id"], "org_id": str(world.ids["org"]), "team_id": str(world.ids["team"]),
        "scopes": ["team.emails.view", "team.inboxes.view"], "expires_at": None}


def test_a_signed_in_user_is_refused_and_no_credentials_are_a_401(client, world):
    refused = client.get("/api/v1/auth/key", headers=world.headers["lead"])
    assert refused.status_code == 403
    assert refused.get_json()["code"] == "forbidden"
    assert client.get("/api/v1/auth/key").status_code == 401
    wrong = client.get("/api/v1/auth/key", headers=key_auth("bb_" + "0" * 64))
    assert wrong.status_code == 401
    assert wrong.get_json()["code"] == "unauthenticated"
