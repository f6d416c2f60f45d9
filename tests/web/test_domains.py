"""The domain and domain-assignment API through the real handlers: shapes, rules, isolation
(another org's user gets 404, a member without the permission 403) and the OpenAPI document."""

from __future__ import annotations

import re
import uuid

import pytest
from sqlalchemy import select

from models.domains.domains import CHECK_REQUESTED, MANUAL, Domain
from models.events import Event
from models.platform.audit import AuditEntry
from tests.apikey_helpers import key_auth, make_key
from tests.dns_server import SERVFAIL
from tests.domain_helpers import MX_HOST, dns_settings, run_check, zone
from tests.factories.mail import make_inbox_rows
from tests.factories.tenancy import CALLERS
from tests.tenancy import fill_ids, route_id, world_caller
from tests.web.test_permissions import HOLDS, SYSTEM_ADMIN

DOMAIN_KEYS = {"id", "org_id", "domain_name", "description", "status", "mx_verified",
               "txt_verified", "spf_verified", "verification_record", "trusted", "mx_target",
               "dns_last_checked_at", "settings", "created_at", "updated_at"}
ASSIGNMENT_KEYS = {"id", "domain_id", "domain_name", "team_id", "access_level", "settings",
                   "catch_all",
                   "created_at", "updated_at"}
CHECK_KEYS = {"id", "domain_id", "trigger", "status", "mx_verified", "txt_verified",
              "spf_verified", "details", "checked_at"}
UTC_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
DOMAINS = "/orgs/{org}/domains"
ASSIGNMENTS = "/orgs/{org}/teams/{team}/domains"


@pytest.fixture
def api(client, world):
    return world_caller(client, world, "owner")


@pytest.fixture
def domain(api, world):
    """A domain of org A, registered through the API; its id is world.ids["domain"]."""
    response = api("POST", DOMAINS, json={"domain_name": "mail.acme.test"})
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    world.ids["domain"] = uuid.UUID(body["id"])
    return body


@pytest.fixture
def assignment(api, world, domain):
    """Domain `domain` assigned to team T (full access)."""
    response = api("POST", ASSIGNMENTS, json={"domain_id": domain["id"], "access_level": "full"})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


@pytest.fixture
def live_inboxes(runtime, world):
    """add(domain_id, count): give a domain of org A `count` live inboxes of team T."""
    def add(domain_id, count):
        with runtime.db.transaction() as session:
            make_inbox_rows(session, session.get(Domain, domain_id), world.ids["team"], count)
    return add


# -- domains ----------------------------------------------------------------------------------

def test_registering_answers_201_with_the_domain_and_requests_a_check(api, world, runtime,
                                                                       domain):
    assert set(domain) == DOMAIN_KEYS
    assert domain["org_id"] == str(world.ids["org"])
    assert (domain["domain_name"], domain["status"], domain["description"]) == (
        "mail.acme.test", "pending", "")
    assert re.fullmatch(r"burnbox-verify=[0-9a-f]{32}", domain["verification_record"])
    assert domain["mx_target"] == runtime.settings.smtp.hostname
    assert domain["dns_last_checked_at"] is None
    assert UTC_Z.match(domain["created_at"]) and UTC_Z.match(domain["updated_at"])
    with runtime.db.session() as session:
        events = session.scalars(select(Event.data).where(Event.name == CHECK_REQUESTED)).all()
        audit = session.scalars(select(AuditEntry).where(AuditEntry.action == "domain.create"))
        entry = audit.one()
    assert events == [{"domain_id": domain["id"], "trigger": "auto_create"}]
    assert (entry.actor_id, entry.org_id, entry.ip) == (world.ids["user_owner"],
                                                         world.ids["org"], "127.0.0.1")


def test_the_mx_target_is_the_smtp_hostname_setting_as_dns_writes_it(make_app, world):
    client = make_app(**{"smtp.hostname": "MX.Burnbox.Example."}).test_client()
    response = client.post(world.path(DOMAINS), json={"domain_name": "mx.acme.test"},
                           headers=world.headers["owner"])
    assert response.get_json()["mx_target"] == "mx.burnbox.example"


