"""The audit trail endpoints: entry shape, every filter (400 for unknown values), pagination
newest first, permissions and tenant isolation, the platform list for system administrators,
and the streamed export (headers, CSV columns, formula cells defused, JSON array)."""

import csv
import io
import json
import uuid
from datetime import timedelta

import pytest

from burnbox.timeutil import isoformat, utcnow
from models.platform.audit import Origin, record_audit
from models.platform.audit_formats import COLUMNS, defuse
from tests.apikey_helpers import key_auth, make_key
from tests.tenancy import world_caller

AUDIT = "/orgs/{org}/audit"
EXPORT = "/orgs/{org}/audit/export"
SHAPE = {"id", "created_at", "org_id", "actor_id", "actor_email", "actor_display_name", "action",
         "severity", "category", "resource_type", "resource_id", "resource_name", "ip_address",
         "user_agent", "metadata"}


@pytest.fixture
def api(client, world):
    return world_caller(client, world, "owner")


def _entries(api, template=AUDIT, who="owner", **query):
    response = api("GET", template, who=who, query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_entries_show_actor_resource_origin_severity_and_category(api, world, client):
    renamed = client.patch(world.path("/orgs/{org}"), json={"name": "Org A2"},
                           headers={**world.headers["owner"], "User-Agent": "auditor/1.0"})
    assert renamed.status_code == 200, renamed.get_json()
    body = _entries(api, action="org.update")
    [entry] = body["data"]
    assert set(entry) == SHAPE
    owner = world.users["owner"]
    assert entry["actor_id"] == str(owner.id)
    assert entry["actor_email"] == owner.email
    assert entry["actor_display_name"] == owner.display_name
    assert entry["org_id"] == str(world.ids["org"])
    assert entry["resource_id"] == str(world.ids["org"])
    assert (entry["severity"], entry["category"]) == ("warning", "org")
    assert entry["ip_address"] == "127.0.0.1"
    assert entry["user_agent"] == "auditor/1.0"
    assert entry["metadata"]["after"]["name"] == "Org A2"
    assert entry["metadata"]["before"]["name"] == "Org A"
    assert entry["resource_name"] == "Org A2"


def test_the_list_is_newest_first_and_paginated(api):
    everything = _entries(api, per_page=100)
    stamps = [(entry["created_at"], entry["id"]) for entry in everything["data"]]
    assert stamps == sorted(stamps, reverse=True)
    assert everything["total"] >= 4
    first, second = _entries(api, per_page=2, page=1), _entries(api, per_page=2, page=2)
    assert [e["id"] for e in first["data"] + second["data"]] == [
        e["id"] for e in everything["data"][:4]]
    assert first["total_pages"] == -(-everything["total"] // 2)
    assert first["total_capped"] is everything["total_capped"] is False


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("action", "org.member_add", {"org.member_add"}),
    ("category", "member", {"org.member_add", "org.invite_create", "team.member_add"}),
    ("category", "team", {"team.create", "team.leave"}),
    ("severity", "warning", {"org.invite_create"}),
    ("resource_type", "team", {"team.create"}),
    ("resource_name", "tEAm t", {"team.create"}),
])
def test_each_filter_keeps_only_matching_entries(api, name, value, expected):
    body = _entries(api, **{name: value}, per_page=100)
    assert {entry["action"] for entry in body["data"]} == expected
    assert body["total"] == len(body["data"]) > 0


def test_actor_filters_by_id_and_email(api, world, runtime):
    with runtime.db.transaction() as session:
        record_audit(session, "webhook.create", actor_id=world.users["admin"].id,
                     org_id=world.ids["org"], resource_type="webhook", resource_id=uuid.uuid4(),
                     ip=None, user_agent=None)
    by_id = _entries(api, actor_id=str(world.users["admin"].id))
    by_email = _entries(api, actor_email=world.users["admin"].email.upper())
    assert [e["action"] for e in by_id["data"]] == [e["action"] for e in by_email["data"]] == [
        "webhook.create"]


def test_the_date_range_is_from_inclusive_to_exclusive(api, world, runtime):
    with runtime.db.transaction() as session:
        entry = record_audit(session, "webhook.update", actor_id=None, org_id=world.ids["org"],
                             resource_type="webhook", resource_id=None, ip=None, user_agent=None)
        entry.created_at = utcnow() + timedelta(days=3)
        moment = entry.created_at
    assert [e["action"] for e in _entries(api, date_from=isoformat(moment))["data"]] == [
        "webhook.update"]
    assert "webhook.update" not in {
        e["action"] for e in _entries(api, date_to=isoformat(moment), per_page=100)["data"]}


@pytest.mark.parametrize("query", [
    {"severity": "fatal"}, {"category": "billing"}, {"actor_id": "nope"},
    {"date_from": "yesterday"}, {"date_to": "2026-13-01T00:00:00Z"}, {"severity": "INFO"},
    {"resource_name": ""},
])
def test_unknown_or_malformed_filters_are_400(api, query):
    for template, extra in ((AUDIT, {}), (EXPORT, {"format": "csv"})):
        response = api("GET", template, query_string={**extra, **query})
        assert response.status_code == 400, (template, response.get_json())
        assert response.get_json()["code"] == "validation_error"


