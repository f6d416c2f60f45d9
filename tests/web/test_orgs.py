"""Orgs, org settings and the role catalogue through the API."""

import json
import re
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from models.platform.audit import AuditEntry
from models.tenancy.orgs import Org
from models.tenancy.rbac import ORG_PERMISSIONS, TEAM_PERMISSIONS, Permission, Role, RolePermission
from models.tenancy.teams import Team
from tests.factories.identity import auth_headers, make_password_user
from tests.factories.tenancy import make_world
from tests.identity import PASSWORD

ORG_FIELDS = {"id", "name", "slug", "settings", "created_at", "updated_at"}


def _last_audit(runtime, action):
    with runtime.db.session() as session:
        return session.scalars(select(AuditEntry).where(AuditEntry.action == action)
                               .order_by(AuditEntry.created_at.desc())).first()


def test_creating_an_org_answers_201_with_the_org_and_makes_the_creator_its_owner(
        runtime, client, world):
    headers = world.headers["stranger"]
    response = client.post("/api/v1/orgs", json={"name": "  Shiny New Org "}, headers=headers)
    assert response.status_code == 201
    org = response.get_json()
    assert set(org) == ORG_FIELDS
    assert (org["name"], org["slug"], org["settings"]) == ("Shiny New Org", "shiny-new-org", {})
    assert org["created_at"].endswith("Z")
    me = client.get(f"/api/v1/orgs/{org['id']}/members/me", headers=headers).get_json()
    assert me["role"] == "owner"
    assert "org.delete" in me["permissions"]
    entry = _last_audit(runtime, "org.create")
    assert (entry.actor_id, str(entry.org_id)) == (world.ids["user_stranger"], org["id"])
    assert entry.ip == "127.0.0.1"


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": "x" * 201}, {"name": 5},
                                  {"name": "ok", "extra": 1}])
def test_an_org_needs_a_name_of_1_to_200_characters(client, world, body):
    response = client.post("/api/v1/orgs", json=body, headers=world.headers["stranger"])
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"


def test_the_org_list_shows_only_the_callers_orgs_in_the_pagination_envelope(client, world):
    headers = world.headers["member"]
    for name in ("Zeta", "Alpha"):
        client.post("/api/v1/orgs", json={"name": name}, headers=headers)
    body = client.get("/api/v1/orgs?per_page=2", headers=headers).get_json()
    assert (body["total"], body["page"], body["per_page"], body["total_pages"]) == (3, 1, 2, 2)
    assert [org["name"] for org in body["data"]] == ["Alpha", "Org A"]
    rest = client.get("/api/v1/orgs?page=2&per_page=2", headers=headers).get_json()
    assert [org["name"] for org in rest["data"]] == ["Zeta"]
    stranger = client.get("/api/v1/orgs", headers=world.headers["stranger"]).get_json()
    assert stranger["total"] == 0


def test_renaming_keeps_the_slug_and_is_audited_with_before_and_after(runtime, client, world):
    response = client.patch(world.path("/orgs/{org}"), json={"name": "Org A Prime"},
                            headers=world.headers["admin"])
    assert response.status_code == 200
    assert (response.get_json()["name"], response.get_json()["slug"]) == ("Org A Prime", "org-a")
    entry = _last_audit(runtime, "org.update")
    assert (entry.before, entry.after) == ({"name": "Org A"}, {"name": "Org A Prime"})


def test_an_sso_only_owner_deletes_the_org_confirmed_by_their_session(runtime, client, world):
    response = client.delete(world.path("/orgs/{org}"), json={}, headers=world.headers["owner"])
    assert (response.status_code, response.get_json()) == (200, {"message": "Org deleted"})
    with runtime.db.session() as session:
        assert session.get(Org, world.ids["org"]) is None
        assert session.get(Team, world.ids["team"]) is None  # everything in it went too
    assert client.get(world.path("/orgs/{org}"), headers=world.headers["owner"]
                      ).status_code == 404
    entry = _last_audit(runtime, "org.delete")
    assert entry.before["name"] == "Org A"


def _password_owner(runtime, client):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings, email="pw-owner@example.test")
        headers = auth_headers(session, runtime.settings, user)
    org = client.post("/api/v1/orgs", json={"name": "Pw Org"}, headers=headers).get_json()
    return headers, f"/api/v1/orgs/{org['id']}"


def test_an_owner_with_a_password_must_confirm_deletion_with_it(runtime, client):
    headers, path = _password_owner(runtime, client)
    missing = client.delete(path, json={}, headers=headers)
    assert missing.status_code == 400
    assert "password" in missing.get_json()["details"]
    wrong = client.delete(path, json={"password": "not it"}, headers=headers)
    assert wrong.status_code == 403
    assert client.get(path, headers=headers).status_code == 200
    assert client.delete(path, json={"password": PASSWORD}, headers=headers).status_code == 200
    assert client.get(path, headers=headers).status_code == 404


