"""API keys through the real handlers: the resource, its states, the rejection table, acting as
the creator, and what happens to a key when its creator goes."""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from burnbox.timeutil import utcnow
from models.apikeys.keys import ApiKey
from models.platform.audit import AuditEntry
from models.tenancy.rbac import (
    TEAM_PERMISSIONS,
    Permission,
    Role,
    RolePermission,
    invalidate_grants,
)
from tests.apikey_helpers import KEYS, flush, key_auth, make_key, stored
from tests.factories.apikeys import set_expiry
from tests.metrics_scrape import counted

FIELDS = {"id", "team_id", "org_id", "name", "prefix", "key_prefix", "scopes", "expires_at",
          "allowed_ips", "is_active", "request_count", "last_used_at", "last_used_ip",
          "created_by", "created_at", "updated_at", "revoked_at", "revoked_by"}
TEAM = "/orgs/{org}/teams/{team}"


def _make_key_maker(runtime, client, world):
    """Give the team member a custom team role that may manage keys but not members."""
    with runtime.db.transaction() as session:
        role = Role(id=uuid.uuid4(), scope="team", name="automation", description="automation",
                    rank=15, is_builtin=False, grants_all_teams=False)
        session.add(role)
        session.flush()
        for key in ("team.view", "team.apikeys.view", "team.apikeys.manage"):
            session.add(RolePermission(role_id=role.id, permission_key=key))
        invalidate_grants(session, runtime.store)
    response = client.patch(world.path(TEAM + "/members/") + str(world.ids["user_team_member"]),
                            json={"role": "automation"}, headers=world.headers["lead"])
    assert response.status_code == 200, response.get_json()


def _key_path(world, key, suffix=""):
    return world.path(KEYS) + f"/{key['id']}{suffix}"


def _error(response):
    return response.status_code, response.get_json()


# --- the resource -------------------------------------------------------------------------------

def test_a_new_key_is_bb_and_64_hex_and_only_its_hash_and_prefix_are_stored(runtime, client,
                                                                             world):
    created = make_key(client, world, scopes=["team.view", "team.members.view"],
                       expires_in="720h", allowed_ips=["203.0.113.9"])
    raw = created.pop("raw_key")
    assert re.fullmatch(r"bb_[0-9a-f]{64}", raw)
    assert set(created) == FIELDS
    assert created["prefix"] == created["key_prefix"] == raw[:11]
    assert created["scopes"] == ["team.members.view", "team.view"]
    assert created["team_id"] == str(world.ids["team"])
    assert created["org_id"] == str(world.ids["org"])
    assert created["created_by"] == str(world.ids["user_lead"])
    assert (created["is_active"], created["request_count"], created["last_used_at"],
            created["revoked_at"], created["revoked_by"]) == (True, 0, None, None, None)
    assert created["created_at"].endswith("Z")
    row = stored(runtime, created["id"])
    assert row.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in repr({column.key: getattr(row, column.key) for column in
                            ApiKey.__table__.columns})


def test_the_raw_key_is_never_shown_again_after_creation(client, world):
    created = make_key(client, world)
    headers = world.headers["lead"]
    fetched = client.get(_key_path(world, created), headers=headers).get_json()
    listed = client.get(world.path(KEYS), headers=headers).get_json()
    assert set(fetched) == FIELDS
    assert fetched["key_prefix"] == fetched["prefix"] == created["prefix"]
    assert [set(item) for item in listed["data"]] == [FIELDS]
    assert created["raw_key"] not in str(fetched) + str(listed)


def test_the_list_is_paginated_newest_first_with_revoked_keys_kept(client, world):
    made = [make_key(client, world, name=f"key {n}") for n in range(3)]
    client.delete(_key_path(world, made[0]), headers=world.headers["lead"])
    page = client.get(world.path(KEYS) + "?per_page=2", headers=world.headers["lead"]).get_json()
    assert (page["total"], page["page"], page["per_page"], page["total_pages"]) == (3, 1, 2, 2)
    assert [item["name"] for item in page["data"]] == ["key 2", "key 1"]
    second = client.get(world.path(KEYS) + "?page=2&per_page=2",
                        headers=world.headers["lead"]).get_json()
    assert [(item["name"], item["is_active"]) for item in second["data"]] == [("key 0", False)]


@pytest.mark.parametrize(("expires_in", "delta"), [
    ("720h", timedelta(hours=720)), ("90m", timedelta(minutes=90)),
    ("1h30m", timedelta(hours=1, minutes=30))])
def test_expires_in_is_a_go_duration_that_sets_expires_at(runtime, client, world, expires_in,
                                                          delta):
    before = utcnow()
    created = make_key(client, world, expires_in=expires_in)
    expires_at = stored(runtime, created["id"]).expires_at
    assert before + delta <= expires_at <= utcnow() + delta


def test_without_expires_in_a_key_never_expires(client, world):
    assert make_key(client, world)["expires_at"] is None
    assert make_key(client, world, expires_in=None)["expires_at"] is None