def test_names_are_normalised_and_unique_across_orgs(api):
    created = api("POST", DOMAINS, json={"domain_name": "Bücher.Acme.TEST."})
    assert created.get_json()["domain_name"] == "xn--bcher-kva.acme.test"
    again = api("POST", "/orgs/{other_org}/domains", "outsider",
                json={"domain_name": "xn--bcher-kva.acme.test"})
    assert again.status_code == 409
    assert again.get_json()["code"] == "conflict"


@pytest.mark.parametrize("body", [{"domain_name": "not a domain"}, {"domain_name": "single"},
                                  {"domain_name": ""}, {}, {"domain_name": 5},
                                  {"domain_name": "ok.test", "description": "x" * 501}])
def test_malformed_registrations_are_400_and_change_nothing(api, body):
    response = api("POST", DOMAINS, json=body)
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"
    assert response.get_json()["details"]
    assert api("GET", DOMAINS).get_json()["total"] == 0


def test_the_org_max_domains_setting_is_enforced(api):
    assert api("PATCH", "/orgs/{org}/settings", json={"max_domains": 1}).status_code == 200
    assert api("POST", DOMAINS, json={"domain_name": "one.acme.test"}).status_code == 201
    refused = api("POST", DOMAINS, json={"domain_name": "two.acme.test"})
    assert refused.status_code == 409
    assert refused.get_json()["limit"] == 1


def test_the_list_is_paginated_searchable_and_filterable(api):
    for name, description in (("alpha.acme.test", "Billing"), ("beta.acme.test", ""),
                              ("gamma.acme.test", "")):
        api("POST", DOMAINS, json={"domain_name": name, "description": description})
    page = api("GET", DOMAINS + "?per_page=2&page=2").get_json()
    assert {k: page[k] for k in ("total", "page", "per_page", "total_pages")} == {
        "total": 3, "page": 2, "per_page": 2, "total_pages": 2}
    assert [d["domain_name"] for d in page["data"]] == ["gamma.acme.test"]
    assert [d["domain_name"] for d in api("GET", DOMAINS + "?q=billing").get_json()["data"]] == [
        "alpha.acme.test"]
    assert api("GET", DOMAINS + "?status=verified").get_json()["total"] == 0
    assert api("GET", DOMAINS + "?status=pending").get_json()["total"] == 3
    assert api("GET", DOMAINS + "?status=bogus").status_code == 400


def test_a_domain_is_read_and_edited_by_id(api, domain):
    path = DOMAINS + "/{domain}"
    assert api("GET", path).get_json() == domain
    response = api("PATCH", path, json={"description": "QA", "settings": {"inbox_max_ttl": "2h"}})
    assert response.status_code == 200
    assert (response.get_json()["description"], response.get_json()["settings"]) == (
        "QA", {"inbox_max_ttl": "2h"})
    refused = api("PATCH", path, json={"settings": {"inbox_max_ttl": "9999h"}})
    assert refused.status_code == 400
    assert "inbox_max_ttl" in refused.get_json()["details"]
    assert api("PATCH", path, json={"domain_name": "renamed.test"}).status_code == 400


@pytest.mark.parametrize("suffix", ["", "/impact", "/verification-history"])
def test_unknown_domain_ids_are_404_and_malformed_ones_400(api, suffix):
    response = api("GET", f"{DOMAINS}/{uuid.uuid4()}{suffix}")
    assert (response.status_code, response.get_json()["code"]) == (404, "not_found")
    for did in ("not-a-uuid", "42"):
        response = api("GET", f"{DOMAINS}/{did}{suffix}")
        assert (response.status_code, response.get_json()["code"]) == (400, "validation_error")
        assert response.get_json()["details"] == {"domain_id": ["Not a valid UUID."]}


@pytest.fixture
def checking(make_app, runtime, dns_server, world):
    """api(...) as org A's owner on an app whose DNS is the loopback server."""
    app = make_app(**{"dns.nameservers": (dns_server.nameserver,), "dns.timeout": "1s",
                      "smtp.hostname": MX_HOST})
    return world_caller(app.test_client(), world, "owner")


