"""The permission check and tenant isolation, through the real handlers.

The grants expected below are design.md's, written out independently of the code: every endpoint
of the tenancy API is called by a user of every role (and by the owner of another org), and the
answer must be exactly what the role grants: 404 outside one's org, 403 for a missing permission
inside it, and anything else (success, or a business rule's 409) when the permission is held.
Permissions whose endpoints do not exist yet go through a test-only blueprint built on the same
decorators: no static mapping test stands in for a real check, since a mapping can name a
permission that no handler ever asks for.
"""

from __future__ import annotations

import uuid

import pytest
from flask import Flask
from flask.views import MethodView
from sqlalchemy import select

from models.identity.users import User
from models.tenancy.rbac import (
    ORG_PERMISSIONS,
    TEAM_PERMISSIONS,
    Permission,
    Role,
    RolePermission,
    invalidate_grants,
)
from models.tenancy.teams import TeamAccess
from tests.factories.tenancy import CALLERS, make_world
from tests.tenancy import TEAM_PATH, fill_ids, route_id
from web import create_app
from web.api import Blueprint
from web.permissions import require_org, require_team

ORG_KEYS = frozenset(ORG_PERMISSIONS)
TEAM_KEYS = frozenset(TEAM_PERMISSIONS)
# design.md, "Roles": the built-in grants.
GRANTS = {
    ("org", "owner"): ORG_KEYS,
    ("org", "admin"): ORG_KEYS - {"org.delete"},
    ("org", "member"): frozenset({"org.view", "org.settings.view", "org.members.view",
                                  "org.domains.view", "org.audit.view", "org.analytics.view"}),
    ("team", "lead"): TEAM_KEYS,
    ("team", "member"): frozenset({"team.view", "team.members.view", "team.domains.view",
                                   "team.webhooks.view", "team.apikeys.view",
                                   "team.inboxes.view", "team.emails.view",
                                   "team.analytics.view", "team.inboxes.create",
                                   "team.inboxes.manage", "team.emails.manage"}),
}
# What each caller holds in org A and team T (owners and admins reach every team).
HOLDS = {
    "owner": GRANTS["org", "owner"] | TEAM_KEYS,
    "admin": GRANTS["org", "admin"] | TEAM_KEYS,
    "member": GRANTS["org", "member"],
    "lead": GRANTS["org", "member"] | GRANTS["team", "lead"],
    "team_member": GRANTS["org", "member"] | GRANTS["team", "member"],
}
SYSTEM_ADMIN = "system admin"
TEAM = TEAM_PATH

# (method, path, required permission, body): every endpoint of this part under an org.
ROUTES = [
    ("GET", "/orgs/{org}", "org.view", None),
    ("PATCH", "/orgs/{org}", "org.settings.manage", {"name": "Renamed"}),
    ("DELETE", "/orgs/{org}", "org.delete", {}),
    ("GET", "/orgs/{org}/settings", "org.settings.view", None),
    ("PATCH", "/orgs/{org}/settings", "org.settings.manage", {"max_teams": 5}),
    ("PUT", "/orgs/{org}/settings", "org.settings.manage", {"inbox_default_ttl": "30m"}),
    # By id only a user the org knows may be added: a member's id reaches the 409 past the gate.
    ("POST", "/orgs/{org}/members", "org.members.add",
     {"user_id": "{user_target}", "role": "member"}),
    ("POST", "/orgs/{org}/members/add", "org.members.add",
     {"email": "newcomer@example.test", "role": "member"}),
    ("GET", "/orgs/{org}/members", "org.members.view", None),
    ("GET", "/orgs/{org}/members/me", "org.view", None),
    ("GET", "/orgs/{org}/members/search?q=example", "org.members.view", None),
    ("PATCH", "/orgs/{org}/members/{user_target}", "org.members.role", {"role": "member"}),
    ("POST", "/orgs/{org}/members/{user_target}/deactivate", "org.members.remove", None),
    ("POST", "/orgs/{org}/invites", "org.members.invite",
     {"email": "someone@example.test", "role": "member"}),
    ("POST", "/orgs/{org}/invites/bulk", "org.members.invite",
     {"emails": ["one@example.test", "two@example.test"], "role": "member"}),
    ("GET", "/orgs/{org}/invites", "org.members.invite", None),
    ("DELETE", "/orgs/{org}/invites/{invite}", "org.members.invite", None),
    ("POST", "/orgs/{org}/teams", "org.teams.create", {"name": "New team"}),
    ("GET", "/orgs/{org}/teams", "org.view", None),
    ("GET", TEAM, "team.view", None),
    ("PATCH", TEAM, "team.settings.manage", {"description": "changed"}),
    ("DELETE", TEAM, "org.teams.delete", None),
    ("POST", TEAM + "/archive", "org.teams.manage", None),
    ("POST", TEAM + "/restore", "org.teams.manage", None),
    ("GET", TEAM + "/impact", "team.view", None),
    ("POST", TEAM + "/leave", "team.view", None),
    ("POST", TEAM + "/transfer", SYSTEM_ADMIN, {"target_org_id": "{other_org}"}),
    ("POST", TEAM + "/members", "team.members.manage",
     {"user_id": "{user_member}", "role": "member"}),
    ("GET", TEAM + "/members", "team.members.view", None),
    ("POST", TEAM + "/members/bulk-add", "team.members.manage",
     {"members": [{"user_id": "{user_member}", "role": "member"}]}),
    ("POST", TEAM + "/members/bulk-remove", "team.members.manage",
     {"user_ids": ["{user_target}"]}),
    ("PATCH", TEAM + "/members/{user_target}", "team.members.role", {"role": "member"}),
    ("DELETE", TEAM + "/members/{user_target}", "team.members.manage", None),
]