def test_a_page_below_one_is_400(api):
    assert api("GET", AUDIT, query_string={"page": "0"}).status_code == 400


def test_the_export_needs_a_known_format(api):
    for query in ({}, {"format": "xml"}):
        response = api("GET", EXPORT, query_string=query)
        assert response.status_code == 400
        assert response.get_json()["code"] == "validation_error"


def test_members_read_but_do_not_export_and_other_orgs_are_404(api, world, client):
    # Org members hold every org *.view permission, org.audit.view included, but not export.
    assert api("GET", AUDIT, who="member").status_code == 200
    assert api("GET", EXPORT, who="member", query_string={"format": "csv"}).status_code == 403
    for template in (AUDIT, EXPORT):
        query = {"format": "json"}
        assert api("GET", template, who="outsider", query_string=query).status_code == 404
        assert api("GET", template.replace("{org}", "{other_org}"),
                   query_string=query).status_code == 404
    assert api("GET", AUDIT, who="admin").status_code == 200
    key = make_key(client, world, "owner")
    for template in (AUDIT, EXPORT, "/admin/audit"):
        response = client.get(world.path(template), headers=key_auth(key["raw_key"]))
        assert response.status_code == 403, template


def test_the_org_list_never_shows_another_orgs_entries(api, world):
    seen = {entry["org_id"] for entry in _entries(api, per_page=100)["data"]}
    assert seen == {str(world.ids["org"])}


def test_the_platform_list_is_for_system_administrators(api, world, runtime):
    with runtime.db.transaction() as session:
        record_audit(session, "auth.password_reset", actor_id=world.users["target"].id,
                     resource_type="user", resource_id=world.users["target"].id, ip="10.0.0.9",
                     user_agent=None)
    body = _entries(api, "/admin/audit", who="sysadmin", severity="critical")
    assert [e["action"] for e in body["data"]] == ["auth.password_reset"]
    assert body["data"][0]["org_id"] is None
    assert body["data"][0]["category"] == "auth"
    assert api("GET", "/admin/audit", who="owner").status_code == 403


def _export(api, format_, **query):
    response = api("GET", EXPORT, query_string={"format": format_, **query})
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return response


def test_the_csv_export_has_the_columns_and_an_attachment_name(api):
    response = _export(api, "csv", category="member")
    assert response.headers["Content-Type"].startswith("text/csv")
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="audit_export_')
    assert disposition.endswith('.csv"')
    rows = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    assert tuple(rows[0]) == COLUMNS
    assert {row[COLUMNS.index("action")] for row in rows[1:]} == {
        "org.member_add", "org.invite_create", "team.member_add"}
    assert "X-RateLimit-Limit" in response.headers


@pytest.mark.parametrize("name", ["=HYPERLINK(\"http://x\")", "  +1+1", "-2", "@SUM(A1)",
                                  "\t=cmd",
                                  # invisible characters before the formula once hid it
                                  "\u200b=cmd", "\ufeff=cmd", " \u200e+1", "\u2060\u00a0@x",
                                  "\tplain", "\rplain"])
def test_formula_cells_are_defused(api, world, runtime, name):
    with runtime.db.transaction() as session:
        record_audit(session, "team.update", actor_id=None, org_id=world.ids["org"],
                     resource_type="team", resource_id=None, ip=None, user_agent=name,
                     after={"name": name})
    rows = list(csv.DictReader(io.StringIO(
        _export(api, "csv", action="team.update").get_data(as_text=True))))
    assert rows[0]["resource_name"] == "'" + name
    assert rows[0]["user_agent"] == "'" + name


@pytest.mark.parametrize("name", ["plain", "a=b", "\u200bplain", "1-2", ""])
def test_cells_that_are_no_formula_are_left_as_they_are(name):
    assert defuse(name) == name


def test_the_json_export_is_an_array_of_entries(api):
    response = _export(api, "json")
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Content-Disposition"].endswith('.json"')
    entries = json.loads(response.get_data())
    listed = _entries(api, per_page=100)["data"]
    assert entries == listed


def test_an_empty_export_is_a_header_or_an_empty_array(api):
    assert json.loads(_export(api, "json", action="nothing.happened").get_data()) == []
    assert _export(api, "csv", action="nothing.happened").get_data(as_text=True).strip() == (
        ",".join(COLUMNS))


def test_entries_written_through_the_cli_say_so(api, world, runtime):
    with runtime.db.transaction() as session:
        record_audit(session, "domain.create", actor_id=world.users["owner"].id,
                     org_id=world.ids["org"], resource_type="domain", resource_id=None,
                     **vars(Origin(channel="cli")), after={"domain_name": "mail.example.com"})
    [entry] = _entries(api, action="domain.create")["data"]
    assert entry["metadata"]["channel"] == "cli"
    assert entry["resource_name"] == "mail.example.com"
