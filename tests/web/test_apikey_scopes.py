"""Scopes through the real handlers (a permission a mapping table knows but no handler checks
would pass a static test): for every team permission of the database, a
key holding only that scope reaches an endpoint requiring it, and a key holding every other
scope gets 403 `insufficient scope`. Real endpoints where they exist; a test-only blueprint on
the same `require_team` decorator for the rest. Then the endpoints that refuse keys outright,
and the per-key rate-limit bucket."""

from __future__ import annotations

import time

import pytest
from flask.views import MethodView
from sqlalchemy import select

from models.tenancy.rbac import TEAM_PERMISSIONS, Permission
from tests.apikey_helpers import key_auth, make_key
from tests.tenancy import fill_ids
from web import create_app
from web.api import Blueprint
from web.permissions import require_team

TEAM = "/orgs/{org}/teams/{team}"
# One real endpoint per scope that has one: (method, path, body).
REAL = {
    "team.view": ("GET", TEAM, None),
    "team.settings.manage": ("PATCH", TEAM, {"description": "changed by a key"}),
    "team.members.view": ("GET", TEAM + "/members", None),
    "team.members.manage": ("POST", TEAM + "/members",
                            {"user_id": "{user_member}", "role": "member"}),
    "team.members.role": ("PATCH", TEAM + "/members/{user_target}", {"role": "member"}),
    "team.domains.view": ("GET", TEAM + "/domains", None),
    "team.domains.manage": ("POST", TEAM + "/domains",
                            {"domain_id": "{domain}", "access_level": "full"}),
    "team.webhooks.view": ("GET", TEAM + "/webhooks", None),
    "team.webhooks.manage": ("POST", TEAM + "/webhooks",
                             {"url": "https://hooks.example.com/in",
                              "events": ["email.received"]}),
    "team.apikeys.view": ("GET", TEAM + "/api-keys", None),
    "team.apikeys.manage": ("POST", TEAM + "/api-keys",
                            {"name": "made by a key", "scopes": ["team.apikeys.manage"]}),
}
PROBE = "/probe" + TEAM + "/{scope}"


def _probe_app(runtime, scopes):
    """The real app plus one test-only endpoint per scope, guarded by require_team(scope)."""
    app = create_app(runtime=runtime)
    app.config["TESTING"] = True
    blp = Blueprint("scope-probe", __name__, url_prefix="/probe")
    for scope in sorted(scopes):

        class Probe(MethodView):
            @require_team(scope)
            def get(self, team):
                return {"team_id": str(team.team.id)}

        blp.add_url_rule(f"/orgs/<uuid:org_id>/teams/<uuid:team_id>/{scope}",
                         view_func=Probe.as_view(scope.replace(".", "-")))
    app.extensions["flask-smorest"]["apis"][""]["ext_obj"].register_blueprint(blp)
    return app


def _database_team_scopes(runtime):
    with runtime.db.session() as session:
        return set(session.scalars(select(Permission.key).where(Permission.scope == "team")))


@pytest.fixture
def probe(runtime, world):
    return _probe_app(runtime, _database_team_scopes(runtime)).test_client()


def _with_domain(client, world):
    response = client.post(world.path("/orgs/{org}/domains"), headers=world.headers["owner"],
                           json={"domain_name": "scopes.example.com"})
    assert response.status_code == 201, response.get_json()
    world.ids["domain"] = response.get_json()["id"]


def _call(client, world, scope, headers):
    if scope in REAL:
        method, template, body = REAL[scope]
        return client.open(world.path(template), method=method, json=fill_ids(body, world),
                           headers=headers)
    return client.get(world.path(PROBE.replace("{scope}", scope)).replace("/api/v1", ""),
                      headers=headers)


def test_the_database_holds_the_spec_s_16_team_scopes_team_emails_manage_and_release(runtime):
    assert _database_team_scopes(runtime) == set(TEAM_PERMISSIONS)
    assert len(TEAM_PERMISSIONS) == 18


@pytest.mark.parametrize("scope", sorted(TEAM_PERMISSIONS))
def test_a_key_with_only_the_scope_passes_and_one_with_every_other_scope_gets_403(
        runtime, probe, world, scope):
    _with_domain(probe, world)
    everything = _database_team_scopes(runtime)
    # The owner holds every team permission in every team of the org, so only scopes limit.
    only = make_key(probe, world, "owner", scopes=[scope])
    others = make_key(probe, world, "owner", scopes=sorted(everything - {scope}))
    refused = _call(probe, world, scope, key_auth(others["raw_key"]))
    assert refused.status_code == 403, refused.get_json()
    assert refused.get_json() == {"error": "insufficient scope", "code": "forbidden"}
    reached = _call(probe, world, scope, key_auth(only["raw_key"]))
    assert reached.status_code < 300, (scope, reached.status_code, reached.get_json())