def _call(client, world, method, template, body, who):
    return client.open(world.path(template), method=method, json=fill_ids(body, world),
                       headers=world.headers[who])


@pytest.mark.parametrize("route", ROUTES, ids=route_id)
def test_every_caller_gets_exactly_what_their_roles_grant(runtime, client, route):
    method, template, permission, body = route
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    anonymous = client.open(world.path(template), method=method, json=fill_ids(body, world))
    assert anonymous.status_code == 401
    assert anonymous.get_json()["code"] == "unauthenticated"
    changed = False
    for who in CALLERS:
        if changed:  # an allowed call changed the world: the next caller gets a fresh one
            with runtime.db.transaction() as session:
                world = make_world(session, runtime.settings)
            changed = False
        response = _call(client, world, method, template, body, who)
        changed = method != "GET" and response.status_code < 400
        answer = (who, response.status_code, response.get_json(silent=True))
        if who == "outsider":
            assert response.status_code == 404, answer  # another org's things do not exist
            assert response.get_json()["code"] == "not_found"
        elif permission == SYSTEM_ADMIN or permission not in HOLDS[who]:
            assert response.status_code == 403, answer
            assert response.get_json()["code"] == "forbidden"
        else:
            assert response.status_code < 500, answer
            assert response.status_code not in (401, 403, 404), answer


def _documented_path(template):
    for placeholder, parameter in (("{org}", "{org_id}"), ("{team}", "{team_id}"),
                                   ("{invite}", "{invite_id}"), ("{user_target}", "{user_id}")):
        template = template.replace(placeholder, parameter)
    return "/api/v1" + template.split("?")[0]


def test_every_endpoint_documents_the_permission_it_requires(client):
    document = client.get("/api/v1/docs/openapi.json").get_json()
    for method, template, permission, _ in ROUTES:
        operation = document["paths"][_documented_path(template)][method.lower()]
        if permission == SYSTEM_ADMIN:
            assert operation["x-system-admin-only"] is True
            assert "x-required-permission" not in operation
        else:
            assert operation["x-required-permission"] == permission, (method, template)
        assert {"401", "403", "404"} <= set(operation["responses"]), (method, template)


CROSSED = [
    ("GET", "/orgs/{org}/teams/{other_team}", None, "a team of another org under one's own org"),
    ("DELETE", "/orgs/{org}/teams/{other_team}", None, "deleting another org's team"),
    ("GET", "/orgs/{org}/teams/{other_team}/members", None, "another org's team members"),
    ("POST", "/orgs/{org}/teams/{other_team}/transfer", {"target_org_id": "{org}"},
     "moving another org's team"),
    ("DELETE", "/orgs/{org}/invites/{other_invite}", None, "revoking another org's invite"),
    ("PATCH", "/orgs/{org}/members/{user_outsider}", {"role": "member"},
     "a user who is not a member"),
    ("POST", "/orgs/{org}/members/{user_outsider}/deactivate", None, "deactivating a non-member"),
    ("PATCH", "/orgs/{org}/teams/{team}/members/{user_member}", {"role": "member"},
     "an org member not in the team"),
    ("DELETE", "/orgs/{org}/teams/{team}/members/{user_outsider}", None,
     "a user of another org"),
]


