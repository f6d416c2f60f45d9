"""Setup's optional first domain and first team (created in the new org, in the same
transaction as the admin and the org), and the refusal of mailer and storage, which are
configured through settings."""

import pytest
from sqlalchemy import select

from models.domains.domains import CHECK_REQUESTED, Domain, register_domain
from models.events import Event
from models.identity.users import User
from models.platform.audit import AuditEntry, Origin
from models.tenancy.access import Caller
from models.tenancy.orgs import Org, create_org
from models.tenancy.teams import Team, TeamMember
from tests.factories.identity import make_password_user
from tests.identity import bearer

SETUP = {"admin": {"email": "admin@example.test", "password": "correct horse battery",
                   "display_name": "The Admin"},
         "org": {"name": "Acme Widgets"}}


def _complete(client, **extra):
    return client.post("/api/v1/setup/complete", json={**SETUP, **extra})


def _nothing_created(client, runtime, users=()):
    assert client.get("/api/v1/setup/status").get_json()["completed"] is False
    with runtime.db.session() as session:
        assert session.scalars(select(User.email)).all() == list(users)
        assert session.scalars(select(Team)).all() == []
        assert session.scalars(select(Event).where(Event.name == CHECK_REQUESTED)).all() == []
        return session.scalars(select(Org.name)).all(), session.scalars(
            select(Domain.domain_name)).all()


def test_setup_with_a_domain_and_a_team_creates_both_in_the_new_org(client, runtime):
    response = _complete(client, domain={"domain_name": "Mail.Example.TEST."},
                         team={"name": "Support Desk"})
    assert response.status_code == 201
    body = response.get_json()
    assert set(body) == {"user", "org", "tokens"}
    org_id, headers = body["org"]["id"], bearer(body["tokens"]["access_token"])

    domains = client.get(f"/api/v1/orgs/{org_id}/domains", headers=headers).get_json()
    assert domains["total"] == 1
    [domain] = domains["data"]
    assert (domain["org_id"], domain["domain_name"], domain["status"]) == (
        org_id, "mail.example.test", "pending")

    teams = client.get(f"/api/v1/orgs/{org_id}/teams", headers=headers).get_json()
    assert teams["total"] == 1
    [team] = teams["data"]
    assert (team["org_id"], team["name"], team["slug"], team["member_count"]) == (
        org_id, "Support Desk", "support-desk", 1)
    members = client.get(f"/api/v1/orgs/{org_id}/teams/{team['id']}/members",
                         headers=headers).get_json()["data"]
    assert [(m["user_id"], m["role"]) for m in members] == [(body["user"]["id"], "lead")]

    with runtime.db.session() as session:
        # The first DNS check is requested (sent after commit), as for any registration.
        checks = session.scalars(select(Event.data).where(Event.name == CHECK_REQUESTED)).all()
        assert checks == [{"domain_id": domain["id"], "trigger": "auto_create"}]
        actions = session.scalars(select(AuditEntry.action)
                                  .where(AuditEntry.org_id.is_not(None))).all()
        assert sorted(actions) == ["domain.create", "domain_assignment.create", "team.create"]

    # The team can use the domain at once: setup assigns it with full access.
    assignments = client.get(f"/api/v1/orgs/{org_id}/teams/{team['id']}/domains",
                             headers=headers).get_json()["data"]
    assert [(a["domain_id"], a["access_level"]) for a in assignments] == [(domain["id"], "full")]


