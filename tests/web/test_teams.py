"""Teams and team members through the API."""

from datetime import datetime

import pytest
from sqlalchemy import select

from models.platform.audit import AuditEntry
from models.tenancy.teams import TeamMember
from tests.apikey_helpers import make_key, stored
from tests.tenancy import TEAM_PATH

TEAM_FIELDS = {"id", "org_id", "name", "slug", "description", "is_archived", "archived_at",
               "settings", "member_count", "created_at", "updated_at"}


def _team(client, world, who="owner"):
    return client.get(world.path(TEAM_PATH), headers=world.headers[who]).get_json()


def _create(client, world, name, who="owner", **body):
    return client.post(world.path("/orgs/{org}/teams"), json={"name": name, **body},
                       headers=world.headers[who])


def _members(client, world, who="lead"):
    body = client.get(world.path(TEAM_PATH + "/members?per_page=100"),
                      headers=world.headers[who]).get_json()
    return {member["email"]: member["role"] for member in body["data"]}


def test_creating_a_team_answers_201_with_the_team_itself_and_the_creator_leads_it(
        runtime, client, world):
    response = _create(client, world, "  QA Crew ", "admin", description="testers")
    assert response.status_code == 201
    team = response.get_json()
    assert set(team) == TEAM_FIELDS
    assert (team["name"], team["slug"], team["description"]) == ("QA Crew", "qa-crew", "testers")
    assert (team["is_archived"], team["archived_at"], team["settings"]) == (False, None, {})
    assert (team["member_count"], team["org_id"]) == (1, str(world.ids["org"]))
    members = client.get(world.path("/orgs/{org}/teams/") + team["id"] + "/members",
                         headers=world.headers["admin"]).get_json()["data"]
    assert [(m["user_id"], m["role"]) for m in members] == [(str(world.ids["user_admin"]),
                                                             "lead")]
    with runtime.db.session() as session:
        entry = session.scalars(select(AuditEntry).where(
            AuditEntry.action == "team.create", AuditEntry.resource_id == team["id"])).one()
    assert entry.after["name"] == "QA Crew"


def test_team_names_are_unique_within_an_org_whatever_their_case(client, world):
    assert _create(client, world, "team t").status_code == 409
    elsewhere = client.post(world.path("/orgs/{other_org}/teams"), json={"name": "Team T"},
                            headers=world.headers["outsider"])
    assert elsewhere.status_code == 201


def test_the_orgs_max_teams_limits_creation(client, world):
    client.patch(world.path("/orgs/{org}/settings"), json={"max_teams": 2},
                 headers=world.headers["owner"])
    assert _create(client, world, "Second").status_code == 201
    third = _create(client, world, "Third")
    assert third.status_code == 409
    assert "limit of 2 teams" in third.get_json()["error"]


def test_teams_are_listed_by_name_for_every_org_member(client, world):
    _create(client, world, "Alpha")
    body = client.get(world.path("/orgs/{org}/teams"), headers=world.headers["member"]
                      ).get_json()
    assert [team["name"] for team in body["data"]] == ["Alpha", "Team T"]
    assert body["total"] == 2


def test_a_team_shows_its_member_count(client, world):
    assert _team(client, world, "team_member")["member_count"] == 3  # lead, member, target


def test_patch_renames_and_merges_settings_within_what_the_org_allows(client, world):
    path, headers = world.path(TEAM_PATH), world.headers["lead"]
    response = client.patch(path, json={"name": "Team Tee", "settings": {"inbox_max_ttl": "1h"}},
                            headers=headers)
    assert response.status_code == 200
    team = response.get_json()
    assert (team["name"], team["slug"], team["settings"]) == (
        "Team Tee", "team-tee", {"inbox_max_ttl": "1h"})
    team = client.patch(path, json={"settings": {"inbox_default_ttl": "5m",
                                                 "inbox_max_ttl": None}},
                        headers=headers).get_json()
    assert team["settings"] == {"inbox_default_ttl": "5m"}
    too_long = client.patch(path, json={"settings": {"inbox_max_ttl": "25h"}}, headers=headers)
    assert too_long.status_code == 400
    assert "inbox_max_ttl" in too_long.get_json()["details"]
    org_only = client.patch(path, json={"settings": {"max_teams": 1}}, headers=headers)
    assert org_only.status_code == 400
    _create(client, world, "Taken")
    assert client.patch(path, json={"name": "TAKEN"}, headers=headers).status_code == 409


