"""POST/PATCH/DELETE /admin/roles: custom roles are rows like the built-in ones, so a change
takes effect on the next request; built-in roles and roles still held are protected; every
write is audited without an org."""

import uuid

from sqlalchemy import select

from models.platform.audit import AuditEntry
from models.tenancy.rbac import RolePermission
from models.tenancy.roles import ROLE_CREATED, ROLE_DELETED, ROLE_UPDATED
from tests.admin_helpers import assert_admin_only

PATH = "/api/v1/admin/roles"
VIEWER = {"scope": "team", "name": "viewer", "label": "Viewer", "description": "reads",
          "rank": 1, "permissions": ["team.members.view", "team.view"]}


def _create(client, world, **body):
    return client.post(PATH, json={**VIEWER, **body}, headers=world.headers["sysadmin"])


def _actions(runtime):
    with runtime.db.session() as session:
        return [(e.action, e.org_id, e.before, e.after) for e in
                session.scalars(select(AuditEntry).where(AuditEntry.action.like("admin.role%"))
                                .order_by(AuditEntry.created_at))]


def test_a_system_admin_creates_a_team_role_listed_with_the_built_in_ones(client, world,
                                                                          runtime):
    response = _create(client, world)
    assert response.status_code == 201, response.get_json()
    role = response.get_json()
    assert {k: role[k] for k in ("scope", "name", "label", "description", "rank", "is_builtin",
                                 "grants_all_teams", "permissions")} == {
        **VIEWER, "is_builtin": False, "grants_all_teams": False}
    [listed] = [r for r in client.get("/api/v1/roles").get_json()["team_roles"]
                if r["id"] == role["id"]]
    assert {**listed, "permissions": sorted(listed["permissions"])} == role
    [(action, org_id, before, after)] = _actions(runtime)
    # The audit keeps the role itself; `value` is only the answer's copy of its name.
    assert (action, org_id, before) == (ROLE_CREATED, None, None)
    assert after == {key: value for key, value in role.items() if key != "value"}


def test_the_reference_systems_value_names_the_role(client, world):
    body = {k: v for k, v in VIEWER.items() if k != "name"}
    response = client.post(PATH, json={**body, "value": "auditor"},
                           headers=world.headers["sysadmin"])
    assert (response.status_code, response.get_json()["name"]) == (201, "auditor")


def test_a_taken_name_is_409_and_bad_input_is_400_and_nothing_is_created(client, world, runtime):
    assert _create(client, world).status_code == 201
    assert _create(client, world).status_code == 409
    assert _create(client, world, name="member").get_json()["code"] == "conflict"
    for body in ({"permissions": ["team.view", "team.nope"]}, {"permissions": ["org.view"]},
                 {"scope": "platform"}, {"name": "Bad Name"}, {"name": "x"}, {"rank": 0},
                 {"rank": 101}, {"grants_all_teams": True}, {"rank": "1"}):
        response = _create(client, world, **{"name": "other", **body})
        assert response.status_code == 400, body
        assert response.get_json()["code"] == "validation_error"
    names = [r["name"] for r in client.get("/api/v1/roles").get_json()["team_roles"]]
    assert sorted(names) == ["lead", "member", "viewer"]


def test_every_role_route_refuses_an_org_owner_and_a_system_admins_api_key(client, runtime,
                                                                           world):
    role_id = _create(client, world).get_json()["id"]
    assert_admin_only(client, runtime, world, "POST", PATH, {**VIEWER, "name": "other"})
    assert_admin_only(client, runtime, world, "PATCH", f"{PATH}/{role_id}", {"rank": 2})
    assert_admin_only(client, runtime, world, "DELETE", f"{PATH}/{role_id}")
    assert len(_actions(runtime)) == 1  # only the creation


def test_a_custom_role_grants_its_permissions_and_a_change_applies_on_the_next_request(
        client, world, runtime):
    role_id = _create(client, world).get_json()["id"]
    member = world.path("/orgs/{org}/teams/{team}/members/{user_target}")
    moved = client.patch(member, json={"role": "viewer"}, headers=world.headers["lead"])
    assert moved.status_code == 200, moved.get_json()
    target = world.headers["target"]
    assert client.get(world.path("/orgs/{org}/teams/{team}"), headers=target).status_code == 200
    hooks = world.path("/orgs/{org}/teams/{team}/webhooks")
    assert client.get(hooks, headers=target).status_code == 403

    changed = client.patch(f"{PATH}/{role_id}", headers=world.headers["sysadmin"], json={
        "permissions": ["team.view", "team.webhooks.view"], "label": "Hook viewer"})
    assert changed.status_code == 200
    assert changed.get_json()["permissions"] == ["team.view", "team.webhooks.view"]
    assert client.get(hooks, headers=target).status_code == 200
    assert client.get(world.path("/orgs/{org}/teams/{team}/members"),
                      headers=target).status_code == 403  # the set was replaced
    [_, (action, org_id, before, after)] = _actions(runtime)
    assert (action, org_id) == (ROLE_UPDATED, None)
    assert (before["permissions"], after["permissions"]) == (
        ["team.members.view", "team.view"], ["team.view", "team.webhooks.view"])
    assert (before["label"], after["label"]) == ("Viewer", "Hook viewer")


def test_a_held_role_cannot_be_deleted_until_nobody_holds_it(client, world, runtime):
    role_id = _create(client, world).get_json()["id"]
    member = world.path("/orgs/{org}/teams/{team}/members/{user_target}")
    client.patch(member, json={"role": "viewer"}, headers=world.headers["lead"])
    refused = client.delete(f"{PATH}/{role_id}", headers=world.headers["sysadmin"])
    assert refused.status_code == 409
    assert refused.get_json()["details"] == {"holders": 1}
    client.patch(member, json={"role": "member"}, headers=world.headers["lead"])
    deleted = client.delete(f"{PATH}/{role_id}", headers=world.headers["sysadmin"])
    assert (deleted.status_code, deleted.get_json()) == (200, {"message": "role deleted"})
    assert client.delete(f"{PATH}/{role_id}", headers=world.headers["sysadmin"]).status_code == 404
    assert _actions(runtime)[-1][0] == ROLE_DELETED


def test_an_org_role_held_by_an_invitation_cannot_be_deleted(client, world):
    role_id = _create(client, world, scope="org", name="auditor",
                      permissions=["org.view", "org.audit.view"]).get_json()["id"]
    invited = client.post(world.path("/orgs/{org}/invites"), headers=world.headers["owner"],
                          json={"email": "new@example.test", "role": "auditor"})
    assert invited.status_code == 201, invited.get_json()
    assert client.delete(f"{PATH}/{role_id}", headers=world.headers["sysadmin"]).status_code == 409


def test_built_in_roles_cannot_be_changed_or_deleted(client, world):
    roles = client.get("/api/v1/roles").get_json()
    owner = next(r for r in roles["org_roles"] if r["name"] == "owner")
    for method, body in (("PATCH", {"permissions": []}), ("DELETE", None)):
        response = client.open(f"{PATH}/{owner['id']}", method=method, json=body,
                               headers=world.headers["sysadmin"])
        assert response.status_code == 409
    assert client.get("/api/v1/roles").get_json() == roles


def test_a_deleted_role_leaves_no_grants_behind(client, world, runtime):
    role_id = _create(client, world).get_json()["id"]
    client.delete(f"{PATH}/{role_id}", headers=world.headers["sysadmin"])
    with runtime.db.session() as session:
        assert session.scalars(select(RolePermission).where(
            RolePermission.role_id == uuid.UUID(role_id))).all() == []