def test_settings_start_inherited_and_show_the_platform_defaults_in_force(client, world):
    body = client.get(world.path("/orgs/{org}/settings"), headers=world.headers["member"]
                      ).get_json()
    assert body == {
        "inbox_default_ttl": None, "inbox_max_ttl": None, "max_domains": None,
        "max_teams": None, "max_inboxes_per_domain": None, "enforce_sso": None,
        "timezone": None, "default_inbox_ttl": None, "max_inbox_ttl": None,
        "effective": {"inbox_default_ttl": "10m0s", "inbox_max_ttl": "24h0m0s",
                      "max_domains": 0, "max_teams": 0, "max_inboxes_per_domain": 0,
                      "enforce_sso": False, "timezone": "UTC",
                      "default_inbox_ttl": "10m0s", "max_inbox_ttl": "24h0m0s"},
    }


def test_the_documented_settings_example_is_what_the_api_answers(client, world):
    page = (Path(__file__).resolve().parents[2] / "docs" / "tenancy.md").read_text()
    example = json.loads(re.search(r"settings` \(`org.settings.view`\).*?```json\n(.*?)```",
                                   page, re.S).group(1))
    path, headers = world.path("/orgs/{org}/settings"), world.headers["owner"]
    client.patch(path, json={"inbox_default_ttl": "30m", "max_teams": 5}, headers=headers)
    assert client.get(path, headers=headers).get_json() == example


def test_patch_merges_settings_and_null_clears_one(runtime, client, world):
    path, headers = world.path("/orgs/{org}/settings"), world.headers["admin"]
    client.patch(path, json={"inbox_max_ttl": "2h", "max_teams": 4}, headers=headers)
    body = client.patch(path, json={"inbox_default_ttl": "30m", "max_teams": None},
                        headers=headers).get_json()
    assert (body["inbox_default_ttl"], body["inbox_max_ttl"], body["max_teams"]) == (
        "30m", "2h", None)
    assert body["effective"]["inbox_default_ttl"] == "30m0s"
    assert body["effective"]["inbox_max_ttl"] == "2h0m0s"
    org = client.get(world.path("/orgs/{org}"), headers=headers).get_json()
    assert org["settings"] == {"inbox_max_ttl": "2h", "inbox_default_ttl": "30m"}
    assert _last_audit(runtime, "org.settings_update").after == org["settings"]


def test_settings_take_and_answer_the_reference_systems_key_names_too(runtime, client, world):
    path, headers = world.path("/orgs/{org}/settings"), world.headers["owner"]
    body = client.patch(path, json={"default_inbox_ttl": "30m", "max_inbox_ttl": "2h",
                                    "max_teams": 4}, headers=headers).get_json()
    assert (body["inbox_default_ttl"], body["inbox_max_ttl"], body["max_teams"]) == (
        "30m", "2h", 4)
    # Answers carry both names, at each level (the reference's clients read theirs).
    assert (body["default_inbox_ttl"], body["max_inbox_ttl"]) == ("30m", "2h")
    assert (body["effective"]["default_inbox_ttl"], body["effective"]["max_inbox_ttl"]) == (
        "30m0s", "2h0m0s")
    read = client.get(path, headers=headers).get_json()
    assert (read["default_inbox_ttl"], read["inbox_default_ttl"]) == ("30m", "30m")
    body = client.put(path, json={"max_inbox_ttl": "3h", "inbox_max_ttl": "3h"},
                      headers=headers).get_json()
    assert (body["inbox_default_ttl"], body["inbox_max_ttl"]) == (None, "3h")
    assert (body["default_inbox_ttl"], body["max_inbox_ttl"]) == (None, "3h")
    both = client.patch(path, json={"default_inbox_ttl": "5m", "inbox_default_ttl": "6m"},
                        headers=headers)
    assert (both.status_code, both.get_json()["code"]) == (400, "validation_error")
    assert "default_inbox_ttl" in both.get_json()["details"]
    bad = client.patch(path, json={"default_inbox_ttl": "soon"}, headers=headers)
    assert (bad.status_code, set(bad.get_json()["details"])) == (400, {"inbox_default_ttl"})
    org = client.get(world.path("/orgs/{org}"), headers=headers).get_json()
    assert org["settings"] == {"inbox_max_ttl": "3h"}