def test_archiving_stops_new_members_until_restored(client, world):
    path, headers = world.path(TEAM_PATH), world.headers["admin"]
    archived = client.post(path + "/archive", headers=headers).get_json()
    assert archived["is_archived"] is True
    assert datetime.fromisoformat(archived["archived_at"])
    assert client.post(path + "/archive", headers=headers).status_code == 200  # idempotent
    add = {"user_id": str(world.ids["user_member"]), "role": "member"}
    refused = client.post(path + "/members", json=add, headers=headers)
    assert refused.status_code == 409
    assert "archived" in refused.get_json()["error"]
    restored = client.post(path + "/restore", headers=headers).get_json()
    assert (restored["is_archived"], restored["archived_at"]) == (False, None)
    assert client.post(path + "/members", json=add, headers=headers).status_code == 201


def test_the_impact_counts_what_deletion_would_remove(client, world):
    impact = client.get(world.path(TEAM_PATH + "/impact"), headers=world.headers["lead"]
                        ).get_json()
    assert impact["members"] == 3
    assert all(isinstance(count, int) for count in impact.values())


def test_deleting_a_team_removes_it_and_audits_its_impact(runtime, client, world):
    response = client.delete(world.path(TEAM_PATH), headers=world.headers["admin"])
    assert (response.status_code, response.get_json()) == (200, {"message": "Team deleted"})
    assert client.get(world.path(TEAM_PATH), headers=world.headers["admin"]).status_code == 404
    with runtime.db.session() as session:
        assert session.scalars(select(TeamMember).where(
            TeamMember.team_id == world.ids["team"])).first() is None
        entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "team.delete")
                                ).one()
    assert entry.before["impact"]["members"] == 3


def test_members_leave_but_the_last_lead_and_non_members_cannot(client, world):
    leave = world.path(TEAM_PATH + "/leave")
    left = client.post(leave, headers=world.headers["team_member"])
    assert (left.status_code, left.get_json()) == (200, {"message": "Left the team"})
    last = client.post(leave, headers=world.headers["lead"])
    assert last.status_code == 409
    assert "last lead" in last.get_json()["error"]
    assert client.post(leave, headers=world.headers["owner"]).status_code == 409
    assert set(_members(client, world).values()) == {"lead", "member"}


def test_a_system_admin_moves_a_team_to_another_org(runtime, client, world):
    response = client.post(world.path(TEAM_PATH + "/transfer"),
                           json={"target_org_id": str(world.ids["other_org"])},
                           headers=world.headers["sysadmin"])
    assert response.status_code == 200
    team = response.get_json()
    assert team["org_id"] == str(world.ids["other_org"])
    assert team["member_count"] == 0  # nobody in it belongs to org B
    assert client.get(world.path(TEAM_PATH), headers=world.headers["owner"]).status_code == 404
    moved = client.get(world.path("/orgs/{other_org}/teams/{team}"),
                       headers=world.headers["outsider"])
    assert moved.status_code == 200
    with runtime.db.session() as session:
        orgs = {entry.org_id for entry in session.scalars(
            select(AuditEntry).where(AuditEntry.action == "team.transfer"))}
    assert orgs == {world.ids["org"], world.ids["other_org"]}


@pytest.mark.parametrize(("target", "status"), [("{org}", 400), ("{unknown}", 404)])
def test_a_transfer_needs_another_existing_org(client, world, target, status):
    world.ids["unknown"] = "00000000-0000-4000-8000-000000000000"
    response = client.post(world.path(TEAM_PATH + "/transfer"),
                           json={"target_org_id": target.format(**{
                               k: str(v) for k, v in world.ids.items()})},
                           headers=world.headers["sysadmin"])
    assert response.status_code == status


