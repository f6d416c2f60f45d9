"""/admin/sso/providers/:pid/domain-mappings: system administrators only, a mapping reached
only through its own provider, the team inside the mapping's org, exact lower-case domains,
twins refused, every change audited as critical, mappings gone with their provider."""

import pytest
from sqlalchemy import select

from models.platform.audit import AuditEntry
from models.sso.mappings import SsoDomainMapping
from tests.admin_helpers import assert_admin_only

PROVIDERS = "/api/v1/admin/sso/providers"
MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def admin(world):
    return world.headers["sysadmin"]


def _provider(client, admin, name="corp"):
    response = client.post(PROVIDERS, headers=admin, json={
        "name": name, "client_id": "burnbox", "issuer_url": "https://id.example.com"})
    assert response.status_code == 201, response.get_json()
    return f"{PROVIDERS}/{response.get_json()['id']}/domain-mappings"


def _count(runtime):
    with runtime.db.session() as session:
        return len(list(session.scalars(select(SsoDomainMapping))))


def test_every_mapping_route_refuses_an_org_owner_and_a_system_admins_api_key(
        client, runtime, world, admin):
    mappings = _provider(client, admin)
    one = client.post(mappings, json={"domain": "corp.example", "org_id": str(world.ids["org"])},
                      headers=admin).get_json()["id"]
    for method, path, body in (
            ("GET", mappings, None),
            ("POST", mappings, {"domain": "b.example", "org_id": str(world.ids["org"])}),
            ("PUT", f"{mappings}/{one}", {"org_role": "admin"}),
            ("DELETE", f"{mappings}/{one}", None)):
        assert_admin_only(client, runtime, world, method, path, body)
    [shown] = client.get(mappings, headers=admin).get_json()
    assert (shown["org_role"], _count(runtime)) == ("member", 1)


def test_a_mapping_places_a_domain_in_an_org_and_a_team_of_it(client, runtime, world, admin):
    mappings = _provider(client, admin)
    created = client.post(mappings, headers=admin, json={
        "domain": "Corp.Example.", "org_id": str(world.ids["org"]), "org_role": "admin",
        "team_id": str(world.ids["team"])})
    assert created.status_code == 201, created.get_json()
    shown = created.get_json()
    assert (shown["domain"], shown["org_name"], shown["org_role"], shown["team_name"],
            shown["team_role"]) == ("corp.example", "Org A", "admin", "Team T", "member")
    changed = client.put(f"{mappings}/{shown['id']}", json={"team_id": None},
                         headers=admin).get_json()
    assert (changed["team_id"], changed["team_role"], changed["org_role"]) == (None, None,
                                                                                "admin")
    moved = client.put(f"{mappings}/{shown['id']}", json={"org_id": str(world.ids["other_org"]),
                                                          "team_id": str(world.ids["other_team"]),
                                                          "team_role": "lead"},
                       headers=admin).get_json()
    assert (moved["org_name"], moved["team_name"], moved["team_role"]) == (
        "Org B", "Team TB", "lead")
    with runtime.db.session() as session:
        actions = [e.action for e in session.scalars(
            select(AuditEntry).where(AuditEntry.resource_type == "sso_domain_mapping")
            .order_by(AuditEntry.created_at))]
        severities = set(session.scalars(select(AuditEntry.severity).where(
            AuditEntry.resource_type == "sso_domain_mapping")))
    assert sorted(actions) == ["sso.mapping_create", "sso.mapping_update",
                               "sso.mapping_update"]
    assert severities == {"critical"}


@pytest.mark.parametrize(("body", "field"), [
    ({"domain": "not a domain"}, "domain"),
    ({"domain": "*.corp.example"}, "domain"),
    ({"org_id": MISSING}, "org_id"),
    ({"org_role": "emperor"}, "org_role"),
    ({"team": "other_team"}, "team_id"),
    ({"team": "team", "team_role": "emperor"}, "team_role"),
    ({"team_role": "lead"}, "team_role"),
])
def test_bad_values_are_refused_and_nothing_is_stored(client, runtime, world, admin, body,
                                                      field):
    mappings = _provider(client, admin)
    given = {"domain": "corp.example", "org_id": str(world.ids["org"]), **body}
    if "team" in given:
        given["team_id"] = str(world.ids[given.pop("team")])
    response = client.post(mappings, json=given, headers=admin)
    assert response.status_code == 400, response.get_json()
    assert field in response.get_json()["details"]
    assert _count(runtime) == 0


