"""GET/PUT /admin/platform: the configuration is the floor, the database overrides it key by key,
every key is bounded, every change is audited, and the identity and tenancy rules follow it at
once (they read the overrides on every use, or, with Redis, keep them under a revision that
every change moves)."""

from datetime import timedelta

import pytest
from sqlalchemy import select

from models.identity.users import VERIFY_EMAIL, AccountToken, User
from models.platform.audit import AuditEntry
from models.platform.settings import PLATFORM_UPDATED, PlatformSettings
from tests.admin_helpers import assert_admin_only
from tests.identity import login
from tests.statements import recorded

PATH = "/api/v1/admin/platform"


def _put(client, world, **body):
    return client.put(PATH, json=body, headers=world.headers["sysadmin"])


def test_get_shows_the_configuration_and_nothing_overridden(client, world):
    response = client.get(PATH, headers=world.headers["sysadmin"])
    assert response.status_code == 200
    body = response.get_json()
    assert body["overridden"] == [] and body["revision"] == 0 and body["updated_at"] is None
    assert (body["allow_registration"], body["max_sessions_per_user"], body["default_inbox_ttl"],
            body["max_inbox_ttl"], body["lockout_max_attempts"], body["webhook_timeout"],
            body["demo_enabled"]) == (True, 5, "10m0s", "24h0m0s", 10, "10s", False)


def test_every_platform_route_refuses_an_org_owner_and_a_system_admins_api_key(client, runtime,
                                                                               world):
    assert_admin_only(client, runtime, world, "GET", PATH)
    assert_admin_only(client, runtime, world, "PUT", PATH, {"max_teams": 3})
    with runtime.db.session() as session:
        assert session.get(PlatformSettings, 1) is None  # nothing was written


def test_put_pins_keys_and_null_unpins_them(client, runtime, world):
    response = _put(client, world, max_teams=3, default_inbox_ttl="2h", allow_registration=False)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["max_teams"], body["default_inbox_ttl"], body["allow_registration"]) == (
        3, "2h0m0s", False)
    assert body["overridden"] == ["allow_registration", "default_inbox_ttl", "max_teams"]
    assert body["revision"] == 1
    assert client.get(PATH, headers=world.headers["sysadmin"]).get_json() == body

    again = _put(client, world, max_teams=None).get_json()
    assert again["max_teams"] == 0  # the configured value again
    assert again["overridden"] == ["allow_registration", "default_inbox_ttl"]
    assert again["revision"] == 2


def test_every_change_is_audited_without_an_org_with_before_and_after(client, runtime, world):
    _put(client, world, max_teams=3, webhook_max_retries=5)
    with runtime.db.session() as session:
        [entry] = session.scalars(select(AuditEntry).where(AuditEntry.action == PLATFORM_UPDATED))
        assert (entry.org_id, entry.actor_id) == (None, world.users["sysadmin"].id)
        assert entry.before == {"max_teams": 0, "webhook_max_retries": 3}
        assert entry.after == {"max_teams": 3, "webhook_max_retries": 5}


def test_bad_values_are_400_naming_the_key_and_change_nothing(client, runtime, world):
    _put(client, world, max_teams=3)
    for body in ({"password_min_length": 5}, {"password_min_length": 129},
                 {"lockout_max_attempts": 101}, {"max_sessions_per_user": -1},
                 {"webhook_timeout": "2m"}, {"webhook_timeout": "soon"},
                 {"max_domains": "7"}, {"max_domains": 1.5}, {"max_teams": True},
                 {"default_inbox_ttl": "0s"}, {"max_inbox_ttl": "366d"},
                 {"default_inbox_ttl": "2h", "max_inbox_ttl": "1h"},
                 {"max_teams": 4, "no_such_key": 1}, {"allow_registration": "maybe"},
                 {"allow_registration": 1}, {"demo_enabled": "yes"}, {"demo_enabled": "true"}):
        response = _put(client, world, **body)
        assert response.status_code == 400, body
        answer = response.get_json()
        assert answer["code"] == "validation_error", body
        assert set(answer.get("details", {})) & (set(body) | {"json"}), (body, answer)
    after = client.get(PATH, headers=world.headers["sysadmin"]).get_json()
    assert (after["max_teams"], after["revision"]) == (3, 1)


def test_registration_and_the_password_policy_follow_the_platform(client, world):
    _put(client, world, allow_registration=False)
    body = {"email": "new@example.test", "password": "long enough pass", "display_name": "N"}
    assert client.post("/api/v1/auth/register", json=body).status_code == 403
    _put(client, world, allow_registration=True, password_min_length=20)
    refused = client.post("/api/v1/auth/register", json=body)
    assert refused.status_code == 400
    assert "at least 20" in str(refused.get_json()["details"])


def test_the_orgs_effective_settings_follow_the_platform_ttls_and_limits(client, world):
    _put(client, world, default_inbox_ttl="30m", max_inbox_ttl="2h", max_domains=4)
    response = client.get(world.path("/orgs/{org}/settings"), headers=world.headers["owner"])
    effective = response.get_json()["effective"]
    assert (effective["inbox_default_ttl"], effective["inbox_max_ttl"],
            effective["max_domains"]) == ("30m0s", "2h0m0s", 4)


def test_the_lockout_follows_the_platform(client, world, runtime):
    _put(client, world, lockout_max_attempts=2, lockout_duration="5m")
    email = world.users["member"].email
    wrong = {"email": email, "password": "not the password"}
    answers = [client.post("/api/v1/auth/login", json=wrong).status_code for _ in range(3)]
    assert answers == [401, 401, 429]