def test_verify_checks_dns_in_the_request_and_answers_200_with_the_domain_and_its_result(
        checking, runtime, dns_server, world, domain):
    with runtime.db.session() as session:
        dns_server.publish(zone(session.get(Domain, world.ids["domain"]), spf=True))
    response = checking("POST", DOMAINS + "/{domain}/verify")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert set(body) == DOMAIN_KEYS | {"check"}
    assert (body["status"], body["txt_verified"], body["mx_verified"], body["spf_verified"]) == (
        "verified", True, True, True)
    assert body["dns_last_checked_at"] is not None
    assert set(body["check"]) == CHECK_KEYS
    assert (body["check"]["trigger"], body["check"]["status"]) == (MANUAL, "verified")
    history = checking("GET", DOMAINS + "/{domain}/verification-history").get_json()["data"]
    assert history[0] == body["check"]
    with runtime.db.session() as session:
        # The check ran here: no manual check was handed to the worker.
        triggers = [data["trigger"] for data in session.scalars(
            select(Event.data).where(Event.name == CHECK_REQUESTED))]
        actions = session.scalars(select(AuditEntry.action)
                                  .where(AuditEntry.resource_id == str(world.ids["domain"]))).all()
    assert triggers == ["auto_create"]
    assert "domain.verify" in actions


def test_verify_with_dns_failing_answers_200_keeping_the_previous_result(
        checking, dns_server, domain):
    dns_server.fail(SERVFAIL)
    response = checking("POST", DOMAINS + "/{domain}/verify")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["status"], body["dns_last_checked_at"]) == ("pending", None)
    assert set(body["check"]["details"]["errors"]) == {"txt", "mx"}
    assert body["check"]["details"]["kept_previous"] == ["txt_verified", "spf_verified",
                                                         "mx_verified"]


def test_the_verification_history_lists_checks_newest_first(api, runtime, dns_server, world,
                                                             domain):
    checking = dns_settings(runtime.settings, dns_server)
    with runtime.db.transaction() as session:
        row = session.get(Domain, world.ids["domain"])
        run_check(session, checking, row, "auto_create")
        dns_server.publish(zone(row))
        run_check(session, checking, row, MANUAL)
    history = api("GET", DOMAINS + "/{domain}/verification-history").get_json()
    assert history["total"] == 2
    newest = history["data"][0]
    assert set(newest) == CHECK_KEYS
    assert (newest["trigger"], newest["status"], newest["txt_verified"],
            newest["mx_verified"]) == (MANUAL, "verified", True, True)
    assert UTC_Z.match(newest["checked_at"])
    assert history["data"][1]["status"] == "failed"
    current = api("GET", DOMAINS + "/{domain}").get_json()
    assert current["status"] == "verified"
    assert current["dns_last_checked_at"] == newest["checked_at"]


def test_impact_counts_what_deletion_removes(api, assignment):
    assert api("GET", DOMAINS + "/{domain}/impact").get_json() == {
        "assignments": 1, "inboxes": 0, "active_inboxes": 0, "emails": 0}


def test_delete_removes_the_domain_and_its_assignments(api, assignment):
    deleted = api("DELETE", DOMAINS + "/{domain}")
    assert (deleted.status_code, deleted.get_json()) == (200, {"message": "Domain deleted"})
    assert api("GET", DOMAINS + "/{domain}").status_code == 404
    assert api("GET", ASSIGNMENTS).get_json()["total"] == 0


def test_delete_with_active_inboxes_is_409_with_counts_unless_forced(api, world, domain,
                                                                     live_inboxes):
    live_inboxes(world.ids["domain"], 2)
    refused = api("DELETE", DOMAINS + "/{domain}")
    assert refused.status_code == 409
    assert refused.get_json()["impact"]["active_inboxes"] == 2
    assert api("DELETE", DOMAINS + "/{domain}?force=true").status_code == 200


def test_transfer_is_for_system_administrators_and_drops_assignments(api, world, assignment):
    body = {"target_org_id": str(world.ids["other_org"])}
    assert api("POST", DOMAINS + "/{domain}/transfer", json=body).status_code == 403
    moved = api("POST", DOMAINS + "/{domain}/transfer", "sysadmin", json=body)
    assert moved.status_code == 200
    assert moved.get_json()["org_id"] == str(world.ids["other_org"])
    assert api("GET", ASSIGNMENTS).get_json()["total"] == 0
    assert api("GET", "/orgs/{other_org}/domains/{domain}", "outsider").status_code == 200
    assert api("GET", DOMAINS + "/{domain}").status_code == 404