@pytest.mark.parametrize("expires_in", ["", "10", "ten hours", "-1h", "0", "0s", "1d", "1h-",
                                        "100000h", 5, ["1h"], "\uff11h", "1" * 900_000 + "h"])
def test_anything_but_a_positive_go_duration_is_a_400_naming_expires_in(runtime, client, world,
                                                                        expires_in):
    response = client.post(world.path(KEYS), json={"name": "x", "scopes": ["team.view"],
                                                   "expires_in": expires_in},
                           headers=world.headers["lead"])
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error"
    assert "expires_in" in body["details"]
    with runtime.db.session() as session:
        assert session.scalars(select(ApiKey)).all() == []


def test_allowed_ips_take_addresses_and_cidr_ranges_of_both_families(client, world):
    created = make_key(client, world, allowed_ips=[
        "203.0.113.7", "10.1.2.3/8", "2001:DB8::1", "2001:db8:abcd::/48", " 192.0.2.0/24 ",
        "203.0.113.7", "::ffff:198.51.100.4"])
    assert created["allowed_ips"] == ["203.0.113.7", "10.0.0.0/8", "2001:db8::1",
                                      "2001:db8:abcd::/48", "192.0.2.0/24", "198.51.100.4"]


@pytest.mark.parametrize("entry", ["999.1.1.1", "10.0.0.0/33", "host.example", "2001:db8::g",
                                   "10.0.0.1/8/8", "", "fe80::1%eth0/64"])
def test_an_allowed_ips_entry_that_is_no_address_or_range_is_a_400(client, world, entry):
    response = client.post(world.path(KEYS), json={"name": "x", "scopes": ["team.view"],
                                                   "allowed_ips": ["192.0.2.1", entry]},
                           headers=world.headers["lead"])
    assert response.status_code == 400
    assert "allowed_ips" in response.get_json()["details"]


@pytest.mark.parametrize("scopes", [["org.view"], ["team.nothing"], [], ["team.view", "admin"],
                                    "team.view", [None]])
def test_scopes_must_be_team_permission_keys_of_the_database(client, world, scopes):
    response = client.post(world.path(KEYS), json={"name": "x", "scopes": scopes},
                           headers=world.headers["lead"])
    assert response.status_code == 400
    assert "scopes" in response.get_json()["details"]


def test_a_team_permission_added_to_the_database_is_a_valid_scope_with_no_code_change(
        runtime, client, world):
    with runtime.db.transaction() as session:
        session.add(Permission(key="team.reports.view", scope="team",
                               description="view reports"))
    created = make_key(client, world, scopes=["team.reports.view", "team.view"])
    assert created["scopes"] == ["team.reports.view", "team.view"]


@pytest.mark.parametrize("body", [{"scopes": ["team.view"]}, {"name": "", "scopes": ["team.view"]},
                                  {"name": "x" * 201, "scopes": ["team.view"]},
                                  {"name": "x", "scopes": ["team.view"], "raw_key": "bb_x"},
                                  {"name": "x", "scopes": ["team.view"], "allowed_ips": "1.2.3.4"}])
def test_a_bad_create_body_is_a_400_and_makes_nothing(runtime, client, world, body):
    response = client.post(world.path(KEYS), json=body, headers=world.headers["lead"])
    assert response.status_code == 400
    with runtime.db.session() as session:
        assert session.scalars(select(ApiKey)).all() == []


def test_an_archived_team_refuses_new_keys_until_restored(client, world):
    owner = world.headers["owner"]
    assert client.post(world.path(TEAM + "/archive"), headers=owner).status_code == 200
    refused = client.post(world.path(KEYS), json={"name": "x", "scopes": ["team.view"]},
                          headers=world.headers["lead"])
    assert _error(refused) == (409, {"error": "the team is archived; restore it first",
                                     "code": "conflict"})
    assert client.post(world.path(TEAM + "/restore"), headers=owner).status_code == 200
    make_key(client, world)


def test_the_team_impact_counts_its_keys(client, world):
    make_key(client, world)
    make_key(client, world)
    impact = client.get(world.path(TEAM + "/impact"), headers=world.headers["lead"]).get_json()
    assert impact["api_keys"] == 2


def test_deleting_the_team_deletes_its_keys(runtime, client, world):
    created = make_key(client, world)
    response = client.delete(world.path(TEAM), headers=world.headers["owner"])
    assert response.status_code == 200
    assert stored(runtime, created["id"]) is None
    assert client.get(world.path(TEAM), headers=key_auth(created["raw_key"])).status_code == 401


def test_keys_of_another_team_are_not_found_through_this_team(runtime, client, world):
    other = make_key(client, world, "outsider", team="/orgs/{other_org}/teams/{other_team}")
    headers = world.headers["owner"]
    path = world.path(KEYS) + f"/{other['id']}"
    assert client.get(path, headers=headers).status_code == 404
    assert client.patch(path, json={"name": "mine"}, headers=headers).status_code == 404
    assert client.delete(path, headers=headers).status_code == 404
    assert client.post(path + "/rotate", headers=headers).status_code == 404
    assert stored(runtime, other["id"]).name == "ci"
    assert client.get(world.path(KEYS) + f"/{uuid.uuid4()}", headers=headers).status_code == 404


