"""The system administrator's read side: /admin/stats, /orgs, /health, /version, and who may
reach any /admin route of this group."""

import re
import uuid

import pytest
import requests

from burnbox.kv import RedisStore
from burnbox.storage import FilesystemStorage
from models.admin.stats import platform_stats
from models.schema import heads
from tests.admin_helpers import assert_admin_only
from tests.factories.identity import auth_headers, make_user
from tests.web.conftest import serving

ADMIN = "/api/v1/admin"
SOME_ID = "00000000-0000-4000-8000-000000000001"
ROUTES = [("GET", "/stats", None), ("GET", "/orgs", None), ("GET", "/health", None),
          ("GET", "/version", None), ("GET", "/users", None),
          ("PATCH", f"/users/{SOME_ID}", {"display_name": "X"}),
          ("DELETE", f"/users/{SOME_ID}", None), ("DELETE", f"/users/{SOME_ID}/sessions", None),
          ("POST", f"/users/{SOME_ID}/migrate-auth", {"target": "password"})]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_only_a_signed_in_system_administrator_reaches_an_admin_route(
        client, runtime, world, method, path, body):
    assert_admin_only(client, runtime, world, method, ADMIN + path, body)


def test_every_route_is_documented_as_for_system_administrators(client):
    paths = client.get("/api/v1/docs/openapi.json").get_json()["paths"]
    for method, path, _body in ROUTES:
        documented = re.sub(SOME_ID, "{user_id}", ADMIN + path)
        operation = paths[documented][method.lower()]
        assert operation["x-system-admin-only"] is True, (method, path)
        assert {"401", "403"} <= set(operation["responses"])


def test_the_flag_is_read_from_the_database_so_a_demoted_admin_is_refused_at_once(
        client, runtime, world):
    headers = world.headers["sysadmin"]
    assert client.get(ADMIN + "/stats", headers=headers).status_code == 200
    with runtime.db.transaction() as session:
        session.merge(world.users["sysadmin"]).is_system_admin = False
    refused = client.get(ADMIN + "/stats", headers=headers)
    assert refused.status_code == 403 and refused.get_json()["code"] == "forbidden"


def test_stats_are_the_platform_figures(client, runtime, world):
    response = client.get(ADMIN + "/stats", headers=world.headers["sysadmin"])
    assert response.status_code == 200
    with runtime.db.session() as session:
        assert response.get_json() == platform_stats(session)
    body = response.get_json()
    assert set(body) == {"total_emails", "active_inboxes", "total_domains", "total_users",
                         "total_teams", "storage_used_bytes", "total_inboxes", "total_sessions",
                         "total_webhooks", "total_api_keys"}
    assert body["total_users"] == len(world.users)
    assert body["total_sessions"] == len(world.headers)


def test_orgs_are_listed_with_their_counts_and_searchable(client, world):
    headers = world.headers["sysadmin"]
    body = client.get(ADMIN + "/orgs", headers=headers).get_json()
    assert body["total"] == 2 and body["total_pages"] == 1
    by_name = {org["name"]: org for org in body["data"]}
    # Org A: the owner and five members; one team; no domain. Org B: its owner and its team.
    assert {key: by_name["Org A"][key] for key in ("member_count", "team_count",
                                                   "domain_count")} == \
        {"member_count": 6, "team_count": 1, "domain_count": 0}
    assert (by_name["Org B"]["member_count"], by_name["Org B"]["team_count"]) == (1, 1)
    assert by_name["Org A"]["id"] == str(world.ids["org"])

    found = client.get(ADMIN + "/orgs?q=org%20b", headers=headers).get_json()
    assert [org["name"] for org in found["data"]] == ["Org B"]
    # LIKE wildcards in the search are characters, not patterns.
    assert client.get(ADMIN + "/orgs?q=%25", headers=headers).get_json()["total"] == 0
    one = client.get(ADMIN + "/orgs?per_page=1&page=2", headers=headers).get_json()
    assert (one["total"], one["per_page"], one["total_pages"], len(one["data"])) == (2, 1, 2, 1)
    bad = client.get(ADMIN + "/orgs?page=0", headers=headers)
    assert bad.status_code == 400 and bad.get_json()["code"] == "validation_error"


def test_health_reports_each_datastore_with_its_latency(client, world):
    response = client.get(ADMIN + "/health", headers=world.headers["sysadmin"])
    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] == "ok" and body["uptime_seconds"] >= 0
    assert set(body["services"]) == {"database", "key_value_store", "object_storage"}
    for probe in body["services"].values():
        assert probe["status"] == "ok"
        assert probe["latency"] == f"{probe['latency_ms']:g}ms"


def test_health_is_503_naming_the_datastore_that_is_down(make_app, world, tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("storage cannot live under a file")
    app = make_app(store=RedisStore("redis://127.0.0.1:1/0"),
                   storage=FilesystemStorage(not_a_folder / "objects"))
    response = app.test_client().get(ADMIN + "/health", headers=world.headers["sysadmin"])
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    services = body["services"]
    assert services["database"]["status"] == "ok"
    assert services["key_value_store"]["status"].startswith("error: ")
    assert services["object_storage"]["status"].startswith("error: ")
    assert "127.0.0.1" not in response.get_data(as_text=True)


def test_version_names_the_release_commit_python_and_migrations(client, world):
    response = client.get(ADMIN + "/version", headers=world.headers["sysadmin"])
    assert response.status_code == 200
    body = response.get_json()
    assert body["migration_revision"] == body["migration_head"] == heads()[0]
    assert re.fullmatch(r"[0-9a-f]{40}", body["git_commit"])  # the tests run in a checkout
    assert re.fullmatch(r"3\.\d+\.\d+", body["python_version"])
    assert body["version"]


def test_an_unknown_user_is_404_and_a_malformed_id_400(client, world):
    headers = world.headers["sysadmin"]
    missing = client.patch(f"{ADMIN}/users/{uuid.uuid4()}", json={"display_name": "X"},
                           headers=headers)
    assert missing.status_code == 404 and missing.get_json()["code"] == "not_found"
    malformed = client.delete(f"{ADMIN}/users/not-a-uuid", headers=headers)
    assert malformed.status_code == 400


def test_health_on_a_committing_server_answers_ok_while_the_request_holds_its_transaction(
        committed_runtime):
    # On SQLite every transaction takes the write lock (BEGIN IMMEDIATE), and the request's
    # own session holds it from the moment the caller is authenticated: a probe that opened a
    # second write transaction waited for its own thread until the busy timeout (30 s), then
    # reported the database down. The timeout below only turns such a hang into a failure.
    with committed_runtime.db.transaction() as session:
        admin = make_user(session, "root", is_system_admin=True)
        headers = auth_headers(session, committed_runtime.settings, admin)
    with serving(committed_runtime) as base:
        response = requests.get(f"{base}{ADMIN}/health", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert body["services"]["database"]["status"] == "ok"