@pytest.mark.parametrize("scope", sorted(TEAM_PERMISSIONS))
def test_the_one_declaration_drives_the_scope_check_on_the_test_endpoint_too(probe, world,
                                                                            scope):
    only = make_key(probe, world, "owner", scopes=[scope])
    for other in sorted(set(TEAM_PERMISSIONS) - {scope}):
        response = probe.get(world.path(PROBE.replace("{scope}", other))
                             .replace("/api/v1", ""), headers=key_auth(only["raw_key"]))
        assert response.status_code == 403, other
    response = probe.get(world.path(PROBE.replace("{scope}", scope)).replace("/api/v1", ""),
                         headers=key_auth(only["raw_key"]))
    assert response.get_json() == {"team_id": str(world.ids["team"])}


def test_a_custom_team_permission_is_a_scope_that_works_with_no_code_change(runtime, world):
    with runtime.db.transaction() as session:
        session.add(Permission(key="team.reports.view", scope="team",
                               description="view reports"))
    client = _probe_app(runtime, {"team.reports.view", "team.view"}).test_client()
    only = make_key(client, world, "owner", scopes=["team.reports.view"])
    path = world.path(PROBE.replace("{scope}", "team.reports.view")).replace("/api/v1", "")
    assert client.get(path, headers=key_auth(only["raw_key"])).status_code == 200
    view_only = make_key(client, world, "owner", scopes=["team.view"])
    assert client.get(path, headers=key_auth(view_only["raw_key"])).get_json() == {
        "error": "insufficient scope", "code": "forbidden"}


# --- endpoints that are not for keys ------------------------------------------------------------

REFUSED = [
    ("GET", "/orgs", None), ("POST", "/orgs", {"name": "By key"}),
    ("GET", "/orgs/{org}", None), ("PATCH", "/orgs/{org}", {"name": "x"}),
    ("DELETE", "/orgs/{org}", {}), ("GET", "/orgs/{org}/settings", None),
    ("PUT", "/orgs/{org}/settings", {}), ("GET", "/orgs/{org}/members", None),
    ("GET", "/orgs/{org}/members/me", None),
    ("POST", "/orgs/{org}/members/{user_target}/deactivate", None),
    ("POST", "/orgs/{org}/invites", {"email": "x@example.test", "role": "member"}),
    ("GET", "/orgs/{org}/invites", None), ("GET", "/orgs/{org}/domains", None),
    ("POST", "/orgs/{org}/teams", {"name": "By key"}), ("GET", "/orgs/{org}/teams", None),
    ("GET", "/auth/me", None), ("PATCH", "/auth/me", {"display_name": "Key"}),
    ("PUT", "/auth/me/password", {"current_password": "x", "new_password": "y" * 12}),
    ("DELETE", "/auth/me", {}), ("GET", "/auth/sessions", None), ("DELETE", "/auth/sessions", None),
    ("GET", "/notifications", None), ("GET", "/notifications/preferences", None),
    ("PATCH", "/notifications/preferences", {"email.received": True}),
]


@pytest.mark.parametrize(("method", "template", "body"), REFUSED,
                         ids=[f"{m} {t}" for m, t, _ in REFUSED])
def test_org_level_and_account_endpoints_refuse_keys_with_403(runtime, client, world, method,
                                                              template, body):
    with runtime.db.transaction() as session:
        session.merge(world.users["owner"]).is_system_admin = True
    created = make_key(client, world, "owner", scopes=sorted(TEAM_PERMISSIONS))
    response = client.open(world.path(template), method=method, json=fill_ids(body, world),
                           headers=key_auth(created["raw_key"]))
    assert response.status_code == 403, response.get_json()
    assert response.get_json() == {"error": "API keys cannot be used on this endpoint",
                                   "code": "forbidden"}


# --- rate limiting counts each key in its own bucket ---------------------------------------------

def _limits(response):
    return tuple(int(response.headers[f"X-RateLimit-{name}"])
                 for name in ("Limit", "Remaining", "Reset"))


def test_a_key_is_rate_limited_in_its_own_bucket_with_the_three_headers(make_app, world):
    client = make_app(**{"rate_limits.authenticated": "3/minute"}).test_client()
    created = make_key(client, world)
    other = make_key(client, world)
    headers = key_auth(created["raw_key"])
    seen = []
    for _ in range(3):
        response = client.get(world.path(TEAM), headers=headers)
        assert response.status_code == 200
        limit, remaining, reset = _limits(response)
        assert limit == 3 and time.time() < reset <= time.time() + 61
        seen.append(remaining)
    assert seen == [2, 1, 0]
    refused = client.get(world.path(TEAM), headers=headers)
    assert refused.status_code == 429
    assert refused.get_json() == {"error": "rate limit exceeded", "code": "rate_limited"}
    assert _limits(refused)[:2] == (3, 0)
    assert 1 <= int(refused.headers["Retry-After"]) <= 61
    # Another key of the same creator, and the creator themself, have buckets of their own.
    assert client.get(world.path(TEAM), headers=key_auth(other["raw_key"])).status_code == 200
    mine = client.get(world.path(TEAM), headers=world.headers["lead"])
    assert mine.status_code == 200