def test_a_transfer_refuses_a_target_with_a_team_of_the_same_name(client, world):
    client.post(world.path("/orgs/{other_org}/teams"), json={"name": "Team T"},
                headers=world.headers["outsider"])
    response = client.post(world.path(TEAM_PATH + "/transfer"),
                           json={"target_org_id": str(world.ids["other_org"])},
                           headers=world.headers["sysadmin"])
    assert response.status_code == 409


# Team members

def test_adding_an_org_member_answers_201_with_the_member(client, world):
    response = client.post(world.path(TEAM_PATH + "/members"), headers=world.headers["lead"],
                           json={"email": world.users["member"].email.upper(), "role": "lead"})
    assert response.status_code == 201
    member = response.get_json()
    assert (member["user_id"], member["role"]) == (str(world.ids["user_member"]), "lead")
    assert _team(client, world)["member_count"] == 4


@pytest.mark.parametrize(("name", "role", "status"), [
    ("stranger", "member", 404),  # not an org member
    ("outsider", "member", 404),  # a member of another org
    ("target", "member", 409),  # already in the team
    ("member", "captain", 400),
])
def test_adding_refuses_outsiders_duplicates_and_unknown_roles(client, world, name, role,
                                                               status):
    response = client.post(world.path(TEAM_PATH + "/members"), headers=world.headers["lead"],
                           json={"user_id": str(world.ids[f"user_{name}"]), "role": role})
    assert response.status_code == status


def test_bulk_add_reports_every_item(client, world):
    items = [{"user_id": str(world.ids["user_member"]), "role": "member"},
             {"email": world.users["target"].email, "role": "member"},
             {"user_id": str(world.ids["user_stranger"]), "role": "member"},
             {"email": world.users["admin"].email, "role": "emperor"}]
    response = client.post(world.path(TEAM_PATH + "/members/bulk-add"),
                           json={"members": items}, headers=world.headers["lead"])
    assert response.status_code == 200
    body = response.get_json()
    assert [result["status"] for result in body["results"]] == [
        "added", "skipped", "failed", "failed"]
    assert body["counts"] == {"added": 1, "skipped": 1, "failed": 2}
    assert body["results"][0]["id"] == str(world.ids["user_member"])
    assert world.users["member"].email in _members(client, world)


def test_bulk_remove_reports_every_item_and_keeps_the_last_lead(client, world):
    ids = [str(world.ids[f"user_{name}"]) for name in ("target", "member", "lead")]
    response = client.post(world.path(TEAM_PATH + "/members/bulk-remove"),
                           json={"user_ids": ids}, headers=world.headers["lead"])
    body = response.get_json()
    assert [result["status"] for result in body["results"]] == ["removed", "skipped", "failed"]
    assert "last lead" in body["results"][2]["message"]
    assert set(_members(client, world)) == {world.users["lead"].email,
                                            world.users["team_member"].email}


def test_team_role_changes_follow_the_rank_rules(client, world):
    member = world.path(TEAM_PATH + "/members/{user_team_member}")
    promoted = client.patch(member, json={"role": "lead"}, headers=world.headers["lead"])
    assert (promoted.status_code, promoted.get_json()["role"]) == (200, "lead")
    demote = client.patch(member, json={"role": "member"}, headers=world.headers["lead"])
    assert demote.status_code == 403  # lead and lead: equal rank
    assert client.patch(member, json={"role": "member"}, headers=world.headers["admin"]
                        ).status_code == 200  # org admins outrank every team role
    last = client.patch(world.path(TEAM_PATH + "/members/{user_lead}"), json={"role": "member"},
                        headers=world.headers["admin"])
    assert last.status_code == 409


def test_removing_a_member_revokes_their_keys_of_the_team(runtime, client, world):
    target = world.path(TEAM_PATH + "/members/{user_target}")
    assert client.patch(target, json={"role": "lead"}, headers=world.headers["admin"]
                        ).status_code == 200
    key = make_key(client, world, "target")
    response = client.delete(target, headers=world.headers["admin"])
    assert (response.status_code, response.get_json()) == (200, {"message": "Member deleted"})
    assert stored(runtime, key["id"]).revoked_at is not None
    assert world.users["target"].email not in _members(client, world)
    removing_lead = client.delete(world.path(TEAM_PATH + "/members/{user_lead}"),
                                  headers=world.headers["team_member"])
    assert removing_lead.status_code == 403
