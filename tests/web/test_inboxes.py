"""The inbox API through the real handlers: shapes, creation by assignment or domain name, the
listing filters, extension, deletion, and who may do what (the creator, team permissions, 404
for other orgs)."""

import re
import uuid

import pytest
from sqlalchemy import select

from models.domains.domains import Domain
from models.events import INBOX_CREATED, INBOX_EXPIRED, Event
from models.mail.inboxes import Inbox
from models.tenancy.orgs import OrgMember
from models.tenancy.teams import TeamMember
from tests.apikey_helpers import key_auth, make_key
from tests.factories.domains import make_assignment
from tests.factories.mail import lapse, make_inbox
from tests.factories.tenancy import make_team

INBOX_KEYS = {"id", "address", "full_address", "domain_id", "domain_assignment_id", "team_id",
              "org_id", "created_by", "is_active", "expires_at", "created_at", "email_count",
              "unread_count"}
PAGE_KEYS = {"data", "total", "page", "per_page", "total_pages"}
UTC_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def _create(api, who="team_member", **body):
    body.setdefault("domain_assignment_id", None)
    if body["domain_assignment_id"] is None:
        body.pop("domain_assignment_id")
    return api("POST", "/inboxes", who, json=body)


# Creation

def test_creating_through_an_assignment_answers_201_with_the_inbox(api, mail_world):
    response = _create(api, domain_assignment_id=str(mail_world.ids["assignment"]),
                       alias="qa-run-1", ttl="1h")
    assert response.status_code == 201, response.get_json()
    inbox = response.get_json()
    assert set(inbox) == INBOX_KEYS
    assert inbox["address"] == "qa-run-1"
    assert inbox["full_address"] == f"qa-run-1@{mail_world.domain}"
    assert inbox["team_id"] == str(mail_world.ids["team"])
    assert inbox["org_id"] == str(mail_world.ids["org"])
    assert inbox["created_by"] == str(mail_world.users["team_member"].id)
    assert inbox["is_active"] is True
    assert (inbox["email_count"], inbox["unread_count"]) == (0, 0)
    assert UTC_Z.match(inbox["expires_at"]) and UTC_Z.match(inbox["created_at"])


def test_creating_by_domain_name_picks_the_callers_assignment(api, mail_world):
    response = _create(api, domain=mail_world.domain)
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["domain_assignment_id"] == str(mail_world.ids["assignment"])


@pytest.mark.parametrize("body", [
    {}, {"domain": "x.test", "domain_assignment_id": str(uuid.uuid4())},
    {"domain": "d.test", "ttl": 5}])
def test_a_body_without_exactly_one_target_or_with_a_bad_field_is_400(api, body):
    response = api("POST", "/inboxes", json=body)
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"


def test_bad_aliases_and_ttls_are_400_naming_the_field(api, mail_world):
    for field, value in (("alias", "-bad-"), ("ttl", "48h")):
        response = _create(api, domain=mail_world.domain, **{field: value})
        assert response.status_code == 400
        assert field in response.get_json()["details"]


def test_a_live_address_twice_is_409(api, mail_world):
    assert _create(api, domain=mail_world.domain, alias="dup").status_code == 201
    response = _create(api, who="lead", domain=mail_world.domain, alias="dup")
    assert response.status_code == 409
    assert response.get_json()["code"] == "conflict"


