"""Invitations through the API: create (one and bulk), list, revoke, preview, accept, register
with an invite, and the expiry job."""

import uuid
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select, update

from burnbox.security import hash_token
from burnbox.timeutil import utcnow
from models.platform.audit import AuditEntry
from models.tenancy.invites import Invite, purge_expired_invites
from models.tenancy.orgs import OrgMember
from models.tenancy.teams import TeamMember
from tests.factories.identity import auth_headers, make_password_user
from tests.factories.tenancy import make_world
from tests.identity import PASSWORD, bearer, token_in
from tests.web.test_auth import mailbox  # noqa: F401 (the fixture)

INVITE_FIELDS = {"id", "org_id", "email", "role", "team_assignments", "auth_method",
                 "invited_by", "created_at", "expires_at"}
TOKEN_AFTER = r"/api/v1/invites/"


def _invite(client, world, who="owner", **body):
    body = {"email": "new.person@example.test", "role": "member", **body}
    return client.post(world.path("/orgs/{org}/invites"), json=body, headers=world.headers[who])


def _token_of(runtime, client, world, **body):
    """Create an invite the way the API does, then give it a token the test knows."""
    invite = _invite(client, world, **body).get_json()
    with runtime.db.transaction() as session:
        session.get(Invite, uuid.UUID(invite["id"])).token_hash = hash_token(
            f"token-{invite['id']}")
    return f"token-{invite['id']}"


def test_an_invite_is_created_mailed_with_its_token_and_the_token_is_stored_hashed(
        runtime, mailbox):  # noqa: F811
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    team = {"team_id": str(world.ids["team"]), "role": "lead"}
    response = _invite(mailbox.client, world, "admin", email="New.Person@Example.test",
                       team_assignments=[team], auth_method="password")
    assert response.status_code == 201
    invite = response.get_json()
    assert set(invite) == INVITE_FIELDS
    assert (invite["email"], invite["role"], invite["auth_method"]) == (
        "new.person@example.test", "member", "password")
    assert invite["team_assignments"] == [team]
    assert invite["invited_by"] == str(world.ids["user_admin"])
    [message] = [m for m in mailbox.sink.wait_for(1) if m["To"] == "new.person@example.test"]
    token = token_in(message.get_content(), TOKEN_AFTER)
    assert len(token) >= 43  # 256 random bits, URL-safe
    assert "Admin invited you to join Org A" in message.get_content()
    with runtime.db.session() as session:
        row = session.get(Invite, uuid.UUID(invite["id"]))
        assert row.token_hash == hash_token(token) != token
    preview = mailbox.client.get(f"/api/v1/invites/{token}/preview").get_json()
    assert preview["org_name"] == "Org A"
    assert preview["teams"] == [{"team_id": team["team_id"], "name": "Team T", "role": "lead"}]
    assert preview["invited_by_name"] == "Admin"


def test_an_invite_expires_after_the_configured_48_hours(client, world):
    invite = _invite(client, world).get_json()
    lifetime = (datetime.fromisoformat(invite["expires_at"]) -
                datetime.fromisoformat(invite["created_at"]))
    assert lifetime == timedelta(hours=48)


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"email": "not-an-address"}, 400, "email"),
    ({"role": "emperor"}, 400, "role"),
    ({"auth_method": "carrier-pigeon"}, 400, "auth_method"),
    ({"team_assignments": [{"team_id": "{other_team}", "role": "member"}]}, 400,
     "team_assignments"),
    ({"team_assignments": [{"team_id": "{team}", "role": "captain"}]}, 400, "team_assignments"),
    ({"role": "owner"}, 403, None),  # an admin cannot invite above their own role
    ({"email": "{member_email}"}, 409, None),
])
def test_bad_invites_are_refused(client, world, body, status, field):
    fills = {"{other_team}": str(world.ids["other_team"]), "{team}": str(world.ids["team"]),
             "{member_email}": world.users["member"].email}

    def fill(value):
        if isinstance(value, list):
            return [{k: fills.get(v, v) for k, v in item.items()} for item in value]
        return fills.get(value, value)

    response = _invite(client, world, "admin", **{k: fill(v) for k, v in body.items()})
    assert response.status_code == status, response.get_json()
    if field:
        assert field in response.get_json()["details"]