def test_reads_need_apikeys_view_and_changes_apikeys_manage(client, world):
    created = make_key(client, world)
    member = world.headers["team_member"]  # holds team.apikeys.view, not .manage
    assert client.get(world.path(KEYS), headers=member).status_code == 200
    assert client.get(_key_path(world, created), headers=member).status_code == 200
    for method, path, body in [("POST", world.path(KEYS), {"name": "x", "scopes": ["team.view"]}),
                               ("PATCH", _key_path(world, created), {"name": "y"}),
                               ("DELETE", _key_path(world, created), None),
                               ("POST", _key_path(world, created, "/rotate"), None),
                               ("POST", world.path(KEYS) + "/bulk-revoke",
                                {"key_ids": [created["id"]]})]:
        response = client.open(path, method=method, json=body, headers=member)
        assert _error(response) == (403, {"error": "missing permission team.apikeys.manage",
                                          "code": "forbidden"}), (method, path)
    outsider = world.headers["outsider"]
    assert client.get(world.path(KEYS), headers=outsider).status_code == 404


def test_every_change_is_audited_without_the_secret(runtime, client, world):
    created = make_key(client, world)
    lead = world.headers["lead"]
    client.patch(_key_path(world, created), json={"name": "renamed"}, headers=lead)
    rotated = client.post(_key_path(world, created, "/rotate"), headers=lead).get_json()
    client.delete(_key_path(world, created), headers=lead)
    second = make_key(client, world)
    client.post(world.path(KEYS) + "/bulk-revoke", json={"key_ids": [second["id"]]},
                headers=lead)
    with runtime.db.session() as session:
        entries = session.scalars(select(AuditEntry).where(AuditEntry.resource_type == "api_key")
                                  .order_by(AuditEntry.created_at)).all()
    assert [(entry.action, entry.resource_id) for entry in entries] == [
        ("apikey.create", created["id"]), ("apikey.update", created["id"]),
        ("apikey.rotate", created["id"]), ("apikey.revoke", created["id"]),
        ("apikey.create", second["id"]), ("apikey.revoke", second["id"])]
    assert {entry.actor_id for entry in entries} == {world.ids["user_lead"]}
    assert {entry.org_id for entry in entries} == {world.ids["org"]}
    assert entries[1].before["name"] == "ci" and entries[1].after["name"] == "renamed"
    text = str([(entry.before, entry.after) for entry in entries])
    for raw in (created["raw_key"], rotated["raw_key"], second["raw_key"]):
        assert raw not in text and hashlib.sha256(raw.encode()).hexdigest() not in text


# --- the rejection table ------------------------------------------------------------------------

def _team(client, world, headers):
    return client.get(world.path(TEAM), headers=headers)


@pytest.mark.parametrize("value", ["bb_" + "0" * 64, "bb_" + "A" * 64, "bb_short", "bb_",
                                   "bb_" + "0" * 65, "bb_" + "g" * 64])
def test_a_key_that_matches_no_stored_key_is_401_invalid_api_key(client, world, value):
    make_key(client, world)
    assert _error(_team(client, world, key_auth(value))) == (
        401, {"error": "invalid API key", "code": "unauthenticated"})


def test_a_key_past_its_expiry_is_401_api_key_expired(runtime, client, world):
    created = make_key(client, world, expires_in="1h")
    headers = key_auth(created["raw_key"])
    assert _team(client, world, headers).status_code == 200
    with runtime.db.transaction() as session:
        set_expiry(session, created["id"], utcnow() - timedelta(seconds=1))
    assert _error(_team(client, world, headers)) == (
        401, {"error": "API key expired", "code": "unauthenticated"})


def test_a_revoked_key_is_401_api_key_revoked(client, world):
    created = make_key(client, world)
    assert client.delete(_key_path(world, created), headers=world.headers["lead"]
                         ).status_code == 200
    assert _error(_team(client, world, key_auth(created["raw_key"]))) == (
        401, {"error": "API key revoked", "code": "unauthenticated"})


def test_a_disabled_key_is_401_api_key_disabled(client, world):
    created = make_key(client, world)
    response = client.patch(_key_path(world, created), json={"is_active": False},
                            headers=world.headers["lead"])
    assert response.get_json()["is_active"] is False
    assert _error(_team(client, world, key_auth(created["raw_key"]))) == (
        401, {"error": "API key disabled", "code": "unauthenticated"})


