"""API-key authentication cost: the same team endpoint called with an API key and with a JWT,
in the same run, on the embedded backend.

A key request looks the key up by its hash (one indexed query joined with its creator) and
counts its usage in the key-value store (three cheap operations, flushed to the row by the
clock); a JWT request verifies the signature and reads the session and the user. Both then run
the same permission check and view.
"""

from __future__ import annotations

from bench.harness import Comparison, compare, embedded_runtime
from models.apikeys.keys import create_key, taken_usage, write_usage
from models.identity.sessions import open_session
from models.identity.users import new_user
from models.platform.audit import Origin
from models.tenancy.access import Caller, resolve_org_access
from models.tenancy.org_actions import add_org
from models.tenancy.rbac import load_grants
from models.tenancy.teams import create_team, resolve_team_access
from web import create_app


def run() -> list[Comparison]:
    """Compare GET /orgs/:id/teams/:tid with an API key against the same call with a JWT."""
    runtime = embedded_runtime()
    settings = runtime.settings

    with runtime.db.transaction() as session:
        user = new_user(email="bench@example.test", display_name="Bench", password_hash=None)
        session.add(user)
        session.flush()
        caller = Caller(user_id=user.id, is_system_admin=False, origin=Origin())
        org = add_org(session, caller, "Bench")
        org_access = resolve_org_access(session, load_grants(session), caller, org.id)
        team = create_team(session, settings, org_access, name="Bench team")
        issued = create_key(session, resolve_team_access(session, org_access, team.id),
                            name="bench", scopes=["team.view"])
        jwt = open_session(session, settings, user, Origin()).tokens.access_token
        path = f"/api/v1/orgs/{org.id}/teams/{team.id}"

    client = create_app(runtime=runtime).test_client()
    with_key = {"Authorization": f"Bearer {issued.raw_key}"}
    with_jwt = {"Authorization": f"Bearer {jwt}"}
    for headers in (with_key, with_jwt):
        response = client.get(path, headers=headers)
        assert response.status_code == 200, response.get_json()

    comparison = compare("GET team: API key vs JWT (SQLite, memory store)",
                         lambda: client.get(path, headers=with_key),
                         lambda: client.get(path, headers=with_jwt))
    # The clock's job, once, as a sanity check.
    with runtime.db.session() as session, taken_usage(runtime.store) as usages:
        write_usage(session, usages)
        session.commit()
    return [comparison]
