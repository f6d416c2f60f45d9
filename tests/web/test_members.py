"""Org members through the API: add, add-or-invite, list, search, me, roles, deactivation."""

import uuid

import pytest
from sqlalchemy import select

from models.platform.audit import AuditEntry
from models.tenancy.invites import Invite
from models.tenancy.orgs import OrgMember
from models.tenancy.teams import TeamMember
from tests.apikey_helpers import make_key, stored
from tests.factories.tenancy import make_world
from tests.web.test_auth import mailbox  # noqa: F401 (the fixture)

MEMBER_FIELDS = {"user_id", "email", "display_name", "role", "created_at"}


def _members(client, world, who="owner", query=""):
    return client.get(world.path("/orgs/{org}/members") + query,
                      headers=world.headers[who]).get_json()


def _role(client, world, name, role, who="owner"):
    return client.patch(world.path("/orgs/{org}/members/{user_" + name + "}"),
                        json={"role": role}, headers=world.headers[who])


def _invite(client, world, name, role="member"):
    response = client.post(world.path("/orgs/{org}/invites"), headers=world.headers["owner"],
                           json={"email": world.users[name].email, "role": role})
    assert response.status_code == 201, response.get_json()


def test_adding_an_invited_user_by_id_answers_201_with_the_member_and_uses_up_the_invite(
        runtime, client, world):
    _invite(client, world, "stranger")
    response = client.post(world.path("/orgs/{org}/members"), headers=world.headers["admin"],
                           json={"user_id": str(world.ids["user_stranger"]), "role": "member"})
    assert response.status_code == 201
    member = response.get_json()
    assert set(member) == MEMBER_FIELDS
    assert (member["user_id"], member["role"]) == (str(world.ids["user_stranger"]), "member")
    assert member["email"] == world.users["stranger"].email  # the org sent it in the invite
    with runtime.db.session() as session:
        entry = session.scalars(select(AuditEntry).where(
            AuditEntry.action == "org.member_add",
            AuditEntry.resource_id == str(world.ids["user_stranger"]))).one()
        assert session.scalars(select(Invite).where(
            Invite.email == world.users["stranger"].email)).all() == []
    assert entry.actor_id == world.ids["user_admin"]
    assert entry.after["role"] == "member"


@pytest.mark.parametrize("path", ["/orgs/{org}/members", "/orgs/{org}/members/add"])
def test_an_uninvited_users_id_gets_the_answer_of_an_id_nobody_has_and_adds_no_one(
        runtime, client, world, path):
    # Adding anyone by id once put them in the org unasked and answered their address.
    answers = []
    for user_id in (world.ids["user_stranger"], uuid.uuid4()):
        response = client.post(world.path(path), headers=world.headers["admin"],
                               json={"user_id": str(user_id), "role": "member"})
        answers.append((response.status_code, response.get_json()))
    assert answers[0] == answers[1]
    assert answers[0][0] == 404 and "invite them by e-mail" in answers[0][1]["error"]
    assert world.users["stranger"].email not in str(answers[0][1])
    with runtime.db.session() as session:
        assert session.get(OrgMember, (world.ids["org"], world.ids["user_stranger"])) is None


def test_adding_by_email_ignores_case(client, world):
    response = client.post(world.path("/orgs/{org}/members"), headers=world.headers["owner"],
                           json={"email": world.users["stranger"].email.upper(), "role": "admin"})
    assert response.status_code == 201
    assert response.get_json()["role"] == "admin"


@pytest.mark.parametrize(("body", "status"), [
    ({"email": "nobody@example.test", "role": "member"}, 404),
    ({"user_id": "{user_member}", "role": "member"}, 409),
    ({"user_id": "{user_stranger}", "role": "emperor"}, 400),
    ({"user_id": "{user_stranger}", "email": "x@example.test", "role": "member"}, 400),
    ({"role": "member"}, 400),
    ({"user_id": "{user_stranger}", "role": "owner"}, 403),  # an admin cannot make an owner
])
def test_adding_refuses_unknown_users_duplicates_bad_roles_and_roles_above_the_caller(
        client, world, body, status):
    body = {key: str(world.ids[value.strip("{}")]) if value.startswith("{") else value
            for key, value in body.items()}
    response = client.post(world.path("/orgs/{org}/members"), json=body,
                           headers=world.headers["admin"])
    assert response.status_code == status, response.get_json()


def test_add_puts_an_existing_account_in_at_once(client, world):
    response = client.post(world.path("/orgs/{org}/members/add"), headers=world.headers["admin"],
                           json={"email": world.users["stranger"].email, "role": "member"})
    assert response.status_code == 201
    assert response.get_json()["user_id"] == str(world.ids["user_stranger"])