def test_put_replaces_every_setting(client, world):
    path, headers = world.path("/orgs/{org}/settings"), world.headers["owner"]
    client.patch(path, json={"inbox_max_ttl": "2h", "max_teams": 4}, headers=headers)
    body = client.put(path, json={"max_domains": 3}, headers=headers).get_json()
    assert (body["inbox_max_ttl"], body["max_teams"], body["max_domains"]) == (None, None, 3)


@pytest.mark.parametrize(("body", "field"), [
    ({"inbox_default_ttl": "ten minutes"}, "inbox_default_ttl"),
    ({"inbox_default_ttl": "0s"}, "inbox_default_ttl"),
    ({"inbox_max_ttl": "48h"}, "inbox_max_ttl"),  # above the platform's 24h
    ({"inbox_max_ttl": "1h", "inbox_default_ttl": "2h"}, "inbox_default_ttl"),
    ({"max_teams": -1}, "max_teams"),
    ({"max_teams": "3"}, "max_teams"),
    ({"max_teams": True}, "max_teams"),
    ({"unknown_key": 1}, "unknown_key"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"timezone": "../../etc/passwd"}, "timezone"),
    ({"timezone": "europe/paris"}, "timezone"),
    ({"timezone": 1}, "timezone"),
])
def test_invalid_settings_are_400_naming_the_key_and_change_nothing(client, world, body, field):
    path, headers = world.path("/orgs/{org}/settings"), world.headers["owner"]
    response = client.patch(path, json=body, headers=headers)
    assert response.status_code == 400
    assert field in response.get_json()["details"]
    assert client.get(world.path("/orgs/{org}"), headers=headers).get_json()["settings"] == {}


def test_org_limits_cannot_exceed_a_platform_limit(make_app, runtime):
    app = make_app(**{"defaults.max_teams": 5})
    client = app.test_client()
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    path, headers = world.path("/orgs/{org}/settings"), world.headers["owner"]
    assert client.patch(path, json={"max_teams": 9}, headers=headers).status_code == 400
    assert client.patch(path, json={"max_teams": 0}, headers=headers).status_code == 400
    body = client.patch(path, json={"max_teams": 2}, headers=headers).get_json()
    assert body["effective"]["max_teams"] == 2


def test_the_public_role_catalogue_lists_every_role_and_permission(client):
    response = client.get("/api/v1/roles")  # no sign-in needed
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"org_roles", "team_roles", "org_permissions", "team_permissions"}
    assert [role["name"] for role in body["org_roles"]] == ["owner", "admin", "member"]
    assert [role["name"] for role in body["team_roles"]] == ["lead", "member"]
    owner, admin, member = body["org_roles"]
    assert set(owner) == {"id", "name", "value", "label", "scope", "description", "rank",
                          "is_builtin", "grants_all_teams", "permissions"}
    assert all(role["value"] == role["name"] for role in body["org_roles"] + body["team_roles"])
    assert (owner["label"], owner["rank"], owner["scope"]) == ("Owner", 30, "org")
    assert owner["description"] == "full control of the org, its teams and members"
    assert sorted(owner["permissions"]) == sorted(ORG_PERMISSIONS)
    assert "org.delete" not in admin["permissions"]
    assert (admin["grants_all_teams"], member["grants_all_teams"]) == (True, False)
    assert sorted(body["team_roles"][0]["permissions"]) == sorted(TEAM_PERMISSIONS)
    assert all(role["is_builtin"] for role in body["org_roles"] + body["team_roles"])
    assert body["org_permissions"] == [{"key": key, "description": ORG_PERMISSIONS[key]}
                                       for key in sorted(ORG_PERMISSIONS)]
    assert body["team_permissions"] == [{"key": key, "description": TEAM_PERMISSIONS[key]}
                                        for key in sorted(TEAM_PERMISSIONS)]


def test_a_custom_role_is_in_the_catalogue_at_once(runtime, client):
    with runtime.db.transaction() as session:
        session.add(Permission(key="team.reports.view", scope="team",
                               description="view reports"))
        role = Role(id=uuid.uuid4(), scope="team", name="report_reader",
                    description="reads the reports", rank=5, is_builtin=False,
                    grants_all_teams=False)
        session.add(role)
        session.flush()
        session.add(RolePermission(role_id=role.id, permission_key="team.reports.view"))
    body = client.get("/api/v1/roles").get_json()
    assert body["team_roles"][-1] == {
        "id": str(role.id), "name": "report_reader", "value": "report_reader",
        "label": "Report reader", "scope": "team",
        "description": "reads the reports", "rank": 5, "is_builtin": False,
        "grants_all_teams": False, "permissions": ["team.reports.view"]}
    assert {"key": "team.reports.view", "description": "view reports"} in body[
        "team_permissions"]