@pytest.mark.parametrize(("allowed", "client_ip", "accepted"), [
    (["203.0.113.7"], "203.0.113.7", True),
    (["203.0.113.7"], "203.0.113.8", False),
    (["10.0.0.0/8"], "10.200.3.4", True),
    (["10.0.0.0/8"], "11.0.0.1", False),
    (["2001:db8::/32"], "2001:db8:1::5", True),
    (["2001:db8::/32"], "2001:db9::5", False),
    (["2001:db8::/32"], "10.0.0.1", False),
    (["198.51.100.4"], "::ffff:198.51.100.4", True),
    ([], "192.0.2.200", True),
])
def test_the_ip_allowlist_is_checked_against_the_resolved_client_ip(make_app, world, allowed,
                                                                    client_ip, accepted):
    # The client address comes from X-Forwarded-For only because the test client's peer
    # (127.0.0.1) is a configured trusted proxy: the one resolved IP, as for rate limits.
    client = make_app(**{"http.trusted_proxies": ("127.0.0.1",)}).test_client()
    created = make_key(client, world, allowed_ips=allowed)
    headers = {**key_auth(created["raw_key"]), "X-Forwarded-For": client_ip}
    response = _team(client, world, headers)
    if accepted:
        assert response.status_code == 200
    else:
        assert _error(response) == (403, {"error": "IP not allowed for this API key",
                                          "code": "forbidden"})


def test_a_forwarded_for_from_an_untrusted_peer_cannot_satisfy_the_allowlist(client, world):
    created = make_key(client, world, allowed_ips=["203.0.113.7"])
    headers = {**key_auth(created["raw_key"]), "X-Forwarded-For": "203.0.113.7"}
    assert _team(client, world, headers).status_code == 403


def test_a_scope_the_key_lacks_is_403_insufficient_scope(client, world):
    created = make_key(client, world, scopes=["team.view"])
    response = client.get(world.path(TEAM + "/members"), headers=key_auth(created["raw_key"]))
    assert _error(response) == (403, {"error": "insufficient scope", "code": "forbidden"})


def test_the_checks_run_in_order_revoked_expired_disabled_then_ip(runtime, client, world):
    created = make_key(client, world, allowed_ips=["203.0.113.7"], expires_in="1h")
    headers = key_auth(created["raw_key"])
    assert _error(_team(client, world, headers))[1]["error"] == "IP not allowed for this API key"
    client.patch(_key_path(world, created), json={"is_active": False},
                 headers=world.headers["lead"])
    assert _error(_team(client, world, headers))[1]["error"] == "API key disabled"
    with runtime.db.transaction() as session:
        set_expiry(session, created["id"], utcnow() - timedelta(minutes=1))
    assert _error(_team(client, world, headers))[1]["error"] == "API key expired"
    client.delete(_key_path(world, created), headers=world.headers["lead"])
    assert _error(_team(client, world, headers))[1]["error"] == "API key revoked"


# --- state transitions ----------------------------------------------------------------------------

def test_a_disabled_key_is_enabled_again_by_patching_is_active_true(client, world):
    created = make_key(client, world)
    headers, lead = key_auth(created["raw_key"]), world.headers["lead"]
    client.patch(_key_path(world, created), json={"is_active": False}, headers=lead)
    assert _team(client, world, headers).status_code == 401
    enabled = client.patch(_key_path(world, created), json={"is_active": True}, headers=lead)
    assert enabled.status_code == 200 and enabled.get_json()["is_active"] is True
    assert _team(client, world, headers).status_code == 200


def test_revoking_keeps_the_row_with_who_and_when_and_nothing_changes_it_again(runtime, client,
                                                                               world):
    created = make_key(client, world)
    lead = world.headers["lead"]
    revoked = client.delete(_key_path(world, created), headers=lead)
    assert (revoked.status_code, revoked.get_json()) == (200, {"message": "API key revoked"})
    fetched = client.get(_key_path(world, created), headers=lead).get_json()
    assert fetched["revoked_by"] == str(world.ids["user_lead"])
    assert fetched["revoked_at"].endswith("Z") and fetched["is_active"] is False
    for method, suffix, body in [("PATCH", "", {"is_active": True}), ("PATCH", "", {"name": "n"}),
                                 ("POST", "/rotate", None)]:
        response = client.open(_key_path(world, created, suffix), method=method, json=body,
                               headers=lead)
        assert response.status_code == 409, (method, suffix)
        assert response.get_json()["code"] == "conflict"
    assert client.delete(_key_path(world, created), headers=lead).status_code == 200
    assert stored(runtime, created["id"]).revoked_at.isoformat().replace(
        "+00:00", "Z") == fetched["revoked_at"]


def test_rotation_invalidates_the_old_secret_at_once_and_keeps_everything_else(runtime, client,
                                                                               world):
    created = make_key(client, world, scopes=["team.view"], allowed_ips=["127.0.0.1"],
                       expires_in="2h")
    old = key_auth(created["raw_key"])
    assert _team(client, world, old).status_code == 200
    flush(runtime)
    rotated = client.post(_key_path(world, created, "/rotate"), headers=world.headers["lead"])
    assert rotated.status_code == 200
    body = rotated.get_json()
    assert set(body) == FIELDS | {"raw_key"}
    assert re.fullmatch(r"bb_[0-9a-f]{64}", body["raw_key"])
    assert body["raw_key"] != created["raw_key"]
    assert body["prefix"] == body["key_prefix"] == body["raw_key"][:11]
    for field in ("id", "name", "scopes", "allowed_ips", "expires_at", "created_at"):
        assert body[field] == created[field], field
    assert body["request_count"] == 1
    assert _error(_team(client, world, old)) == (401, {"error": "invalid API key",
                                                       "code": "unauthenticated"})
    assert _team(client, world, key_auth(body["raw_key"])).status_code == 200