def test_add_invites_an_address_without_an_account_and_mails_it(runtime, mailbox):  # noqa: F811
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    response = mailbox.client.post(world.path("/orgs/{org}/members/add"),
                                   headers=world.headers["owner"],
                                   json={"email": "Fresh@Example.test", "role": "admin"})
    assert response.status_code == 202
    invite = response.get_json()
    assert (invite["email"], invite["role"], invite["org_id"]) == (
        "fresh@example.test", "admin", str(world.ids["org"]))
    [*_, message] = mailbox.sink.wait_for(1)
    assert message["To"] == "fresh@example.test"
    assert "Org A" in message["Subject"]


def test_list_and_search_members(client, world):
    everyone = _members(client, world, "member")
    assert everyone["total"] == 6
    assert {m["role"] for m in everyone["data"]} == {"owner", "admin", "member"}
    search = world.path("/orgs/{org}/members/search")
    found = client.get(search + "?q=TEAM%20mem", headers=world.headers["member"]).get_json()
    assert [m["user_id"] for m in found["data"]] == [str(world.ids["user_team_member"])]
    assert client.get(search + "?q=%25", headers=world.headers["member"]
                      ).get_json()["total"] == 0  # % is a character, not a wildcard
    assert client.get(search, headers=world.headers["member"]).status_code == 400
    assert client.get(search + "?q=" + world.users["outsider"].email,
                      headers=world.headers["owner"]).get_json()["total"] == 0


def test_me_shows_the_callers_role_and_permissions(client, world):
    me = client.get(world.path("/orgs/{org}/members/me"), headers=world.headers["member"]
                    ).get_json()
    assert (me["user_id"], me["role"]) == (str(world.ids["user_member"]), "member")
    assert "org.view" in me["permissions"]
    assert "org.members.add" not in me["permissions"]


def test_role_changes_follow_the_rank_rules(client, world):
    assert _role(client, world, "member", "admin").status_code == 200  # owner > member
    assert _role(client, world, "member", "member", "admin").status_code == 403  # equal rank
    assert _role(client, world, "target", "owner", "admin").status_code == 403  # above own
    assert _role(client, world, "owner", "member", "admin").status_code == 403  # above them
    response = _role(client, world, "target", "admin", "admin")
    assert (response.status_code, response.get_json()["role"]) == (200, "admin")


def test_the_last_owner_cannot_step_down_but_one_of_two_can(client, world):
    response = _role(client, world, "owner", "admin", "owner")
    assert response.status_code == 409
    assert _role(client, world, "admin", "owner").status_code == 200
    assert _role(client, world, "owner", "member", "owner").status_code == 200
    assert _role(client, world, "owner", "owner", "owner").status_code == 403  # no self-raise


def test_an_unknown_role_or_member_is_refused(client, world):
    assert _role(client, world, "member", "emperor").status_code == 400
    assert _role(client, world, "stranger", "member").status_code == 404


def test_deactivating_removes_the_member_from_the_org_and_its_teams(runtime, client, world):
    key = make_key(client, world, "lead")
    response = client.post(world.path("/orgs/{org}/members/{user_lead}/deactivate"),
                           headers=world.headers["admin"])
    assert (response.status_code, response.get_json()) == (200, {"message": "Member deactivated"})
    with runtime.db.session() as session:
        assert session.get(OrgMember, (world.ids["org"], world.ids["user_lead"])) is None
        assert session.get(TeamMember, (world.ids["team"], world.ids["user_lead"])) is None
        revoked = session.scalars(select(AuditEntry).where(
            AuditEntry.action == "apikey.revoke", AuditEntry.resource_id == key["id"])).one()
        deactivated = session.scalars(select(AuditEntry).where(
            AuditEntry.action == "org.member_deactivate")).one()
    # Their keys of each team go as they leave it, before the org membership.
    assert stored(runtime, key["id"]).revoked_at is not None
    assert revoked.after["reason"] == "the creator left the team"
    assert deactivated.before["team_ids"] == [str(world.ids["team"])]
    assert client.get(world.path("/orgs/{org}"), headers=world.headers["lead"]
                      ).status_code == 404


def test_deactivation_needs_a_higher_rank_except_for_oneself(client, world):
    deactivate = "/orgs/{org}/members/{user_%s}/deactivate"
    assert client.post(world.path(deactivate % "owner"), headers=world.headers["admin"]
                       ).status_code == 403
    assert client.post(world.path(deactivate % "owner"), headers=world.headers["owner"]
                       ).status_code == 409  # the last owner
    assert client.post(world.path(deactivate % "admin"), headers=world.headers["admin"]
                       ).status_code == 200  # leaving
    assert _members(client, world)["total"] == 5


def test_an_invite_is_not_a_membership(runtime, client, world):
    with runtime.db.session() as session:
        assert session.scalars(select(Invite).where(Invite.org_id == world.ids["org"])).one()
    assert all(m["email"] != "invitee@example.test" for m in _members(client, world)["data"])