def test_twins_are_refused_and_a_mapping_is_reached_only_through_its_provider(
        client, runtime, world, admin):
    mappings = _provider(client, admin)
    others = _provider(client, admin, "other")
    body = {"domain": "corp.example", "org_id": str(world.ids["org"])}
    one = client.post(mappings, json=body, headers=admin).get_json()["id"]
    assert client.post(mappings, json=body, headers=admin).status_code == 409
    assert client.post(others, json=body, headers=admin).status_code == 201
    with_team = client.post(mappings, json={**body, "team_id": str(world.ids["team"])},
                            headers=admin)
    assert with_team.status_code == 201
    clash = client.put(f"{mappings}/{with_team.get_json()['id']}", json={"team_id": None},
                       headers=admin)
    assert clash.status_code == 409
    for method in ("PUT", "DELETE"):
        for path in (f"{others}/{one}", f"{mappings}/{MISSING}",
                     f"{PROVIDERS}/{MISSING}/domain-mappings/{one}"):
            response = client.open(path, method=method, json={} if method == "PUT" else None,
                                   headers=admin)
            assert (response.status_code, response.get_json()["code"]) == (404, "not_found")
    assert client.get(f"{PROVIDERS}/{MISSING}/domain-mappings",
                      headers=admin).status_code == 404
    assert _count(runtime) == 3


def test_deleting_a_mapping_or_its_provider_removes_it(client, runtime, world, admin):
    mappings = _provider(client, admin)
    body = {"domain": "corp.example", "org_id": str(world.ids["org"])}
    one = client.post(mappings, json=body, headers=admin).get_json()["id"]
    assert client.delete(f"{mappings}/{one}", headers=admin).status_code == 200
    assert client.get(mappings, headers=admin).get_json() == []
    client.post(mappings, json=body, headers=admin)
    assert client.delete(mappings.removesuffix("/domain-mappings"),
                         headers=admin).status_code == 200
    assert _count(runtime) == 0


PREVIEW = "/api/v1/admin/sso/domain-mappings/preview"


def test_the_preview_says_what_a_sign_in_would_do_and_changes_nothing(client, runtime, world,
                                                                     admin):
    mappings = _provider(client, admin)
    org, team = str(world.ids["org"]), str(world.ids["team"])
    client.post(mappings, json={"domain": "corp.example", "org_id": org}, headers=admin)
    client.post(mappings, json={"domain": "corp.example", "org_id": org, "org_role": "admin",
                                "team_id": team, "team_role": "lead"}, headers=admin)
    client.post(mappings, json={"domain": "other.example", "org_id": org}, headers=admin)
    before = _count(runtime)
    shown = client.post(PREVIEW, json={"email": "Ann@Corp.Example", "provider": "corp"},
                        headers=admin).get_json()
    assert (shown["email_domain"], shown["provider"], shown["would_bypass_invite"],
            shown["domain_allowed"]) == ("corp.example", "corp", True, True)
    assert len(shown["matching_rules"]) == 2
    assert shown["org_assignments"] == [{"org_id": org, "org_name": "Org A",
                                         "org_role": "admin"}]
    assert shown["team_assignments"] == [{"org_id": org, "team_id": team,
                                          "team_name": "Team T", "team_role": "lead"}]
    unmapped = client.post(PREVIEW, json={"email": "bob@elsewhere.example", "provider": "corp"},
                           headers=admin).get_json()
    assert (unmapped["matching_rules"], unmapped["would_bypass_invite"],
            unmapped["org_assignments"]) == ([], False, [])
    assert _count(runtime) == before


def test_the_preview_follows_the_provider_state_and_refuses_bad_input(client, runtime, world,
                                                                      admin):
    mappings = _provider(client, admin)
    pid = mappings.split("/")[-2]
    client.post(mappings, json={"domain": "corp.example", "org_id": str(world.ids["org"])},
                headers=admin)
    client.put(f"{PROVIDERS}/{pid}", json={"enabled": False,
                                           "allowed_domains": ["allowed.example"]},
               headers=admin)
    shown = client.post(PREVIEW, json={"email": "ann@corp.example", "provider": pid},
                        headers=admin).get_json()
    assert (shown["provider_enabled"], shown["domain_allowed"],
            shown["would_bypass_invite"]) == (False, False, False)
    for body, status in (({"email": "x@corp.example", "provider": "nope"}, 404),
                         ({"email": "x@corp.example", "provider": MISSING}, 404),
                         ({"email": "not an address", "provider": "corp"}, 400),
                         ({"provider": "corp"}, 400)):
        assert client.post(PREVIEW, json=body, headers=admin).status_code == status, body
    assert_admin_only(client, runtime, world, "POST", PREVIEW,
                      {"email": "x@corp.example", "provider": "corp"})


def test_moving_a_team_to_another_org_drops_the_mappings_that_name_it(client, runtime, world,
                                                                      admin):
    mappings = _provider(client, admin)
    org = str(world.ids["org"])
    client.post(mappings, json={"domain": "corp.example", "org_id": org}, headers=admin)
    client.post(mappings, json={"domain": "corp.example", "org_id": org,
                                "team_id": str(world.ids["team"])}, headers=admin)
    moved = client.post(world.path("/orgs/{org}/teams/{team}/transfer"),
                        json={"target_org_id": str(world.ids["other_org"])}, headers=admin)
    assert moved.status_code == 200, moved.get_json()
    [kept] = client.get(mappings, headers=admin).get_json()
    assert (kept["org_id"], kept["team_id"]) == (org, None)