def test_transfer_refuses_an_unknown_target_and_the_same_org(api, world, domain):
    path = DOMAINS + "/{domain}/transfer"
    unknown = api("POST", path, "sysadmin", json={"target_org_id": str(uuid.uuid4())})
    same = api("POST", path, "sysadmin", json={"target_org_id": str(world.ids["org"])})
    assert (unknown.status_code, same.status_code) == (404, 400)


def test_bulk_verify_reports_every_id_and_ignores_other_orgs(api, world, domain):
    theirs = api("POST", "/orgs/{other_org}/domains", "outsider",
                 json={"domain_name": "theirs.test"}).get_json()["id"]
    missing = str(uuid.uuid4())
    response = api("POST", DOMAINS + "/bulk-verify",
                   json={"domain_ids": [domain["id"], theirs, missing]})
    assert response.status_code == 200
    assert response.get_json() == {
        "results": [{"id": domain["id"], "status": "ok"}, {"id": theirs, "status": "not_found"},
                    {"id": missing, "status": "not_found"}],
        "counts": {"ok": 1, "not_found": 2}}


def test_bulk_delete_reports_failures_and_never_touches_other_orgs(api, world, domain,
                                                                   live_inboxes):
    busy = api("POST", DOMAINS, json={"domain_name": "busy.acme.test"}).get_json()["id"]
    live_inboxes(uuid.UUID(busy), 1)
    theirs = api("POST", "/orgs/{other_org}/domains", "outsider",
                 json={"domain_name": "theirs.test"}).get_json()["id"]
    response = api("POST", DOMAINS + "/bulk-delete",
                   json={"domain_ids": [domain["id"], busy, theirs]})
    results = response.get_json()["results"]
    assert [(r["id"], r["status"]) for r in results] == [
        (domain["id"], "ok"), (busy, "failed"), (theirs, "not_found")]
    assert "active inboxes" in results[1]["error"]
    assert api("GET", "/orgs/{other_org}/domains", "outsider").get_json()["total"] == 1
    assert [d["id"] for d in api("GET", DOMAINS).get_json()["data"]] == [busy]


@pytest.mark.parametrize("ids", [[], ["nope"], [str(uuid.uuid4()) for _ in range(51)]])
def test_bulk_requests_take_one_to_fifty_valid_ids(api, ids):
    for action in ("bulk-verify", "bulk-delete"):
        response = api("POST", f"{DOMAINS}/{action}", json={"domain_ids": ids})
        assert response.status_code == 400


# -- assignments ------------------------------------------------------------------------------

def test_assigning_answers_201_with_the_assignment(world, assignment, domain):
    assert set(assignment) == ASSIGNMENT_KEYS
    assert (assignment["domain_id"], assignment["domain_name"], assignment["team_id"],
            assignment["access_level"], assignment["settings"]) == (
        domain["id"], "mail.acme.test", str(world.ids["team"]), "full", {})


def test_a_team_gets_a_domain_once_and_only_its_orgs(api, world, assignment, domain):
    again = api("POST", ASSIGNMENTS, json={"domain_id": domain["id"], "access_level": "read_only"})
    assert again.status_code == 409
    theirs = api("POST", "/orgs/{other_org}/domains", "outsider",
                 json={"domain_name": "theirs.test"}).get_json()["id"]
    foreign = api("POST", ASSIGNMENTS, json={"domain_id": theirs, "access_level": "full"})
    assert foreign.status_code == 400
    bad_level = api("POST", ASSIGNMENTS, json={"domain_id": domain["id"], "access_level": "all"})
    assert bad_level.status_code == 400