@pytest.mark.parametrize(("method", "template", "body", "what"), CROSSED,
                         ids=[crossed[3] for crossed in CROSSED])
def test_ids_that_do_not_belong_to_the_path_are_not_found_even_for_an_owner(
        client, world, method, template, body, what):
    who = "sysadmin" if template.endswith("/transfer") else "owner"
    response = _call(client, world, method, template, body, who)
    assert response.status_code == 404, what


def test_an_outsider_cannot_reach_a_team_of_org_a_through_their_own_org(client, world):
    response = client.get(world.path("/orgs/{other_org}/teams/{team}"),
                          headers=world.headers["outsider"])
    assert response.status_code == 404


@pytest.mark.parametrize(("method", "path", "name"), [
    ("GET", "/orgs/not-a-uuid", "org_id"), ("GET", "/orgs/{org}/teams/42", "team_id"),
    ("POST", "/orgs/{org}/members/me%20too/deactivate", "user_id"),
    ("DELETE", "/orgs/{org}/invites/xyz", "invite_id")])
def test_malformed_ids_in_paths_are_400_naming_the_parameter(client, world, method, path, name):
    response = client.open(world.path(path), method=method, headers=world.headers["owner"])
    assert response.status_code == 400
    assert response.get_json() == {"error": f"validation failed: {name}",
                                   "code": "validation_error",
                                   "details": {name: ["Not a valid UUID."]}}


def test_unknown_org_and_team_ids_are_404_for_everyone(client, world):
    unknown = uuid.uuid4()
    assert client.get(f"/api/v1/orgs/{unknown}", headers=world.headers["sysadmin"]
                      ).status_code == 404
    response = client.get(world.path("/orgs/{org}/teams/") + str(unknown),
                          headers=world.headers["owner"])
    assert response.status_code == 404


# --- every permission key through the real decorators ------------------------------------------

def _probe_app(runtime) -> Flask:
    """The real app plus a test-only blueprint: one endpoint per permission key, guarded by
    `require_org` (org keys) or `require_team` (every key, since team paths check both)."""
    app = create_app(runtime=runtime)
    app.config["TESTING"] = True
    blp = Blueprint("permission-probe", __name__, url_prefix="/probe")
    for key in sorted(ORG_KEYS | TEAM_KEYS):
        if key in ORG_KEYS:
            blp.add_url_rule(f"/orgs/<uuid:org_id>/{key}",
                             view_func=_probe(require_org(key), f"org-{key}".replace(".", "-")))
        blp.add_url_rule(f"/orgs/<uuid:org_id>/teams/<uuid:team_id>/{key}",
                         view_func=_probe(require_team(key), f"team-{key}".replace(".", "-")))
    app.extensions["flask-smorest"]["apis"][""]["ext_obj"].register_blueprint(blp)
    return app


def _probe(decorator, name):
    class Probe(MethodView):
        @decorator
        def get(self, **access):
            granted = next(iter(access.values()))
            team = granted.team.id if isinstance(granted, TeamAccess) else None
            return {"ok": True, "team_id": str(team) if team else None}

    return Probe.as_view(name)


@pytest.fixture
def probe(runtime, world):
    return _probe_app(runtime).test_client()


def _all_keys_in_the_database(runtime):
    with runtime.db.session() as session:
        return set(session.scalars(select(Permission.key)))


def test_the_database_holds_exactly_the_35_permission_keys(runtime):
    assert _all_keys_in_the_database(runtime) == ORG_KEYS | TEAM_KEYS
    assert len(ORG_KEYS | TEAM_KEYS) == 35


def test_every_permission_key_is_granted_or_denied_per_role_by_the_real_check(probe, world):
    for who in CALLERS:
        for key in sorted(ORG_KEYS | TEAM_KEYS):
            paths = ["/orgs/{org}/teams/{team}/" + key]
            if key in ORG_KEYS:
                paths.append("/orgs/{org}/" + key)
            for template in paths:
                response = probe.get(world.path(template).replace("/api/v1", "/probe"),
                                     headers=world.headers[who])
                expected = 404 if who == "outsider" else 200 if key in HOLDS[who] else 403
                assert response.status_code == expected, (who, key, template)


