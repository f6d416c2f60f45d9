"""User management by system administrators: the list, PATCH (flags, session limit, disabling),
DELETE, ending every session, and switching the sign-in method."""

import uuid

from sqlalchemy import select

from models.apikeys.keys import ApiKey
from models.identity.sessions import UserSession
from models.identity.users import User
from models.mail.inboxes import Inbox
from models.platform.audit import AuditEntry
from tests.apikey_helpers import key_auth, make_key
from tests.factories.identity import auth_headers, make_password_user, make_user
from tests.factories.mail import make_inbox, make_mail_world
from tests.factories.tenancy import make_org
from tests.identity import PASSWORD, bearer, login, sign_in

ADMIN = "/api/v1/admin"
ME = "/api/v1/auth/me"


def _entries(runtime, action, user_id):
    with runtime.db.session() as session:
        return list(session.scalars(select(AuditEntry).where(
            AuditEntry.action == action, AuditEntry.resource_id == str(user_id))))


def _user(runtime, user_id):
    with runtime.db.session() as session:
        return session.get(User, user_id)


def test_users_are_listed_searched_and_filtered(client, runtime, world):
    headers = world.headers["sysadmin"]
    with runtime.db.transaction() as session:
        make_user(session, "sso_person", display_name="Single Sign-On Person")
        make_password_user(session, runtime.settings, email="pw@example.test",
                           display_name="Pass Word")
    body = client.get(ADMIN + "/users?per_page=100", headers=headers).get_json()
    assert body["total"] == len(world.users) + 2
    assert all("password_hash" not in user for user in body["data"])

    def emails(query):
        response = client.get(ADMIN + "/users?per_page=100&" + query, headers=headers)
        assert response.status_code == 200, response.get_json()
        return {user["email"] for user in response.get_json()["data"]}

    assert emails("q=PASS%20WORD") == {"pw@example.test"}  # the name, any case
    assert emails("q=pw@EXAMPLE") == {"pw@example.test"}  # the address, any case
    assert emails("system_admin=true") == {world.users["sysadmin"].email}
    # Only the password user has a password: the factory users sign in as SSO users would.
    assert emails("sso_only=false") == {"pw@example.test"}
    assert len(emails("sso_only=true")) == len(world.users) + 1
    assert emails("disabled=true") == set()
    bad = client.get(ADMIN + "/users?disabled=maybe", headers=headers)
    assert bad.status_code == 400 and bad.get_json()["code"] == "validation_error"


def test_patch_changes_fields_and_audits_before_and_after(client, runtime, world):
    target = world.users["target"]
    response = client.patch(f"{ADMIN}/users/{target.id}", headers=world.headers["sysadmin"],
                            json={"display_name": "Renamed", "email_verified": True,
                                  "is_system_admin": True})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["display_name"], body["email_verified"], body["is_system_admin"]) == \
        ("Renamed", True, True)
    [entry] = _entries(runtime, "admin.user_update", target.id)
    assert entry.org_id is None and entry.actor_id == world.users["sysadmin"].id
    assert entry.before == {"display_name": "Target", "email_verified": False,
                            "is_system_admin": False}
    assert entry.after == {"display_name": "Renamed", "email_verified": True,
                           "is_system_admin": True}
    # A change to the same values changes and audits nothing.
    client.patch(f"{ADMIN}/users/{target.id}", headers=world.headers["sysadmin"],
                 json={"display_name": "Renamed"})
    assert len(_entries(runtime, "admin.user_update", target.id)) == 1


def test_patch_refuses_bad_values_and_changes_nothing(client, runtime, world):
    target = world.users["target"]
    # A mistyped flag (1, "true") once granted system administration: only JSON true/false.
    for body in ({"max_sessions": 0}, {"max_sessions": 101}, {"max_sessions": "5"},
                 {"display_name": ""}, {"unknown": 1}, {"is_system_admin": "yes please"},
                 {"is_system_admin": 1}, {"is_system_admin": "true"}, {"disabled": 1},
                 {"disabled": "true"}, {"email_verified": "1"}):
        response = client.patch(f"{ADMIN}/users/{target.id}", json=body,
                                headers=world.headers["sysadmin"])
        assert response.status_code == 400, body
        assert response.get_json()["code"] == "validation_error"
    stored = _user(runtime, target.id)
    assert stored.max_sessions is None
    assert (stored.is_system_admin, stored.disabled_at) == (False, None)
    assert _entries(runtime, "admin.user_update", target.id) == []