def test_assignments_are_listed_edited_and_removed_by_domain_id(api, assignment):
    listed = api("GET", ASSIGNMENTS).get_json()
    assert listed["total"] == 1 and listed["data"] == [assignment]
    path = ASSIGNMENTS + "/{domain}"
    edited = api("PATCH", path, json={"access_level": "create_inbox",
                                      "settings": {"inbox_default_ttl": "5m"}})
    assert edited.status_code == 200
    assert (edited.get_json()["access_level"], edited.get_json()["settings"]) == (
        "create_inbox", {"inbox_default_ttl": "5m"})
    assert edited.get_json()["id"] == assignment["id"]
    removed = api("DELETE", path)
    assert (removed.status_code, removed.get_json()) == (200, {
        "message": "Domain assignment deleted"})
    assert api("DELETE", path).status_code == 404
    assert api("GET", DOMAINS + "/{domain}").status_code == 200  # the domain stays the org's


def test_an_unassigned_domain_id_is_404_and_a_malformed_one_400(api, domain):
    assert api("PATCH", ASSIGNMENTS + "/{domain}", json={"access_level": "full"}).status_code \
        == 404
    assert api("DELETE", ASSIGNMENTS + "/not-a-uuid").status_code == 400


def test_my_domains_lists_what_each_caller_can_use(api, world, assignment):
    def mine(who):
        return api("GET", "/my/domains", who).get_json()

    listed = mine("team_member")
    assert listed["total"] == 1
    item = listed["data"][0]
    assert set(item) == ASSIGNMENT_KEYS | {"team_name", "org_id"}
    assert (item["id"], item["team_name"], item["org_id"]) == (
        assignment["id"], "Team T", str(world.ids["org"]))
    # Owners and admins reach every team; an org member outside the team, another org's user
    # and a user of no org see nothing.
    assert [mine(who)["total"] for who in ("owner", "admin", "lead", "member", "outsider",
                                           "stranger")] == [1, 1, 1, 0, 0, 0]
    assert api("POST", "/orgs/{org}/teams/{team}/archive").status_code == 200
    assert mine("team_member")["total"] == 0


def test_my_domains_needs_credentials(client):
    assert client.get("/api/v1/my/domains").status_code == 401


def test_my_domains_with_an_api_key_lists_its_teams_assignments_whatever_its_scopes(
        api, client, world, domain, assignment):
    other_team = api("POST", "/orgs/{org}/teams", json={"name": "Team T2"}).get_json()
    assert api("POST", f"/orgs/{{org}}/teams/{other_team['id']}/domains",
               json={"domain_id": domain["id"], "access_level": "full"}).status_code == 201
    assert api("GET", "/my/domains").get_json()["total"] == 2  # the owner reaches both teams

    def listed(key):
        return client.get("/api/v1/my/domains", headers=key_auth(key["raw_key"]))

    # A key reaches its own team only, whoever made it; and the reference system checks no
    # scope here, so neither do we: a key made to create inboxes finds where to create them.
    for who, scopes in (("owner", ["team.domains.view"]), ("lead", ["team.inboxes.create"]),
                        ("lead", ["team.webhooks.view"])):
        response = listed(make_key(client, world, who, scopes=scopes))
        assert response.status_code == 200, (who, scopes, response.get_json())
        assert [item["id"] for item in response.get_json()["data"]] == [assignment["id"]]


# -- isolation and permissions ----------------------------------------------------------------

# (method, path, permission, body): every domain endpoint under an org.
ROUTES = [
    ("POST", DOMAINS, "org.domains.manage", {"domain_name": "new.acme.test"}),
    ("GET", DOMAINS, "org.domains.view", None),
    ("GET", DOMAINS + "/{domain}", "org.domains.view", None),
    ("PATCH", DOMAINS + "/{domain}", "org.domains.manage", {"description": "x"}),
    ("DELETE", DOMAINS + "/{domain}", "org.domains.manage", None),
    ("POST", DOMAINS + "/{domain}/verify", "org.domains.manage", None),
    ("GET", DOMAINS + "/{domain}/verification-history", "org.domains.view", None),
    ("GET", DOMAINS + "/{domain}/impact", "org.domains.view", None),
    ("POST", DOMAINS + "/{domain}/transfer", SYSTEM_ADMIN, {"target_org_id": "{other_org}"}),
    ("POST", DOMAINS + "/bulk-verify", "org.domains.manage", {"domain_ids": ["{domain}"]}),
    ("POST", DOMAINS + "/bulk-delete", "org.domains.manage", {"domain_ids": ["{domain}"]}),
    ("POST", ASSIGNMENTS, "team.domains.manage", {"domain_id": "{domain}",
                                                  "access_level": "read_only"}),
    ("GET", ASSIGNMENTS, "team.domains.view", None),
    ("PATCH", ASSIGNMENTS + "/{domain}", "team.domains.manage", {"access_level": "full"}),
    ("DELETE", ASSIGNMENTS + "/{domain}", "team.domains.manage", None),
]