def test_a_team_of_another_org_fails_every_probe_with_404(probe, world):
    for key in sorted(TEAM_KEYS):
        response = probe.get(world.path("/orgs/{org}/teams/{other_team}/" + key)
                             .replace("/api/v1", "/probe"), headers=world.headers["owner"])
        assert response.status_code == 404, key


# --- roles live in the database -----------------------------------------------------------------

def _add_role(runtime, scope, name, rank, permissions, *, all_teams=False):
    with runtime.db.transaction() as session:
        role = Role(id=uuid.uuid4(), scope=scope, name=name, description=name, rank=rank,
                    is_builtin=False, grants_all_teams=all_teams)
        session.add(role)
        session.flush()
        for key in permissions:
            session.add(RolePermission(role_id=role.id, permission_key=key))
        invalidate_grants(session, runtime.store)


def _give_role(client, world, who, role):
    """The owner makes `who` hold org role `role` (through the API)."""
    response = client.patch(world.path("/orgs/{org}/members/") + str(world.ids[f"user_{who}"]),
                            json={"role": role}, headers=world.headers["owner"])
    assert response.status_code == 200, response.get_json()


def test_a_custom_org_role_grants_what_its_rows_say_with_no_code_change(runtime, client, world):
    _add_role(runtime, "org", "auditor", 15, ["org.view", "org.members.view",
                                              "org.settings.manage"])
    _give_role(client, world, "member", "auditor")
    headers = world.headers["member"]
    assert client.get(world.path("/orgs/{org}/members"), headers=headers).status_code == 200
    assert client.patch(world.path("/orgs/{org}/settings"), json={"max_teams": 3},
                        headers=headers).status_code == 200
    assert client.get(world.path("/orgs/{org}/settings"), headers=headers).status_code == 403
    assert client.get(world.path(TEAM), headers=headers).status_code == 403


def test_a_custom_org_role_that_grants_all_teams_reaches_every_team(runtime, client, world):
    _add_role(runtime, "org", "team-wrangler", 15, ["org.view"], all_teams=True)
    _give_role(client, world, "member", "team-wrangler")
    response = client.get(world.path(TEAM + "/members"), headers=world.headers["member"])
    assert response.status_code == 200


def test_a_grant_removed_and_invalidated_stops_working_at_the_next_request(runtime, client,
                                                                          world):
    headers = world.headers["team_member"]
    assert client.get(world.path(TEAM + "/members"), headers=headers).status_code == 200
    with runtime.db.transaction() as session:
        role_id = session.scalar(select(Role.id).where(Role.scope == "team",
                                                       Role.name == "member"))
        session.execute(RolePermission.__table__.delete().where(
            RolePermission.role_id == role_id,
            RolePermission.permission_key == "team.members.view"))
        invalidate_grants(session, runtime.store)
    assert client.get(world.path(TEAM + "/members"), headers=headers).status_code == 403


def test_a_custom_team_role_grants_its_permissions_in_the_team(runtime, client, world):
    _add_role(runtime, "team", "roster-keeper", 15, ["team.view", "team.members.view",
                                                     "team.members.manage"])
    response = client.patch(world.path(TEAM + "/members/") + str(world.ids["user_team_member"]),
                            json={"role": "roster-keeper"}, headers=world.headers["lead"])
    assert response.status_code == 200, response.get_json()
    headers = world.headers["team_member"]
    added = client.post(world.path(TEAM + "/members"), headers=headers,
                        json={"user_id": str(world.ids["user_member"]), "role": "member"})
    assert added.status_code == 201, added.get_json()
    assert client.patch(world.path(TEAM), json={"description": "x"},
                        headers=headers).status_code == 403


def _set_system_admin(runtime, user_id, value):
    with runtime.db.transaction() as session:
        session.get(User, user_id).is_system_admin = value


def test_system_admin_rights_are_read_from_the_database_on_every_request(runtime, client,
                                                                         world):
    _set_system_admin(runtime, world.ids["user_admin"], True)
    moved = client.post(world.path(TEAM + "/transfer"), headers=world.headers["admin"],
                        json={"target_org_id": str(world.ids["other_org"])})
    assert moved.status_code == 200, moved.get_json()
    _set_system_admin(runtime, world.ids["user_admin"], False)
    back = client.post(world.path("/orgs/{other_org}/teams/{team}/transfer"),
                       json={"target_org_id": str(world.ids["org"])},
                       headers=world.headers["admin"])
    assert back.status_code == 404  # not a member of the other org, and no longer an admin