def test_a_pending_invite_blocks_a_second_one_until_revoked(client, world):
    assert _invite(client, world).status_code == 201
    assert _invite(client, world).status_code == 409
    invites = client.get(world.path("/orgs/{org}/invites"), headers=world.headers["owner"]
                         ).get_json()
    assert invites["total"] == 2  # the world's own invite, and this one
    newest = invites["data"][0]
    assert newest["email"] == "new.person@example.test"
    revoked = client.delete(world.path("/orgs/{org}/invites/") + newest["id"],
                            headers=world.headers["owner"])
    assert (revoked.status_code, revoked.get_json()) == (200, {"message": "Invite deleted"})
    assert _invite(client, world).status_code == 201


def test_a_lapsed_invite_makes_way_for_a_new_one(runtime, client, world):
    _invite(client, world)
    with runtime.db.transaction() as session:
        session.execute(update(Invite).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert _invite(client, world).status_code == 201


def test_inviting_a_team_needs_member_rights_in_that_team(runtime, client, world):
    with runtime.db.transaction() as session:
        session.get(OrgMember, (world.ids["org"], world.ids["user_lead"])).role = "admin"
    # As an admin the lead reaches every team anyway; a custom role could not, see the matrix.
    response = _invite(client, world, "lead",
                       team_assignments=[{"team_id": str(world.ids["team"]), "role": "lead"}])
    assert response.status_code == 201


def test_bulk_invites_report_each_address(mailbox, runtime):  # noqa: F811
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    emails = ["a@example.test", "B@example.test", "a@example.test", "nope",
              world.users["member"].email, "invitee@example.test"]
    response = mailbox.client.post(world.path("/orgs/{org}/invites/bulk"),
                                   json={"emails": emails, "role": "member"},
                                   headers=world.headers["owner"])
    assert response.status_code == 200
    body = response.get_json()
    assert [(r["input"], r["status"]) for r in body["results"]] == [
        ("a@example.test", "created"), ("B@example.test", "created"),
        ("a@example.test", "skipped"), ("nope", "failed"),
        (world.users["member"].email, "skipped"), ("invitee@example.test", "skipped")]
    assert body["counts"] == {"created": 2, "skipped": 3, "failed": 1}
    assert body["results"][3]["message"] == "invalid e-mail address"
    assert body["results"][0]["id"]
    received = {m["To"] for m in mailbox.sink.wait_for(2)}
    assert {"a@example.test", "b@example.test"} <= received


def test_bulk_terms_are_checked_once_and_fail_the_whole_request(client, world):
    response = client.post(world.path("/orgs/{org}/invites/bulk"), headers=world.headers["admin"],
                           json={"emails": ["a@example.test"], "role": "owner"})
    assert response.status_code == 403
    too_many = client.post(world.path("/orgs/{org}/invites/bulk"), headers=world.headers["admin"],
                           json={"emails": [f"u{i}@example.test" for i in range(101)],
                                 "role": "member"})
    assert too_many.status_code == 400


def test_accepting_joins_the_org_and_teams_and_uses_up_the_invite(runtime, client, world):
    team = {"team_id": str(world.ids["team"]), "role": "member"}
    token = _token_of(runtime, client, world, email=world.users["stranger"].email,
                      role="admin", team_assignments=[team])
    headers = world.headers["stranger"]
    response = client.post(f"/api/v1/invites/{token}/accept", headers=headers)
    assert response.status_code == 200
    assert response.get_json()["id"] == str(world.ids["org"])
    with runtime.db.session() as session:
        member = session.get(OrgMember, (world.ids["org"], world.ids["user_stranger"]))
        assert member.role == "admin"
        assert session.get(TeamMember, (world.ids["team"], world.ids["user_stranger"])).role == \
            "member"
        entry = session.scalars(select(AuditEntry).where(
            AuditEntry.action == "org.invite_accept")).one()
        assert entry.actor_id == world.ids["user_stranger"]
    assert client.get(f"/api/v1/invites/{token}/preview").status_code == 404
    assert client.post(f"/api/v1/invites/{token}/accept", headers=headers).status_code == 404
    me = client.get("/api/v1/auth/me", headers=headers).get_json()
    assert me["email_verified"] is True


def test_only_the_invited_address_can_accept(runtime, client, world):
    token = _token_of(runtime, client, world, email=world.users["stranger"].email)
    response = client.post(f"/api/v1/invites/{token}/accept", headers=world.headers["outsider"])
    assert response.status_code == 403
    assert client.post(f"/api/v1/invites/{token}/accept").status_code == 401
    assert client.get(f"/api/v1/invites/{token}/preview").status_code == 200  # still usable


def test_the_auth_method_decides_which_accounts_may_accept(runtime, client, world):
    token = _token_of(runtime, client, world, email=world.users["stranger"].email,
                      auth_method="password")
    response = client.post(f"/api/v1/invites/{token}/accept", headers=world.headers["stranger"])
    assert response.status_code == 403  # the stranger signs in without a password (SSO)
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings, email="with-password@example.test")
        headers = auth_headers(session, runtime.settings, user)
    sso_token = _token_of(runtime, client, world, email=user.email, auth_method="sso")
    assert client.post(f"/api/v1/invites/{sso_token}/accept", headers=headers).status_code == 403