def test_nobody_demotes_or_disables_themselves(client, runtime, world):
    me = world.users["sysadmin"]
    for body in ({"is_system_admin": False}, {"disabled": True}):
        response = client.patch(f"{ADMIN}/users/{me.id}", json=body,
                                headers=world.headers["sysadmin"])
        assert response.status_code == 400 and response.get_json()["code"] == "validation_error"
    stored = _user(runtime, me.id)
    assert stored.is_system_admin and stored.disabled_at is None
    # Their own name they may change.
    renamed = client.patch(f"{ADMIN}/users/{me.id}", json={"display_name": "Root"},
                           headers=world.headers["sysadmin"])
    assert renamed.status_code == 200


def test_max_sessions_is_the_limit_the_next_login_meets(client, runtime, world):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings)
    sign_in(client)
    response = client.patch(f"{ADMIN}/users/{user.id}", json={"max_sessions": 1},
                            headers=world.headers["sysadmin"])
    assert response.status_code == 200 and response.get_json()["max_sessions"] == 1
    conflict = login(client)
    assert conflict.status_code == 409
    assert (conflict.get_json()["code"], conflict.get_json()["limit"]) == ("session_limit", 1)
    # null returns to the platform default (5): the login goes through.
    client.patch(f"{ADMIN}/users/{user.id}", json={"max_sessions": None},
                 headers=world.headers["sysadmin"])
    assert login(client).status_code == 200


def test_a_disabled_user_is_signed_out_and_refused_everywhere_until_enabled(
        client, runtime, world):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings)
        world.users["lead"] = session.merge(world.users["lead"])
        lead = world.users["lead"]
        lead.password_hash = user.password_hash
        lead.email = "lead-login@example.test"
    tokens = sign_in(client, "lead-login@example.test")
    raw_key = make_key(client, world, "lead")["raw_key"]
    assert client.get(ME, headers=bearer(tokens["access_token"])).status_code == 200

    response = client.patch(f"{ADMIN}/users/{lead.id}", json={"disabled": True},
                            headers=world.headers["sysadmin"])
    assert response.status_code == 200
    assert response.get_json()["disabled"] is True and response.get_json()["disabled_at"]

    assert client.get(ME, headers=bearer(tokens["access_token"])).status_code == 401
    refreshed = client.post("/api/v1/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert refreshed.status_code == 401
    refused = login(client, "lead-login@example.test")
    assert refused.status_code == 403 and refused.get_json()["code"] == "forbidden"
    assert login(client, "lead-login@example.test", "wrong password").status_code == 401
    key_refused = client.get(world.path("/orgs/{org}/teams/{team}"), headers=key_auth(raw_key))
    assert key_refused.status_code == 401
    assert key_refused.get_json()["error"] == "API key disabled"
    with runtime.db.session() as session:
        assert session.scalars(select(UserSession).where(
            UserSession.user_id == lead.id, UserSession.revoked_at.is_(None))).all() == []

    client.patch(f"{ADMIN}/users/{lead.id}", json={"disabled": False},
                 headers=world.headers["sysadmin"])
    assert login(client, "lead-login@example.test").status_code == 200
    assert client.get(world.path("/orgs/{org}/teams/{team}"),
                      headers=key_auth(raw_key)).status_code == 200


def test_ending_every_session_stops_access_tokens_at_once(client, runtime, world):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings)
    first, second = sign_in(client), sign_in(client)
    response = client.delete(f"{ADMIN}/users/{user.id}/sessions",
                             headers=world.headers["sysadmin"])
    assert response.status_code == 200 and response.get_json()["revoked"] == 2
    for tokens in (first, second):
        assert client.get(ME, headers=bearer(tokens["access_token"])).status_code == 401
    [entry] = _entries(runtime, "admin.user_sessions_revoke", user.id)
    assert entry.after["sessions_ended"] == 2 and entry.org_id is None
    # The user may sign in again.
    assert login(client).status_code == 200


def test_deleting_a_user_with_keys_sessions_inboxes_and_audit_rows_leaves_all_consistent(
        client, runtime):
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world, role="lead")
        admin = make_user(session, "root", is_system_admin=True)
    with runtime.db.transaction() as session:
        admin_headers = auth_headers(session, runtime.settings, admin)
    lead = world.users["lead"]
    raw_key = make_key(client, world, "lead")["raw_key"]
    lead_headers = world.headers["lead"]
    audited_before = len(_entries(runtime, "auth.login", lead.id)) + \
        len(_entries(runtime, "auth.session_revoke", lead.id))

    response = client.delete(f"{ADMIN}/users/{lead.id}", headers=admin_headers)
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {"message": "User deleted"}

    with runtime.db.session() as session:
        assert session.get(User, lead.id) is None
        assert session.scalars(select(UserSession).where(
            UserSession.user_id == lead.id)).all() == []
        [key] = session.scalars(select(ApiKey).where(ApiKey.team_id == world.ids["team"]))
        assert key.revoked_at is not None and key.created_by is None
        kept = session.get(Inbox, inbox.id)
        assert kept is not None and kept.created_by is None
        entries = session.scalars(select(AuditEntry).where(AuditEntry.actor_id == lead.id))
        assert len(list(entries)) >= 1  # the trail still names the user
    assert len(_entries(runtime, "auth.login", lead.id)) + \
        len(_entries(runtime, "auth.session_revoke", lead.id)) >= audited_before
    [entry] = _entries(runtime, "admin.user_delete", lead.id)
    assert entry.org_id is None and entry.before["email"] == lead.email
    assert entry.after["api_keys_revoked"] == 1
    assert client.get(ME, headers=lead_headers).status_code == 401
    assert client.get(world.path("/orgs/{org}/teams/{team}"),
                      headers=key_auth(raw_key)).status_code == 401