def test_a_disabled_key_stays_disabled_through_rotation(client, world):
    created = make_key(client, world)
    lead = world.headers["lead"]
    client.patch(_key_path(world, created), json={"is_active": False}, headers=lead)
    rotated = client.post(_key_path(world, created, "/rotate"), headers=lead).get_json()
    assert rotated["is_active"] is False
    assert _error(_team(client, world, key_auth(rotated["raw_key"])))[1]["error"] == (
        "API key disabled")


def test_an_expired_key_cannot_be_rotated_back_to_life(runtime, client, world):
    created = make_key(client, world, expires_in="1h")
    with runtime.db.transaction() as session:
        set_expiry(session, created["id"], utcnow() - timedelta(seconds=1))
    response = client.post(_key_path(world, created, "/rotate"), headers=world.headers["lead"])
    assert response.status_code == 409


def test_patch_changes_name_scopes_and_allowlist_and_validates_like_create(client, world):
    created = make_key(client, world, scopes=["team.view"])
    lead = world.headers["lead"]
    changed = client.patch(_key_path(world, created), headers=lead, json={
        "name": " nightly ", "scopes": ["team.members.view"], "allowed_ips": ["192.0.2.0/24"]})
    assert changed.status_code == 200
    body = changed.get_json()
    assert (body["name"], body["scopes"], body["allowed_ips"]) == (
        "nightly", ["team.members.view"], ["192.0.2.0/24"])
    assert body["updated_at"] >= created["updated_at"]
    cleared = client.patch(_key_path(world, created), json={"allowed_ips": []}, headers=lead)
    assert cleared.get_json()["allowed_ips"] == []
    for bad in ({"scopes": ["org.delete"]}, {"scopes": []}, {"allowed_ips": ["nope"]},
                {"name": ""}, {"expires_in": "1h"}, {"is_active": "maybe"}):
        response = client.patch(_key_path(world, created), json=bad, headers=lead)
        assert response.status_code == 400, bad
    headers = key_auth(created["raw_key"])
    assert client.get(world.path(TEAM + "/members"), headers=headers).status_code == 200
    assert _error(_team(client, world, headers))[1]["error"] == "insufficient scope"


# --- bulk revoke ----------------------------------------------------------------------------------

def test_bulk_revoke_revokes_this_teams_keys_and_skips_every_other_id_untouched(runtime, client,
                                                                                world):
    first, second, gone = (make_key(client, world) for _ in range(3))
    lead = world.headers["lead"]
    client.delete(_key_path(world, gone), headers=lead)
    foreign = make_key(client, world, "outsider", team="/orgs/{other_org}/teams/{other_team}")
    unknown = str(uuid.uuid4())
    response = client.post(world.path(KEYS) + "/bulk-revoke", headers=lead, json={
        "key_ids": [first["id"], foreign["id"], second["id"], unknown, gone["id"], first["id"]]})
    assert response.status_code == 200
    assert response.get_json() == {"revoked": 2,
                                   "skipped": [foreign["id"], unknown, gone["id"]]}
    assert stored(runtime, first["id"]).revoked_by == world.ids["user_lead"]
    assert stored(runtime, second["id"]).revoked_at is not None
    untouched = stored(runtime, foreign["id"])
    assert (untouched.revoked_at, untouched.is_active) == (None, True)
    assert client.get(world.path("/orgs/{other_org}/teams/{other_team}"),
                      headers=key_auth(foreign["raw_key"])).status_code == 200


@pytest.mark.parametrize("body", [{}, {"key_ids": []}, {"key_ids": ["not-a-uuid"]},
                                  {"key_ids": [str(uuid.uuid4())] * 101}, {"key_ids": "x"}])
def test_a_bad_bulk_revoke_body_is_a_400(client, world, body):
    response = client.post(world.path(KEYS) + "/bulk-revoke", json=body,
                           headers=world.headers["lead"])
    assert response.status_code == 400


# --- a key acts as its creator --------------------------------------------------------------------

def test_a_key_never_has_more_than_its_creators_current_roles(runtime, client, world):
    # The member may make keys but not manage members; a key they make with that scope cannot.
    _make_key_maker(runtime, client, world)
    created = make_key(client, world, "team_member", scopes=["team.members.manage", "team.view"])
    response = client.post(world.path(TEAM + "/members"), headers=key_auth(created["raw_key"]),
                           json={"user_id": str(world.ids["user_member"]), "role": "member"})
    assert _error(response) == (403, {"error": "missing permission team.members.manage",
                                      "code": "forbidden"})