def test_setup_with_a_trusted_domain_lets_the_team_create_an_inbox_right_away(client, runtime):
    response = _complete(client, domain={"domain_name": "burnbox.test"},
                         team={"name": "QA"})
    assert response.status_code == 201
    body = response.get_json()
    headers = bearer(body["tokens"]["access_token"])
    [domain] = client.get(f"/api/v1/orgs/{body['org']['id']}/domains",
                          headers=headers).get_json()["data"]
    assert (domain["status"], domain["trusted"]) == ("verified", True)

    created = client.post("/api/v1/inboxes", headers=headers,
                          json={"domain": "burnbox.test", "alias": "signup"})
    assert created.status_code == 201, created.get_json()
    assert created.get_json()["full_address"] == "signup@burnbox.test"
    with runtime.db.session() as session:
        # No DNS check is asked for: the operator's trust is recorded in the same transaction.
        assert session.scalars(select(Event).where(Event.name == CHECK_REQUESTED)).all() == []


def test_domain_and_team_are_each_optional(client):
    response = _complete(client, team={"name": "Only Team"})
    assert response.status_code == 201
    body = response.get_json()
    headers = bearer(body["tokens"]["access_token"])
    org_id = body["org"]["id"]
    assert client.get(f"/api/v1/orgs/{org_id}/domains", headers=headers).get_json()["total"] == 0
    assert client.get(f"/api/v1/orgs/{org_id}/teams", headers=headers).get_json()["total"] == 1


@pytest.mark.parametrize("domain", [
    {"domain_name": "not a domain"},
    {"domain_name": "localhost"},
    {"domain_name": "10.0.0.1"},
    {"domain_name": ""},
    {},
])
def test_a_bad_domain_creates_nothing(client, runtime, domain):
    response = _complete(client, domain=domain, team={"name": "Support"})
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error"
    assert list(body["details"]) == ["domain"]
    assert list(body["details"]["domain"]) == ["domain_name"]
    assert _nothing_created(client, runtime) == ([], [])


def test_a_domain_another_org_holds_creates_nothing(client, runtime, settings):
    with runtime.db.transaction() as session:
        owner = make_password_user(session, runtime.settings, email="early@example.test")
    with runtime.db.transaction() as session:
        org = create_org(session, "Early Org", owner.id)
        register_domain(session, settings, Caller(owner.id, False, Origin()), org.id,
                        "mail.example.test")
        session.execute(Event.__table__.delete())
    response = _complete(client, domain={"domain_name": "mail.example.test"},
                         team={"name": "Support"})
    assert response.status_code == 409
    body = response.get_json()
    assert body["code"] == "conflict"
    assert body["details"] == {"domain": {"domain_name": [
        "the domain mail.example.test is already registered"]}}
    assert _nothing_created(client, runtime, ["early@example.test"]) == (
        ["Early Org"], ["mail.example.test"])


@pytest.mark.parametrize(("team", "field"), [
    ({"name": "   "}, "name"),
    ({"name": ""}, "name"),
    ({"name": "x" * 201}, "name"),
    ({}, "name"),
])
def test_a_bad_team_creates_nothing(client, runtime, team, field):
    response = _complete(client, domain={"domain_name": "mail.example.test"}, team=team)
    assert response.status_code == 400
    details = response.get_json()["details"]
    assert list(details) == ["team"]
    assert field in details["team"]
    assert _nothing_created(client, runtime) == ([], [])


@pytest.mark.parametrize("extra", [{"mailer": {"host": "smtp.example.test"}},
                                   {"storage": {"backend": "s3"}},
                                   {"mailer": {}, "storage": {}}])
def test_mailer_and_storage_are_refused_as_settings_only(client, runtime, extra):
    response = _complete(client, domain={"domain_name": "mail.example.test"},
                         team={"name": "Support"}, **extra)
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error"
    assert set(body["details"]) == set(extra)
    for name in extra:
        assert f"{name}.*" in body["error"]
        assert body["details"][name] == [
            f"configured through the {name}.* settings or PUT /api/v1/admin/config/{name}, "
            "not during setup"]
        assert f"/api/v1/admin/config/{name}" in body["error"]
    assert "config file or the environment" in body["error"]
    assert _nothing_created(client, runtime) == ([], [])
    with runtime.db.session() as session:
        assert session.scalars(select(TeamMember)).all() == []