def test_an_existing_member_keeps_their_role_and_gains_the_teams(runtime, client, world):
    with runtime.db.transaction() as session:
        session.execute(update(Invite).where(Invite.id == world.ids["invite"]).values(
                                              email=world.users["member"].email,
                                              team_assignments=[{"team_id": str(
                                                  world.ids["team"]), "role": "lead"}],
                                              role="admin", token_hash=hash_token("known")))
    response = client.post("/api/v1/invites/known/accept", headers=world.headers["member"])
    assert response.status_code == 200
    with runtime.db.session() as session:
        assert session.get(OrgMember, (world.ids["org"], world.ids["user_member"])).role == \
            "member"
        assert session.get(TeamMember, (world.ids["team"], world.ids["user_member"])).role == \
            "lead"


def test_unknown_and_lapsed_tokens_are_404(runtime, client, world):
    token = _token_of(runtime, client, world, email=world.users["stranger"].email)
    assert client.get("/api/v1/invites/no-such-token/preview").status_code == 404
    with runtime.db.transaction() as session:
        session.execute(update(Invite).values(expires_at=utcnow() - timedelta(minutes=1)))
    assert client.get(f"/api/v1/invites/{token}/preview").status_code == 404
    assert client.post(f"/api/v1/invites/{token}/accept", headers=world.headers["stranger"]
                       ).status_code == 404


def test_registering_with_an_invite_token_joins_the_org(runtime, client, world):
    token = _token_of(runtime, client, world, email="Joiner@Example.test")
    response = client.post("/api/v1/auth/register", json={
        "email": "joiner@example.test", "password": PASSWORD, "display_name": "Joiner",
        "invite_token": token})
    assert response.status_code == 201
    assert response.get_json()["user"]["email_verified"] is True
    headers = bearer(response.get_json()["tokens"]["access_token"])
    assert client.get(world.path("/orgs/{org}/members/me"), headers=headers).status_code == 200


def test_registering_with_someone_elses_invite_creates_the_account_without_joining(
        runtime, client, world):
    token = _token_of(runtime, client, world, email="intended@example.test")
    response = client.post("/api/v1/auth/register", json={
        "email": "other@example.test", "password": PASSWORD, "display_name": "Other",
        "invite_token": token})
    assert response.status_code == 201
    headers = bearer(response.get_json()["tokens"]["access_token"])
    assert client.get(world.path("/orgs/{org}"), headers=headers).status_code == 404
    assert client.get(f"/api/v1/invites/{token}/preview").status_code == 200


def test_the_expiry_job_deletes_only_lapsed_invites(runtime, client, world):
    _invite(client, world)
    with runtime.db.transaction() as session:
        session.execute(update(Invite).where(Invite.email == "invitee@example.test")
                        .values(expires_at=utcnow() - timedelta(seconds=1)))
    with runtime.db.transaction() as session:
        assert purge_expired_invites(session) == 2  # org A's and org B's world invites
    with runtime.db.session() as session:
        assert [i.email for i in session.scalars(select(Invite))] == ["new.person@example.test"]