def test_a_key_follows_its_creators_role_when_it_changes(runtime, client, world):
    _make_key_maker(runtime, client, world)
    created = make_key(client, world, "team_member", scopes=["team.members.manage"])
    headers = key_auth(created["raw_key"])
    body = {"user_id": str(world.ids["user_member"]), "role": "member"}
    assert client.post(world.path(TEAM + "/members"), json=body,
                       headers=headers).status_code == 403
    promote = client.patch(world.path(TEAM + "/members/") + str(world.ids["user_team_member"]),
                           json={"role": "lead"}, headers=world.headers["owner"])
    assert promote.status_code == 200, promote.get_json()
    assert client.post(world.path(TEAM + "/members"), json=body,
                       headers=headers).status_code == 201


def test_a_key_of_a_system_admin_has_no_system_admin_rights(runtime, client, world):
    with runtime.db.transaction() as session:
        session.merge(world.users["owner"]).is_system_admin = True
    created = make_key(client, world, "owner", scopes=sorted(TEAM_PERMISSIONS))
    headers = key_auth(created["raw_key"])
    transfer = client.post(world.path(TEAM + "/transfer"), headers=headers,
                           json={"target_org_id": str(world.ids["other_org"])})
    assert _error(transfer) == (403, {"error": "system administrator only", "code": "forbidden"})
    as_user = client.post(world.path(TEAM + "/transfer"), headers=world.headers["owner"],
                          json={"target_org_id": str(world.ids["other_org"])})
    assert as_user.status_code == 200


def test_a_key_of_team_a_cannot_touch_team_b_of_the_same_org_or_another_org(client, world):
    owner = world.headers["owner"]
    team_b = client.post(world.path("/orgs/{org}/teams"), json={"name": "Team B"},
                         headers=owner).get_json()
    created = make_key(client, world, "owner", scopes=["team.view", "team.members.view",
                                                       "team.apikeys.view",
                                                       "team.apikeys.manage"])
    headers = key_auth(created["raw_key"])
    b = world.path("/orgs/{org}/teams/") + team_b["id"]
    for method, path in [("GET", b), ("GET", b + "/members"), ("GET", b + "/api-keys"),
                         ("POST", b + "/api-keys"),
                         ("GET", world.path("/orgs/{other_org}/teams/{other_team}")),
                         ("GET", world.path("/orgs/{other_org}/teams/{team}"))]:
        response = client.open(path, method=method, headers=headers,
                               json={"name": "x", "scopes": ["team.view"]})
        assert response.status_code == 404, (method, path)
        assert response.get_json()["code"] == "not_found"
    assert client.get(b, headers=owner).status_code == 200  # the owner themself reaches B
    assert _team(client, world, headers).status_code == 200


# --- a key acting on keys hands out no more than it holds ---------------------------------------

def test_a_key_cannot_make_or_widen_a_key_beyond_its_own_scopes(client, world):
    manager = make_key(client, world, scopes=["team.apikeys.manage", "team.view"])
    headers = key_auth(manager["raw_key"])
    wider = client.post(world.path(KEYS), json={"name": "x", "scopes": ["team.members.view"]},
                        headers=headers)
    assert _error(wider) == (403, {"error": "an API key cannot hand out scopes it does not hold",
                                   "code": "forbidden"})
    narrower = client.post(world.path(KEYS), json={"name": "x", "scopes": ["team.view"]},
                           headers=headers)
    assert narrower.status_code == 201
    widened = client.patch(world.path(KEYS) + f"/{narrower.get_json()['id']}", headers=headers,
                           json={"scopes": ["team.view", "team.members.manage"]})
    assert widened.status_code == 403
    broad = make_key(client, world, scopes=["team.members.manage", "team.view"])
    rotated = client.post(_key_path(world, broad, "/rotate"), headers=headers)
    assert rotated.status_code == 403
    assert client.delete(_key_path(world, broad), headers=headers).status_code == 200


def test_a_key_cannot_hand_out_addresses_or_a_lifetime_beyond_its_own(make_app, world):
    client = make_app(**{"http.trusted_proxies": ("127.0.0.1",)}).test_client()
    manager = make_key(client, world, scopes=["team.apikeys.manage", "team.view"],
                       allowed_ips=["10.0.0.0/8"], expires_in="24h")
    headers = {**key_auth(manager["raw_key"]), "X-Forwarded-For": "10.1.1.1"}

    def create(**body):
        return client.post(world.path(KEYS), headers=headers,
                           json={"name": "x", "scopes": ["team.view"], **body}).status_code

    assert create(allowed_ips=["10.2.0.0/16"], expires_in="1h") == 201
    assert create(allowed_ips=[], expires_in="1h") == 403
    assert create(allowed_ips=["11.0.0.0/16"], expires_in="1h") == 403
    assert create(allowed_ips=["2001:db8::/32"], expires_in="1h") == 403
    assert create(allowed_ips=["10.2.0.0/16"], expires_in="48h") == 403
    assert create(allowed_ips=["10.2.0.0/16"]) == 403


# --- when the creator goes, the key goes: it must not outlive the access it was made with ---------

def test_a_creator_removed_from_the_team_loses_their_keys_there(runtime, client, world):
    _make_key_maker(runtime, client, world)
    created = make_key(client, world, "team_member")
    response = client.delete(world.path(TEAM + "/members/") + str(world.ids["user_team_member"]),
                             headers=world.headers["lead"])
    assert response.status_code == 200
    assert _error(_team(client, world, key_auth(created["raw_key"])))[1]["error"] == (
        "API key revoked")
    row = stored(runtime, created["id"])
    assert (row.revoked_by, row.is_active) == (None, False)