@pytest.mark.parametrize("route", ROUTES, ids=route_id)
def test_every_caller_gets_exactly_what_their_roles_grant(api, world, domain, route):
    method, template, permission, body = route
    if template.startswith(ASSIGNMENTS + "/"):
        # PATCH and DELETE need an assignment to act on.
        assert api("POST", ASSIGNMENTS, json={"domain_id": domain["id"],
                                               "access_level": "full"}).status_code == 201
    refused = [who for who in CALLERS if who == "outsider" or permission == SYSTEM_ADMIN
               or permission not in HOLDS[who]]
    for who in refused:  # a refusal changes nothing, so the next caller finds the same state
        response = api(method, template, who, json=fill_ids(body, world))
        expected = 404 if who == "outsider" else 403
        assert response.status_code == expected, (who, response.get_json())
        assert response.get_json()["code"] == ("not_found" if expected == 404 else "forbidden")
    holders = [who for who in CALLERS if who not in refused]
    # Every holder reads; a change is made once, by the least privileged holder.
    for who in holders if method == "GET" else holders[-1:]:
        response = api(method, template, who, json=fill_ids(body, world))
        assert response.status_code < 400, (who, response.get_json())


@pytest.mark.parametrize("route", ROUTES, ids=route_id)
def test_every_endpoint_refuses_a_request_without_credentials(client, world, domain, route):
    method, template, _, body = route
    response = client.open(world.path(template), method=method, json=fill_ids(body, world))
    assert response.status_code == 401


def test_another_orgs_domain_is_not_found_under_ones_own_org_even_for_an_owner(api, world):
    theirs = api("POST", "/orgs/{other_org}/domains", "outsider",
                 json={"domain_name": "theirs.test"}).get_json()["id"]
    world.ids["theirs"] = uuid.UUID(theirs)
    for method, template in (("GET", DOMAINS + "/{theirs}"), ("PATCH", DOMAINS + "/{theirs}"),
                             ("DELETE", DOMAINS + "/{theirs}"),
                             ("POST", DOMAINS + "/{theirs}/verify"),
                             ("GET", DOMAINS + "/{theirs}/impact"),
                             ("GET", DOMAINS + "/{theirs}/verification-history"),
                             ("PATCH", ASSIGNMENTS + "/{theirs}"),
                             ("DELETE", ASSIGNMENTS + "/{theirs}")):
        response = api(method, template, json={})
        assert response.status_code == 404, (method, template)
    transfer = api("POST", DOMAINS + "/{theirs}/transfer", "sysadmin",
                   json={"target_org_id": str(world.ids["org"])})
    assert transfer.status_code == 404
    assert api("GET", "/orgs/{other_org}/domains/{theirs}", "outsider").status_code == 200


@pytest.mark.parametrize("route", ROUTES, ids=route_id)
def test_every_endpoint_documents_its_permission(client, route):
    method, template, permission, _ = route
    document = client.get("/api/v1/docs/openapi.json").get_json()
    path = "/api/v1" + template.replace("{org}", "{org_id}").replace(
        "{team}", "{team_id}").replace("{domain}", "{domain_id}")
    operation = document["paths"][path][method.lower()]
    if permission == SYSTEM_ADMIN:
        assert operation["x-system-admin-only"] is True
    else:
        assert operation["x-required-permission"] == permission
    assert {"401", "403", "404"} <= set(operation["responses"])


# -- no input produces a 500 ------------------------------------------------------------------

ODD = [None, 0, -1, 10**30, 1.5, True, [], {}, "", " ", "\x00", "a\x00b.test", "a" * 10_000,
       "ü" * 300, "../../etc/passwd", "<script>alert(1)</script>", {"$ne": 1}, ["x"],
       {"inbox_max_ttl": "\x00"}, {"\x00": 1}, {"max_inboxes_per_domain": 10**30}]