def test_a_put_that_changes_nothing_makes_no_revision_and_no_audit_entry(client, runtime, world):
    _put(client, world, max_teams=3)
    again = _put(client, world, max_teams=3)
    assert (again.status_code, again.get_json()["revision"]) == (200, 1)
    with runtime.db.session() as session:
        entries = session.scalars(select(AuditEntry).where(
            AuditEntry.action == PLATFORM_UPDATED)).all()
    assert len(entries) == 1


def test_the_new_keys_show_their_configured_defaults(client, world):
    body = client.get(PATH, headers=world.headers["sysadmin"]).get_json()
    assert {key: body[key] for key in (
        "require_email_verification", "email_verification_ttl", "attachments_enabled",
        "max_attachment_size_mb", "timezone", "date_format", "time_format")} == {
        "require_email_verification": False, "email_verification_ttl": "48h0m0s",
        "attachments_enabled": True, "max_attachment_size_mb": 25, "timezone": "UTC",
        "date_format": "YYYY-MM-DD", "time_format": "24h"}


def test_bad_values_of_the_new_keys_are_400_naming_the_key(client, world):
    for body in ({"require_email_verification": "yes"}, {"email_verification_ttl": "5m"},
                 {"email_verification_ttl": "31d"}, {"attachments_enabled": 1},
                 {"max_attachment_size_mb": 101}, {"max_attachment_size_mb": -1},
                 {"timezone": "Mars/Olympus"}, {"timezone": 3}, {"date_format": "YY"},
                 {"time_format": "25h"}):
        response = _put(client, world, **body)
        assert response.status_code == 400, body
        assert set(response.get_json()["details"]) & (set(body) | {"json"}), body
    assert client.get(PATH, headers=world.headers["sysadmin"]).get_json()["revision"] == 0


def test_required_verification_refuses_an_unverified_password_login_after_the_password(
        client, runtime, world, user):
    assert login(client).status_code == 200
    _put(client, world, require_email_verification=True)
    refused = login(client)
    assert refused.status_code == 403
    assert refused.get_json()["code"] == "forbidden"
    assert "verify your e-mail address" in refused.get_json()["error"]
    # A wrong password still says only that: nothing tells the address has an account.
    assert login(client, password="not the password").status_code == 401
    assert login(client, email="nobody@example.test").status_code == 401
    with runtime.db.transaction() as session:
        session.get(User, user.id).email_verified = True
    assert login(client).status_code == 200


def test_required_verification_is_off_again_when_unpinned(client, world, user):
    _put(client, world, require_email_verification=True)
    assert login(client).status_code == 403
    _put(client, world, require_email_verification=None)
    assert login(client).status_code == 200


def test_the_verification_link_lives_as_long_as_the_platform_says(client, runtime, world):
    _put(client, world, email_verification_ttl="2h")
    registered = client.post("/api/v1/auth/register", json={
        "email": "new@example.test", "password": "long enough pass", "display_name": "N"})
    assert registered.status_code == 201
    with runtime.db.session() as session:
        [token] = session.scalars(select(AccountToken).where(
            AccountToken.purpose == VERIFY_EMAIL))
    assert token.expires_at - token.created_at == timedelta(hours=2)


def test_new_accounts_start_with_the_platforms_date_and_time_defaults(client, world):
    _put(client, world, timezone="Europe/Berlin", date_format="DD.MM.YYYY", time_format="12h")
    registered = client.post("/api/v1/auth/register", json={
        "email": "new@example.test", "password": "long enough pass", "display_name": "N"})
    headers = {"Authorization": f"Bearer {registered.get_json()['tokens']['access_token']}"}
    answer = client.get("/api/v1/auth/datetime-settings", headers=headers).get_json()
    assert (answer["timezone"], answer["date_format"], answer["time_format"]) == (
        "Europe/Berlin", "DD.MM.YYYY", "12h")


def test_the_new_keys_are_audited_with_before_and_after(client, runtime, world):
    _put(client, world, attachments_enabled=False, timezone="Asia/Tokyo")
    with runtime.db.session() as session:
        [entry] = session.scalars(select(AuditEntry).where(AuditEntry.action == PLATFORM_UPDATED))
    assert entry.before == {"attachments_enabled": True, "timezone": "UTC"}
    assert entry.after == {"attachments_enabled": False, "timezone": "Asia/Tokyo"}


@pytest.mark.postgres  # only with Redis: without it nothing is cached (models.platform.settings)
def test_a_web_process_keeps_the_platform_settings_between_requests(client, engine, world):
    settings = world.path("/orgs/{org}/settings")
    assert client.get(settings, headers=world.headers["owner"]).status_code == 200  # fills it
    with recorded(engine) as statements:
        assert client.get(settings, headers=world.headers["owner"]).status_code == 200
    assert [s for s in statements if "platform_settings" in s] == [], statements


def test_a_platform_change_in_one_process_reaches_another_at_its_next_request(
        client, other_process, world):
    settings = world.path("/orgs/{org}/settings")

    def default_ttl() -> str:
        response = other_process.get(settings, headers=world.headers["owner"])
        assert response.status_code == 200, response.get_json()
        return response.get_json()["effective"]["inbox_default_ttl"]

    assert default_ttl() != "45m0s"  # the other process has read (with Redis, kept) them
    assert _put(client, world, default_inbox_ttl="45m").status_code == 200
    assert default_ttl() == "45m0s"


def test_a_put_answers_its_own_change_and_the_next_request_sees_it(client, world):
    settings = world.path("/orgs/{org}/settings")
    assert client.get(settings, headers=world.headers["owner"]).status_code == 200
    changed = _put(client, world, default_inbox_ttl="50m")
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json()["default_inbox_ttl"] == "50m0s"
    effective = client.get(settings, headers=world.headers["owner"]).get_json()["effective"]
    assert effective["inbox_default_ttl"] == "50m0s"