def test_a_creator_leaving_the_team_loses_their_keys_there(runtime, client, world):
    _make_key_maker(runtime, client, world)
    created = make_key(client, world, "team_member")
    assert client.post(world.path(TEAM + "/leave"), headers=world.headers["team_member"]
                       ).status_code == 200
    assert _team(client, world, key_auth(created["raw_key"])).status_code == 401


def test_a_creator_left_behind_by_a_team_transfer_loses_their_keys_there(runtime, client,
                                                                        world):
    created = make_key(client, world, "lead")
    response = client.post(world.path(TEAM + "/transfer"), headers=world.headers["sysadmin"],
                           json={"target_org_id": str(world.ids["other_org"])})
    assert response.status_code == 200, response.get_json()
    row = stored(runtime, created["id"])
    assert (row.revoked_at is not None, row.org_id) == (True, world.ids["other_org"])
    with runtime.db.session() as session:
        entry = session.scalars(select(AuditEntry).where(
            AuditEntry.resource_id == created["id"], AuditEntry.action == "apikey.revoke")).one()
    assert entry.after["reason"] == "the creator left the team"


def test_a_creator_deactivated_in_the_org_loses_every_key_there(runtime, client, world):
    owner = world.headers["owner"]
    # The admin reaches team T through their org role, without being a member of it.
    created = make_key(client, world, "admin")
    in_team = make_key(client, world, "lead")
    response = client.post(world.path("/orgs/{org}/members/") + str(world.ids["user_admin"])
                           + "/deactivate", headers=owner)
    assert response.status_code == 200
    assert _team(client, world, key_auth(created["raw_key"])).get_json()["error"] == (
        "API key revoked")
    assert stored(runtime, created["id"]).revoked_at is not None
    assert stored(runtime, in_team["id"]).revoked_at is None
    with runtime.db.session() as session:
        entry = session.scalars(select(AuditEntry).where(
            AuditEntry.resource_id == created["id"], AuditEntry.action == "apikey.revoke")).one()
    assert entry.after["reason"] == "the creator left the org"


def test_a_creator_deleting_their_account_leaves_their_keys_revoked_and_kept(runtime, client,
                                                                             world):
    _make_key_maker(runtime, client, world)
    created = make_key(client, world, "team_member")
    # World users have no password: the session making the request confirms the deletion.
    response = client.delete("/api/v1/auth/me", json={}, headers=world.headers["team_member"])
    assert response.status_code == 200, response.get_json()
    row = stored(runtime, created["id"])
    assert row is not None and row.revoked_at is not None and row.created_by is None
    assert _error(_team(client, world, key_auth(created["raw_key"]))) == (
        401, {"error": "API key revoked", "code": "unauthenticated"})


# --- usage ---------------------------------------------------------------------------------------

def test_n_accepted_requests_show_as_exactly_n_after_a_flush(runtime, make_app, world):
    client = make_app(**{"http.trusted_proxies": ("127.0.0.1",)}).test_client()
    created = make_key(client, world, scopes=["team.view"])
    headers = {**key_auth(created["raw_key"]), "X-Forwarded-For": "198.51.100.23"}
    for _ in range(25):
        assert _team(client, world, headers).status_code == 200
    assert client.get(world.path(TEAM + "/members"), headers=headers).status_code == 403
    lead = world.headers["lead"]
    assert client.get(_key_path(world, created), headers=lead).get_json()["request_count"] == 0
    assert flush(runtime) == 1
    fetched = client.get(_key_path(world, created), headers=lead).get_json()
    assert fetched["request_count"] == 25
    assert fetched["last_used_ip"] == "198.51.100.23"
    assert fetched["last_used_at"] >= created["created_at"]
    assert fetched["updated_at"] == created["updated_at"]  # usage is not a change to the key
    assert flush(runtime) == 0
    for _ in range(5):
        _team(client, world, headers)
    flush(runtime)
    assert client.get(_key_path(world, created), headers=lead).get_json()["request_count"] == 30


# --- the documentation shows what the API does: clients copy the examples -------------------------

def test_the_docs_show_the_key_shape_and_the_exact_rejection_bodies():
    import json
    from pathlib import Path

    from models.apikeys import keys as apikeys

    text = (Path(__file__).resolve().parents[2] / "docs" / "api-keys.md").read_text()
    example = json.loads(re.findall(r"```json\n(.*?)```", text, re.S)[1])
    assert set(example) == FIELDS | {"raw_key"}
    assert re.fullmatch(r"bb_[0-9a-f]{64}", example["raw_key"])
    assert example["prefix"] == example["raw_key"][:11]
    rows = re.findall(r"^\| [^|]+ \| (\d{3}) \| `(\{.*?\})` \|$", text, re.M)
    documented = {(int(status), json.loads(body)["error"], json.loads(body)["code"])
                  for status, body in rows}
    assert documented == {
        (401, apikeys.INVALID, "unauthenticated"), (401, apikeys.REVOKED, "unauthenticated"),
        (401, apikeys.EXPIRED, "unauthenticated"), (401, apikeys.DISABLED, "unauthenticated"),
        (403, apikeys.IP_REFUSED, "forbidden"), (403, apikeys.INSUFFICIENT_SCOPE, "forbidden")}
    assert {apikeys.INVALID, apikeys.EXPIRED, apikeys.REVOKED, apikeys.DISABLED,
            apikeys.IP_REFUSED, apikeys.INSUFFICIENT_SCOPE} == {
        "invalid API key", "API key expired", "API key revoked", "API key disabled",
        "IP not allowed for this API key", "insufficient scope"}