def test_the_quota_answers_409_with_the_limit(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        session.get(Domain, mail_world.ids["domain"]).settings = {"max_inboxes_per_domain": 1}
    assert _create(api, domain=mail_world.domain).status_code == 201
    response = _create(api, domain=mail_world.domain)
    assert response.status_code == 409
    assert response.get_json()["limit"] == 1


def test_creating_records_inbox_created(api, mail_world, runtime):
    inbox = _create(api, domain=mail_world.domain).get_json()
    with runtime.db.session() as session:
        events = session.scalars(select(Event).where(Event.name == INBOX_CREATED)).all()
    assert [event.data["inbox_id"] for event in events] == [inbox["id"]]


@pytest.mark.parametrize(("who", "status"), [("org_member", 403), ("outsider", 404),
                                             ("stranger", 404)])
def test_only_team_members_with_the_permission_create_through_an_assignment(api, mail_world,
                                                                            who, status):
    response = _create(api, who=who, domain_assignment_id=str(mail_world.ids["assignment"]))
    assert response.status_code == status, response.get_json()


def _refusal(response):
    return response.status_code, response.get_json()


def test_another_orgs_assignment_and_a_random_id_get_the_same_answer(api, mail_world):
    # "org not found" for another org's assignment once told a caller which ids exist there.
    for who in ("outsider", "stranger", "team_member"):
        random_id = _create(api, who=who, domain_assignment_id=str(uuid.uuid4()))
        assert _refusal(random_id) == (404, {"error": "domain assignment not found",
                                             "code": "not_found"})
        if who != "outsider":  # the outsider's org is the other org
            foreign = _create(api, who=who,
                              domain_assignment_id=str(mail_world.ids["other_assignment"]))
            assert _refusal(foreign) == _refusal(random_id)


def test_an_api_key_gets_the_same_answer_for_another_team_or_org_and_a_random_id(
        client, runtime, mail_world):
    with runtime.db.transaction() as session:
        owner = session.merge(mail_world.users["owner"])
        team = make_team(session, runtime.settings, owner, mail_world.ids["org"], name="Second")
        sibling = make_assignment(session, runtime.settings, owner, team,
                                  mail_world.ids["domain"])
        sibling_id = sibling.id
    key = make_key(client, mail_world, scopes=["team.inboxes.create"])
    for target in (uuid.uuid4(), mail_world.ids["other_assignment"], sibling_id):
        response = client.post("/api/v1/inboxes", json={"domain_assignment_id": str(target)},
                               headers=key_auth(key["raw_key"]))
        assert _refusal(response) == (404, {"error": "domain assignment not found",
                                            "code": "not_found"})


def test_creating_needs_authentication(client):
    response = client.post("/api/v1/inboxes", json={"domain": "x.test"})
    assert response.status_code == 401


# Reading

def test_the_creator_and_team_members_read_an_inbox_other_orgs_get_404(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="lead")
    path = f"/inboxes/{inbox.id}"
    for who in ("lead", "team_member", "owner"):
        response = api("GET", path, who)
        assert response.status_code == 200, (who, response.get_json())
        assert set(response.get_json()) == INBOX_KEYS
    assert api("GET", path, "org_member").status_code == 403
    for who in ("outsider", "stranger"):
        assert api("GET", path, who).status_code == 404
    assert api("GET", f"/inboxes/{uuid.uuid4()}").status_code == 404


def test_the_creator_keeps_access_after_leaving_the_org(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="team_member")
    with runtime.db.transaction() as session:
        user_id = mail_world.users["team_member"].id
        session.delete(session.get(TeamMember, (mail_world.ids["team"], user_id)))
        session.delete(session.get(OrgMember, (mail_world.ids["org"], user_id)))
    assert api("GET", f"/inboxes/{inbox.id}").status_code == 200


def test_the_list_shows_inboxes_the_caller_created_or_may_view_newest_first(api, mail_world,
                                                                             runtime):
    with runtime.db.transaction() as session:
        mine = make_inbox(session, runtime.settings, mail_world, role="team_member")
        theirs = make_inbox(session, runtime.settings, mail_world, role="lead")
        make_inbox(session, runtime.settings, mail_world, role="outsider",
                   assignment="other_assignment")
    body = api("GET", "/inboxes").get_json()
    assert set(body) == PAGE_KEYS
    assert [item["id"] for item in body["data"]] == [str(theirs.id), str(mine.id)]
    assert api("GET", "/inboxes", "org_member").get_json()["total"] == 0
    assert api("GET", "/inboxes", "stranger").get_json()["data"] == []


def test_the_list_filters_by_status_and_address(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        live = make_inbox(session, runtime.settings, mail_world, alias="live-one")
        gone = make_inbox(session, runtime.settings, mail_world, alias="gone-one")
        lapse(session, gone.id)

    def ids(query):
        return [item["id"] for item in api("GET", f"/inboxes?{query}").get_json()["data"]]

    assert ids("") == [str(live.id)]
    assert ids("status=expired") == [str(gone.id)]
    assert set(ids("status=all")) == {str(live.id), str(gone.id)}
    assert ids("status=all&q=GONE") == [str(gone.id)]
    assert ids("status=all&q=%25") == []  # LIKE wildcards are matched literally
    assert api("GET", "/inboxes?status=dead").status_code == 400


def test_the_address_filter_finds_the_one_inbox_with_that_whole_address(api, mail_world,
                                                                        runtime):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, alias="whole")
        make_inbox(session, runtime.settings, mail_world, alias="whole-not")

    def ids(path, query):
        return [item["id"] for item in api("GET", f"{path}?{query}").get_json()["data"]]

    team = mail_world.path("/orgs/{org}/teams/{team}/inboxes").removeprefix("/api/v1")
    for path in ("/inboxes", team):
        assert ids(path, f"address={inbox.full_address.upper()}") == [str(inbox.id)]
        assert ids(path, "address=whole") == []  # a part is not the whole address
        assert ids(path, "address=nobody@nowhere.example") == []
    assert api("GET", "/inboxes?address=" + "a" * 321).status_code == 400


def test_the_list_paginates(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        for _ in range(3):
            make_inbox(session, runtime.settings, mail_world)
    body = api("GET", "/inboxes?per_page=2&page=2").get_json()
    assert (body["total"], body["page"], body["per_page"], body["total_pages"]) == (3, 2, 2, 2)
    assert len(body["data"]) == 1


def test_a_teams_inboxes_are_listed_under_the_team(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    body = api("GET", "/orgs/{org}/teams/{team}/inboxes", "lead").get_json()
    assert [item["id"] for item in body["data"]] == [str(inbox.id)]
    assert api("GET", "/orgs/{org}/teams/{team}/inboxes", "org_member").status_code == 403
    assert api("GET", "/orgs/{org}/teams/{team}/inboxes", "outsider").status_code == 404


# Extension and deletion

def test_extending_pushes_the_expiry_back_up_to_the_max(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, ttl="23h")
    response = api("POST", f"/inboxes/{inbox.id}/extend", json={"duration": "30m"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["expires_at"] > inbox.expires_at.isoformat()[:19]
    assert api("POST", f"/inboxes/{inbox.id}/extend", json={"duration": "2h"}).status_code == 200
    refused = api("POST", f"/inboxes/{inbox.id}/extend", json={})
    assert refused.status_code == 409
    assert UTC_Z.match(refused.get_json()["max_expires_at"])


def test_deleting_removes_the_inbox_without_an_expired_event(api, mail_world, runtime):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    assert api("DELETE", f"/inboxes/{inbox.id}", "org_member").status_code == 403
    deleted = api("DELETE", f"/inboxes/{inbox.id}")
    assert (deleted.status_code, deleted.get_json()) == (200, {"message": "Inbox deleted"})
    assert api("GET", f"/inboxes/{inbox.id}").status_code == 404
    with runtime.db.session() as session:
        assert session.get(Inbox, inbox.id) is None
        assert session.scalars(select(Event).where(Event.name == INBOX_EXPIRED)).all() == []


# The OpenAPI document

def test_every_inbox_operation_declares_one_permission(client):
    paths = client.get("/api/v1/docs/openapi.json").get_json()["paths"]
    declared = {(method, path): operation.get("x-required-permission")
                for path, item in paths.items()
                if path.startswith("/api/v1/inboxes") or path.endswith("/inboxes")
                for method, operation in item.items() if method != "parameters"}
    assert declared == {
        ("post", "/api/v1/inboxes"): "team.inboxes.create",
        ("get", "/api/v1/inboxes"): "team.inboxes.view",
        ("get", "/api/v1/inboxes/{inbox_id}"): "team.inboxes.view",
        ("get", "/api/v1/inboxes/by-address/{address}"): "team.inboxes.view",
        ("get", "/api/v1/inboxes/by-address/{address}/emails/wait"): "team.emails.view",
        ("delete", "/api/v1/inboxes/{inbox_id}"): "team.inboxes.manage",
        ("post", "/api/v1/inboxes/{inbox_id}/extend"): "team.inboxes.manage",
        ("get", "/api/v1/inboxes/{inbox_id}/chaos"): "team.inboxes.view",
        ("put", "/api/v1/inboxes/{inbox_id}/chaos"): "team.inboxes.manage",
        ("delete", "/api/v1/inboxes/{inbox_id}/chaos"): "team.inboxes.manage",
        ("get", "/api/v1/inboxes/{inbox_id}/smtp-credentials"): "team.inboxes.view",
        ("post", "/api/v1/inboxes/{inbox_id}/smtp-credentials"): "team.inboxes.manage",
        ("delete", "/api/v1/inboxes/{inbox_id}/smtp-credentials"): "team.inboxes.manage",
        ("get", "/api/v1/inboxes/{inbox_id}/emails"): "team.emails.view",
        ("get", "/api/v1/inboxes/{inbox_id}/overview"): "team.emails.view",
        ("post", "/api/v1/inboxes/{inbox_id}/messages"): "team.inboxes.manage",
        ("delete", "/api/v1/inboxes/{inbox_id}/emails"): "team.emails.manage",
        ("get", "/api/v1/inboxes/{inbox_id}/emails/wait"): "team.emails.view",
        ("post", "/api/v1/inboxes/{inbox_id}/emails/mark-all-read"): "team.emails.view",
        ("get", "/api/v1/inboxes/{inbox_id}/emails/{email_id}/raw"): "team.emails.view",
        ("get", "/api/v1/inboxes/{inbox_id}/release-rules"): "team.emails.view",
        ("post", "/api/v1/inboxes/{inbox_id}/release-rules"): "team.emails.release",
        ("patch", "/api/v1/inboxes/{inbox_id}/release-rules/{rule_id}"): "team.emails.release",
        ("delete", "/api/v1/inboxes/{inbox_id}/release-rules/{rule_id}"): "team.emails.release",
        ("get", "/api/v1/orgs/{org_id}/teams/{team_id}/inboxes"): "team.inboxes.view",
    }