def test_nobody_deletes_themselves_here(client, runtime, world):
    me = world.users["sysadmin"]
    response = client.delete(f"{ADMIN}/users/{me.id}", headers=world.headers["sysadmin"])
    assert response.status_code == 400 and response.get_json()["code"] == "validation_error"
    assert _user(runtime, me.id) is not None


def test_the_only_owner_of_an_org_is_not_deleted(client, runtime, world):
    owner = world.users["owner"]
    response = client.delete(f"{ADMIN}/users/{owner.id}", headers=world.headers["sysadmin"])
    assert response.status_code == 409 and response.get_json()["code"] == "conflict"
    assert response.get_json()["org_ids"] == [str(world.ids["org"])]
    assert _user(runtime, owner.id) is not None
    assert _entries(runtime, "admin.user_delete", owner.id) == []


def test_another_system_administrator_can_be_deleted_and_demoted(client, runtime, world):
    with runtime.db.transaction() as session:
        other = make_user(session, "other_root", is_system_admin=True)
        spare = make_user(session, "spare_root", is_system_admin=True)
        make_org(session, world.users["sysadmin"], "Root's own")
    headers = world.headers["sysadmin"]
    assert client.patch(f"{ADMIN}/users/{spare.id}", json={"is_system_admin": False},
                        headers=headers).status_code == 200
    assert client.delete(f"{ADMIN}/users/{other.id}", headers=headers).status_code == 200
    assert not _user(runtime, spare.id).is_system_admin


def test_migrate_auth_to_sso_is_refused_without_an_sso_identity(client, runtime, world):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings)
    response = client.post(f"{ADMIN}/users/{user.id}/migrate-auth", json={"target": "sso"},
                           headers=world.headers["sysadmin"])
    assert response.status_code == 409 and response.get_json()["code"] == "conflict"
    assert "SSO identity" in response.get_json()["error"]
    assert login(client).status_code == 200  # the password still works


def test_migrate_auth_to_password_sets_a_checked_password_and_ends_sessions(
        client, runtime, world):
    target = world.users["target"]  # no password: signs in as an SSO user would
    url = f"{ADMIN}/users/{target.id}/migrate-auth"
    headers = world.headers["sysadmin"]
    missing = client.post(url, json={"target": "password"}, headers=headers)
    assert missing.status_code == 400 and "new_password" in missing.get_json()["details"]
    weak = client.post(url, json={"target": "password", "new_password": "x"}, headers=headers)
    assert weak.status_code == 400 and "new_password" in weak.get_json()["details"]
    unknown = client.post(url, json={"target": "ldap"}, headers=headers)
    assert unknown.status_code == 400

    done = client.post(url, json={"target": "password", "new_password": PASSWORD},
                       headers=headers)
    assert done.status_code == 200 and done.get_json()["auth_method"] == "password"
    assert client.get(ME, headers=world.headers["target"]).status_code == 401
    assert login(client, target.email, PASSWORD).status_code == 200
    [entry] = _entries(runtime, "admin.user_migrate_auth", target.id)
    assert (entry.before["auth_method"], entry.after["auth_method"]) == ("sso", "password")
    again = client.post(url, json={"target": "password"}, headers=headers)
    assert again.status_code == 409


def test_an_admin_acting_on_an_unknown_user_changes_nothing(client, runtime, world):
    unknown = uuid.uuid4()
    for method, path, body in (("PATCH", "", {"disabled": True}), ("DELETE", "", None),
                               ("DELETE", "/sessions", None),
                               ("POST", "/migrate-auth", {"target": "sso"})):
        response = client.open(f"{ADMIN}/users/{unknown}{path}", method=method, json=body,
                               headers=world.headers["sysadmin"])
        assert response.status_code == 404, (method, path)