def test_every_authentication_outcome_is_counted_under_its_own_label(runtime, make_app, world):
    client = make_app(**{"http.trusted_proxies": ("127.0.0.1",)}).test_client()
    outcomes = ("accepted", "invalid", "revoked", "expired", "disabled", "ip_refused",
                "insufficient_scope")
    before = {name: counted("burnbox_api_key_authentications_total", outcome=name)
              for name in outcomes}
    good, revoked, expired, disabled = (make_key(client, world) for _ in range(4))
    fenced = make_key(client, world, allowed_ips=["203.0.113.7"])
    narrow = make_key(client, world, scopes=["team.view"])
    client.delete(_key_path(world, revoked), headers=world.headers["lead"])
    with runtime.db.transaction() as session:
        set_expiry(session, expired["id"], utcnow() - timedelta(seconds=1))
    client.patch(_key_path(world, disabled), json={"is_active": False},
                 headers=world.headers["lead"])
    assert _team(client, world, key_auth(good["raw_key"])).status_code == 200
    assert _team(client, world, key_auth("bb_" + "0" * 64)).status_code == 401
    for key in (revoked, expired, disabled):
        assert _team(client, world, key_auth(key["raw_key"])).status_code == 401
    assert _team(client, world, {**key_auth(fenced["raw_key"]),
                                 "X-Forwarded-For": "203.0.113.8"}).status_code == 403
    assert client.get(world.path(TEAM + "/members"),
                      headers=key_auth(narrow["raw_key"])).status_code == 403
    grew = {name: counted("burnbox_api_key_authentications_total", outcome=name) - before[name]
            for name in outcomes}
    # The narrow key is accepted, then refused by the endpoint's scope.
    assert grew == {"accepted": 2, "invalid": 1, "revoked": 1, "expired": 1, "disabled": 1,
                    "ip_refused": 1, "insufficient_scope": 1}


@pytest.mark.postgres
def test_usage_counted_in_the_limiter_s_round_trip_takes_refused_requests_back(runtime, make_app,
                                                                              world):
    # A key this process knows is counted before it is authenticated, in the rate limiter's
    # round trip (web.key_usage.write_ahead); a request then refused must not stay counted.
    client = make_app(**{"rate_limits.authenticated": "4/minute"}).test_client()
    created = make_key(client, world, scopes=["team.view"])
    headers = key_auth(created["raw_key"])
    assert _team(client, world, headers).status_code == 200  # now known: counted ahead
    assert _team(client, world, headers).status_code == 200
    assert client.get(world.path(TEAM + "/members"), headers=headers).status_code == 403
    assert _team(client, world, headers).status_code == 200
    assert _team(client, world, headers).status_code == 429  # over 4/minute: never counted
    assert flush(runtime) == 1
    assert stored(runtime, created["id"]).request_count == 3


@pytest.mark.postgres
def test_usage_counted_ahead_for_a_key_then_refused_at_authentication_is_taken_back(
        runtime, make_app, world):
    # A revoked key stays in the callers' cache (its row is kept): counted ahead in the
    # limiter's round trip, it is then refused (401) before the view, and must not stay counted.
    client = make_app().test_client()
    created = make_key(client, world, scopes=["team.view"])
    headers = key_auth(created["raw_key"])
    assert _team(client, world, headers).status_code == 200
    revoked = client.delete(_key_path(world, created), headers=world.headers["lead"])
    assert revoked.status_code == 200, revoked.get_json()
    for _ in range(3):
        assert _team(client, world, headers).status_code == 401
    flush(runtime)
    assert stored(runtime, created["id"]).request_count == 1


@pytest.mark.postgres
def test_usage_counted_ahead_for_a_request_that_never_authenticates_is_taken_back(
        runtime, make_app, world):
    # A client that sends its key everywhere (public endpoints, unknown paths) is counted
    # ahead by the rate limiter; those requests never use the key and must not stay counted.
    client = make_app().test_client()
    created = make_key(client, world, scopes=["team.view"])
    headers = key_auth(created["raw_key"])
    assert _team(client, world, headers).status_code == 200
    assert client.get("/api/v1/roles", headers=headers).status_code == 200
    assert client.get("/api/v1/no-such-path", headers=headers).status_code == 404
    flush(runtime)
    assert stored(runtime, created["id"]).request_count == 1