BODIES = [
    ("POST", DOMAINS, {"domain_name": "odd.acme.test", "description": "d"}),
    ("PATCH", DOMAINS + "/{domain}", {"description": "d", "settings": {}}),
    ("POST", DOMAINS + "/{domain}/transfer", {"target_org_id": "{other_org}"}),
    ("POST", DOMAINS + "/bulk-verify", {"domain_ids": ["{domain}"]}),
    ("POST", DOMAINS + "/bulk-delete", {"domain_ids": [str(uuid.uuid4())], "force": False}),
    ("POST", ASSIGNMENTS, {"domain_id": "{domain}", "access_level": "full", "settings": {}}),
    ("PATCH", ASSIGNMENTS + "/{domain}", {"access_level": "full", "settings": {}}),
]


def _no_500(response):
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        assert set(response.get_json()) >= {"error", "code"}


@pytest.mark.parametrize(("method", "template", "body"), BODIES,
                         ids=[f"{m} {t}" for m, t, _ in BODIES])
def test_odd_values_in_any_field_never_produce_a_500(api, world, assignment, method, template,
                                                     body):
    who = "sysadmin" if template.endswith("/transfer") else "owner"
    for name in body:
        for value in ODD:
            _no_500(api(method, template, who, json={**fill_ids(body, world), name: value}))
    for raw in ("", "null", "[]", '"text"', "{", "1"):
        _no_500(api(method, template, who, data=raw, content_type="application/json"))


@pytest.mark.parametrize("query", ["q=%00", "q=" + "x" * 5000, "q=%25%5F%5C", "status=%00",
                                   "page=0", "per_page=abc", "page=99999999999999999999",
                                   "force=maybe"])
def test_odd_queries_never_produce_a_500(api, assignment, query):
    for template in (DOMAINS, DOMAINS + "/{domain}/verification-history", ASSIGNMENTS,
                     "/my/domains"):
        _no_500(api("GET", f"{template}?{query}"))
    _no_500(api("DELETE", f"{DOMAINS}/{{domain}}?{query}"))


def test_an_org_owner_cannot_register_a_name_the_operator_trusts(api):
    response = api("POST", DOMAINS, json={"domain_name": "BurnBox.test"})
    assert response.status_code == 403
    assert response.get_json()["code"] == "forbidden"
    assert "reserved by the operator" in response.get_json()["error"]
    assert api("GET", DOMAINS).get_json()["total"] == 0


def test_a_trusted_domain_shows_as_trusted_with_an_operator_check(client, runtime, world):
    """A system administrator who owns an org registers the trusted name through the API."""
    with runtime.db.transaction() as session:
        session.get(type(world.users["owner"]), world.users["owner"].id).is_system_admin = True
    api = world_caller(client, world, "owner")
    created = api("POST", DOMAINS, json={"domain_name": "burnbox.test"})
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    assert (body["status"], body["trusted"], body["txt_verified"]) == ("verified", True, False)
    world.ids["domain"] = uuid.UUID(body["id"])
    [check] = api("GET", DOMAINS + "/{domain}/verification-history").get_json()["data"]
    assert (check["trigger"], check["status"]) == ("operator", "verified")
    assert check["details"]["requested_by"] == "auto_create"


# -- duration settings at every level -----------------------------------------------------------

@pytest.mark.parametrize("path", ["/orgs/{org}/settings", "/orgs/{org}/teams/{team}",
                                  DOMAINS + "/{domain}", ASSIGNMENTS + "/{domain}"])
@pytest.mark.parametrize("value", ["1" * 900_000 + "h", "\uff11h", "1\u0660m"])
def test_a_ttl_setting_too_long_or_with_non_ascii_digits_is_a_400_at_every_level(
        api, assignment, path, value):
    # An uncapped 900 kB duration once held a worker's CPU for 29 s; fullwidth and other
    # non-ASCII digits once passed as durations.
    body = {"inbox_max_ttl": value}
    response = api("PATCH", path, json=body if "settings" in path else {"settings": body})
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"
    assert "inbox_max_ttl" in response.get_json()["details"]
    shown = api("GET", path).get_json()
    assert shown.get("settings", shown).get("inbox_max_ttl") is None
