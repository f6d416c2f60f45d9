"""Accounts through the API: registration, login, lockout, profile, password change and reset,
e-mail verification, account deletion, bearer authentication."""

import dataclasses
import time
import uuid
from datetime import timedelta
from types import SimpleNamespace

import jwt
import pytest
from sqlalchemy import create_engine, select

import tasks
from burnbox.kv import RedisStore
from burnbox.security import encode_access_token
from burnbox.settings import RateLimitSettings
from models.db import Database
from models.identity.users import RESET_PASSWORD, AccountToken, User, issue_account_token
from models.platform.settings import lock_platform, validated_overrides
from models.tenancy.orgs import create_org
from tasks import start_worker
from tests.factories.identity import make_password_user, make_tokens, make_user
from tests.identity import EMAIL, PASSWORD, app_with, bearer, login, sign_in, token_in
from tests.smtp_sink import SmtpSink
from tests.web.conftest import audit_entries
from web import create_app

USER_FIELDS = {"id", "email", "display_name", "is_system_admin", "email_verified", "timezone",
               "date_format", "time_format", "theme", "max_sessions", "created_at", "updated_at",
               "last_login_at"}


def _register(client, email="new@example.test", password=PASSWORD, display_name="New User",
              **body):
    return client.post("/api/v1/auth/register", json={
        "email": email, "password": password, "display_name": display_name, **body})


def _users(runtime):
    with runtime.db.session() as session:
        return list(session.scalars(select(User).order_by(User.email)))


def _set_platform(runtime, **values):
    """Pin platform settings by their API names (PUT /admin/platform's keys)."""
    with runtime.db.transaction() as session:
        row = lock_platform(session)
        row.overrides = validated_overrides(row.overrides, values, runtime.settings)


@pytest.fixture
def mailbox(runtime, engine):
    """An app whose mail really goes out: send_mail on a worker thread, to an SMTP receiver.

    The worker reads (the mailer config in force) through connections of its own that only
    read: on the test runtime's one shared connection, a worker read interleaved with a
    request's savepoint made SQLite answer "no such savepoint", and a second connection that
    begins with BEGIN IMMEDIATE waits for the test's open write transaction."""
    sink = SmtpSink().start()
    relayed = dataclasses.replace(runtime, settings=runtime.settings.replace(**{
        "mailer.host": "127.0.0.1", "mailer.port": sink.port, "mailer.starttls": False,
        "http.public_url": "https://burnbox.example.test"}))
    reader = (create_engine(engine.url, connect_args={"check_same_thread": False})
              if engine.dialect.name == "sqlite" else engine)
    worker_side = dataclasses.replace(relayed, db=Database(relayed.settings, engine=reader))
    worker = start_worker(tasks.setup_broker(worker_side), threads=1)
    app = create_app(runtime=relayed)
    yield SimpleNamespace(sink=sink, client=app.test_client())
    worker.stop()
    sink.stop()


# Registration

def test_registering_answers_201_with_the_user_and_both_tokens(client):
    response = _register(client, email="New@Example.TEST")
    assert response.status_code == 201
    body = response.get_json()
    assert set(body) == {"user", "tokens"}
    user = body["user"]
    assert set(user) == USER_FIELDS
    assert user["email"] == "new@example.test"
    assert user["display_name"] == "New User"
    assert (user["is_system_admin"], user["email_verified"], user["max_sessions"]) == (
        False, False, None)
    assert (user["timezone"], user["date_format"], user["time_format"]) == (
        "UTC", "YYYY-MM-DD", "24h")
    assert user["created_at"].endswith("Z") and user["last_login_at"].endswith("Z")
    uuid.UUID(user["id"])
    tokens = body["tokens"]
    assert set(tokens) == {"access_token", "refresh_token", "token_type", "expires_in"}
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == 900


def test_the_tokens_of_a_registration_work_at_once(client):
    tokens = _register(client).get_json()["tokens"]
    me = client.get("/api/v1/auth/me", headers=bearer(tokens["access_token"]))
    assert me.status_code == 200
    assert me.get_json()["email"] == "new@example.test"


def test_registering_a_taken_address_gets_the_same_answer_and_creates_nothing(client, runtime):
    first = _register(client)
    second = _register(client, email="NEW@example.test")
    assert (first.status_code, second.status_code) == (201, 201)
    one, other = first.get_json(), second.get_json()
    assert set(other["user"]) == set(one["user"]) and set(other["tokens"]) == set(one["tokens"])
    assert other["user"]["email"] == "new@example.test"
    assert other["user"]["id"] != one["user"]["id"]
    assert [u.email for u in _users(runtime)] == ["new@example.test"]
    # The look-alike tokens name no session.
    me = client.get("/api/v1/auth/me", headers=bearer(other["tokens"]["access_token"]))
    assert me.status_code == 401
    refreshed = client.post("/api/v1/auth/refresh",
                            json={"refresh_token": other["tokens"]["refresh_token"]})
    assert refreshed.status_code == 401
    [entry] = audit_entries(runtime, "auth.register_existing_email")
    assert entry.resource_id == one["user"]["id"]


def test_registration_applies_the_platform_password_policy(client, runtime):
    _set_platform(runtime, password_min_length=12, password_require_upper=True,
                  password_require_number=True, password_require_special=True)
    response = _register(client, password="short")
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error"
    assert body["details"]["password"] == [
        "must be at least 12 characters", "must contain an upper-case letter",
        "must contain a digit", "must contain a character that is not a letter or digit"]
    assert _register(client, password="Long enough 1!").status_code == 201


def test_a_password_above_the_maximum_length_is_refused(client):
    response = _register(client, password="x" * 129)
    assert response.status_code == 400
    assert response.get_json()["details"]["password"] == ["must be at most 128 characters"]


@pytest.mark.parametrize("name", ["", "   ", "x" * 201])
def test_a_display_name_must_have_1_to_200_characters(client, name):
    response = _register(client, display_name=name)
    assert response.status_code == 400
    assert "display_name" in response.get_json()["details"]


def test_a_display_name_of_200_characters_is_accepted(client):
    assert _register(client, display_name="x" * 200).status_code == 201


@pytest.mark.parametrize("body", [
    {"email": "not-an-address", "password": PASSWORD, "display_name": "A"},
    {"password": PASSWORD, "display_name": "A"},
    {"email": "a@example.test", "password": PASSWORD, "display_name": "A", "admin": True},
])
def test_malformed_registrations_are_400_and_create_nothing(client, runtime, body):
    response = client.post("/api/v1/auth/register", json=body)
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"
    assert _users(runtime) == []


def test_registration_disabled_in_the_platform_settings_is_403(client, runtime):
    _set_platform(runtime, allow_registration=False)
    response = _register(client)
    assert response.status_code == 403
    assert response.get_json() == {"error": "registration is disabled", "code": "forbidden"}
    assert _users(runtime) == []


def test_registration_disabled_by_configuration_is_403(runtime):
    client = app_with(runtime, **{"defaults.registration_enabled": False}).test_client()
    assert _register(client).status_code == 403


def test_registration_mails_a_link_that_verifies_the_address_once(mailbox):
    tokens = _register(mailbox.client).get_json()["tokens"]
    [message] = mailbox.sink.wait_for(1)
    assert message["To"] == "new@example.test"
    assert message["Subject"] == "Verify your e-mail address"
    text = message.get_content()
    prefix = "https://burnbox.example.test/api/v1/auth/verify-email/"
    token = token_in(text, prefix)
    verified = mailbox.client.get(f"/api/v1/auth/verify-email/{token}")
    assert verified.status_code == 200
    assert verified.get_json() == {"email_verified": True}
    me = mailbox.client.get("/api/v1/auth/me", headers=bearer(tokens["access_token"]))
    assert me.get_json()["email_verified"] is True
    again = mailbox.client.get(f"/api/v1/auth/verify-email/{token}")
    assert again.status_code == 400
    assert again.get_json()["code"] == "validation_error"


def test_registering_a_taken_address_mails_its_owner_a_notice(mailbox):
    _register(mailbox.client)
    _register(mailbox.client)
    messages = mailbox.sink.wait_for(2)
    assert sorted(m["Subject"] for m in messages) == [
        "Verify your e-mail address", "Your Burnbox account"]


def test_an_unknown_verification_token_is_400(client):
    response = client.get("/api/v1/auth/verify-email/not-a-real-token")
    assert response.status_code == 400


# Login

def test_login_answers_the_user_and_tokens(client, runtime, user):
    response = login(client, email="USER@example.test")
    assert response.status_code == 200
    body = response.get_json()
    assert set(body["user"]) == USER_FIELDS
    assert body["user"]["last_login_at"] is not None
    assert set(body["tokens"]) == {"access_token", "refresh_token", "token_type", "expires_in"}
    [entry] = audit_entries(runtime, "auth.login")
    assert (entry.ip, entry.org_id, entry.actor_id) == ("127.0.0.1", None,
                                                       uuid.UUID(body["user"]["id"]))


def test_a_wrong_password_and_an_unknown_address_get_the_same_401(client, user):
    wrong = login(client, password="wrong password")
    unknown = login(client, email="nobody@example.test")
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.get_json() == unknown.get_json() == {
        "error": "invalid email or password", "code": "unauthenticated"}


def test_failed_logins_are_audited_as_platform_events(client, runtime, user):
    client.post("/api/v1/auth/login", headers={"User-Agent": "probe/1"},
                json={"email": "user@example.test", "password": "wrong password"})
    login(client, email="nobody@example.test")
    entries = sorted(audit_entries(runtime, "auth.login_failed"), key=lambda e: e.created_at)
    assert [e.actor_id for e in entries] == [user.id, None]
    assert all(e.org_id is None and e.ip == "127.0.0.1" for e in entries)
    assert entries[0].user_agent == "probe/1"
    assert entries[1].after == {"email": "nobody@example.test"}


def test_an_sso_only_user_cannot_log_in_with_a_password(client, runtime):
    with runtime.db.transaction() as session:
        make_user(session, email=EMAIL)
    assert login(client, password="").status_code == 400
    assert login(client).status_code == 401


def test_a_hash_with_old_parameters_is_upgraded_at_login(client, runtime):
    old = runtime.settings.replace(**{"auth.argon2_time_cost": 2})
    with runtime.db.transaction() as session:
        user = make_password_user(session, old)
    assert "t=2" in user.password_hash
    assert login(client).status_code == 200
    [stored] = _users(runtime)
    assert "t=1" in stored.password_hash


# Lockout

def _strict(runtime, duration=timedelta(minutes=10)):
    """A client whose lockout trips after 3 failures and lasts `duration`."""
    app = app_with(runtime, **{"auth.lockout_threshold": 3, "auth.lockout_duration": duration})
    return app.test_client()


@pytest.fixture
def strict(runtime):
    return _strict(runtime)


def test_repeated_failures_lock_the_address_for_a_limited_time(runtime, user):
    client = _strict(runtime, timedelta(seconds=2))
    for _ in range(3):
        assert login(client, password="wrong password").status_code == 401
    locked = login(client)
    assert locked.status_code == 429
    assert locked.get_json()["code"] == "rate_limited"
    time.sleep(2.2)
    assert login(client).status_code == 200


def test_an_unknown_address_locks_exactly_like_a_known_one(strict):
    for _ in range(3):
        assert login(strict, email="nobody@example.test", password="x").status_code == 401
    assert login(strict, email="nobody@example.test", password="x").status_code == 429


def test_a_success_clears_the_failure_count(strict, user):
    for _ in range(2):
        login(strict, password="wrong password")
    assert login(strict).status_code == 200
    for _ in range(2):
        assert login(strict, password="wrong password").status_code == 401
    assert login(strict).status_code == 200


def test_a_password_reset_lifts_the_lock(strict, runtime, user):
    for _ in range(3):
        login(strict, password="wrong password")
    assert login(strict).status_code == 429
    with runtime.db.transaction() as session:
        token = issue_account_token(session, user.id, RESET_PASSWORD, timedelta(hours=1))
    reset = strict.post("/api/v1/auth/reset-password",
                        json={"token": token, "password": "a brand new password"})
    assert reset.status_code == 200
    assert login(strict, password="a brand new password").status_code == 200


# Bearer authentication

@pytest.mark.parametrize("header", [None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer not.a.jwt"])
def test_requests_without_a_valid_bearer_token_are_401(client, header):
    headers = {"Authorization": header} if header else {}
    response = client.get("/api/v1/auth/me", headers=headers)
    assert response.status_code == 401
    assert response.get_json()["code"] == "unauthenticated"


def test_a_bearer_value_starting_with_bb_is_treated_as_an_api_key(client):
    response = client.get("/api/v1/auth/me", headers=bearer("bb_" + "0" * 64))
    assert response.status_code == 401
    assert response.get_json() == {"error": "invalid API key", "code": "unauthenticated"}


def test_expired_foreign_and_unsigned_tokens_are_refused(client, runtime, user):
    claims = jwt.decode(sign_in(client)["access_token"], options={"verify_signature": False})
    user_id, session_id = uuid.UUID(claims["sub"]), uuid.UUID(claims["sid"])
    expired = encode_access_token(runtime.settings.auth.jwt_secret, user_id=user_id,
                                  session_id=session_id, ttl=timedelta(seconds=-10))
    foreign = encode_access_token("another-secret-" + "y" * 40, user_id=user_id,
                                  session_id=session_id, ttl=timedelta(minutes=5))
    unsigned = jwt.encode(claims, key=None, algorithm="none")
    for token, message in ((expired, "access token expired"),
                           (foreign, "access token signed with a different secret: the "
                                     "server's secret changed"),
                           (unsigned, "invalid access token")):
        response = client.get("/api/v1/auth/me", headers=bearer(token))
        assert response.status_code == 401
        assert response.get_json() == {"error": message, "code": "unauthenticated"}


def test_a_token_for_another_users_session_is_refused(client, runtime, user):
    with runtime.db.transaction() as session:
        other = make_password_user(session, runtime.settings, email="other@example.test")
    claims = jwt.decode(sign_in(client)["access_token"], options={"verify_signature": False})
    forged = encode_access_token(runtime.settings.auth.jwt_secret, user_id=other.id,
                                 session_id=uuid.UUID(claims["sid"]), ttl=timedelta(minutes=5))
    assert client.get("/api/v1/auth/me", headers=bearer(forged)).status_code == 401


# Profile

def test_the_profile_can_be_changed(client, user):
    headers = bearer(sign_in(client)["access_token"])
    response = client.patch("/api/v1/auth/me", headers=headers, json={
        "display_name": " Renamed ", "timezone": "Europe/Berlin", "date_format": "DD.MM.YYYY",
        "time_format": "12h"})
    assert response.status_code == 200
    body = response.get_json()
    assert (body["display_name"], body["timezone"], body["date_format"], body["time_format"]) \
        == ("Renamed", "Europe/Berlin", "DD.MM.YYYY", "12h")
    settings = client.get("/api/v1/auth/datetime-settings", headers=headers)
    assert settings.status_code == 200
    assert settings.get_json() == {
        "timezone": "Europe/Berlin", "date_format": "DD.MM.YYYY", "time_format": "12h",
        "date_formats": ["YYYY-MM-DD", "DD/MM/YYYY", "MM/DD/YYYY", "DD.MM.YYYY"],
        "time_formats": ["24h", "12h"]}


def test_invalid_profile_values_are_400_and_change_nothing(client, user):
    headers = bearer(sign_in(client)["access_token"])
    response = client.patch("/api/v1/auth/me", headers=headers,
                            json={"display_name": "Fine", "timezone": "Mars/Olympus"})
    assert response.status_code == 400
    assert response.get_json()["details"] == {"timezone": ["not an IANA time zone name"]}
    for body in ({"date_format": "YY"}, {"time_format": "25h"}, {"email": "x@example.test"}):
        assert client.patch("/api/v1/auth/me", headers=headers, json=body).status_code == 400
    assert client.get("/api/v1/auth/me", headers=headers).get_json()["display_name"] == \
        "Test User"


def test_the_ui_theme_is_kept_on_the_user_and_starts_as_the_system_preference(client, user):
    headers = bearer(sign_in(client)["access_token"])
    assert client.get("/api/v1/auth/me", headers=headers).get_json()["theme"] == "system"
    for theme in ("dark", "light", "system"):
        response = client.patch("/api/v1/auth/me", headers=headers, json={"theme": theme})
        assert (response.status_code, response.get_json()["theme"]) == (200, theme)
    client.patch("/api/v1/auth/me", headers=headers, json={"theme": "dark"})
    again = bearer(sign_in(client)["access_token"])  # another sign-in sees the same choice
    assert client.get("/api/v1/auth/me", headers=again).get_json()["theme"] == "dark"


@pytest.mark.parametrize("theme", ["Dark", "sepia", "", None, 1, "dark\x00"])
def test_a_theme_that_is_not_a_choice_is_400_and_changes_nothing(client, user, theme):
    headers = bearer(sign_in(client)["access_token"])
    response = client.patch("/api/v1/auth/me", headers=headers, json={"theme": theme})
    assert response.status_code == 400
    assert response.get_json()["code"] == "validation_error"
    assert "theme" in response.get_json()["details"]
    assert client.get("/api/v1/auth/me", headers=headers).get_json()["theme"] == "system"


def test_datetime_settings_need_authentication(client):
    assert client.get("/api/v1/auth/datetime-settings").status_code == 401


def test_sso_status_reports_no_providers_and_the_effective_password_policy(client, runtime):
    _set_platform(runtime, password_min_length=10, password_require_number=True)
    response = client.get("/api/v1/auth/sso-status")
    assert response.status_code == 200
    assert response.get_json() == {
        "sso_enabled": False, "enabled": False, "providers": [], "enforce_sso": False,
        "registration_enabled": True, "allow_registration": True,
        "password_policy": {"min_length": 10, "max_length": 128, "require_uppercase": False,
                            "require_lowercase": False, "require_digit": True,
                            "require_symbol": False}}


# Password change

def test_changing_the_password_revokes_every_other_session_at_once(client, runtime, user):
    current = sign_in(client)
    other = sign_in(client)
    response = client.put("/api/v1/auth/me/password", headers=bearer(current["access_token"]),
                          json={"current_password": PASSWORD, "new_password": "a new password!"})
    assert (response.status_code, response.get_json()) == (200, {"message": "Password changed"})
    assert client.get("/api/v1/auth/me", headers=bearer(other["access_token"])).status_code == 401
    refresh = client.post("/api/v1/auth/refresh", json={"refresh_token": other["refresh_token"]})
    assert refresh.status_code == 401
    assert client.get("/api/v1/auth/me",
                      headers=bearer(current["access_token"])).status_code == 200
    assert login(client).status_code == 401
    assert login(client, password="a new password!").status_code == 200
    assert len(audit_entries(runtime, "auth.password_change")) == 1


def test_a_wrong_current_password_is_403_and_changes_nothing(client, user):
    headers = bearer(sign_in(client)["access_token"])
    response = client.put("/api/v1/auth/me/password", headers=headers,
                          json={"current_password": "not it", "new_password": "a new password!"})
    assert response.status_code == 403
    assert response.get_json() == {"error": "password is incorrect", "code": "forbidden"}
    assert login(client).status_code == 200


def test_a_new_password_must_meet_the_policy(client, user):
    headers = bearer(sign_in(client)["access_token"])
    response = client.put("/api/v1/auth/me/password", headers=headers,
                          json={"current_password": PASSWORD, "new_password": "short"})
    assert response.status_code == 400
    assert response.get_json()["details"] == {"new_password": ["must be at least 8 characters"]}


def test_an_sso_only_user_has_no_password_to_change(client, runtime):
    with runtime.db.transaction() as session:
        tokens = make_tokens(session, runtime.settings, make_user(session, email=EMAIL))
    response = client.put("/api/v1/auth/me/password", headers=bearer(tokens.access_token),
                          json={"current_password": "x", "new_password": "a new password!"})
    assert response.status_code == 400


# Forgotten passwords

def test_forgot_password_answers_the_same_for_any_address(client, user):
    known = client.post("/api/v1/auth/forgot-password", json={"email": "user@example.test"})
    unknown = client.post("/api/v1/auth/forgot-password", json={"email": "nobody@example.test"})
    assert known.status_code == unknown.status_code == 200
    assert known.get_json() == unknown.get_json()


def test_a_mailed_reset_token_sets_a_new_password_once_and_ends_every_session(mailbox, runtime,
                                                                              user):
    client = mailbox.client
    tokens = sign_in(client)
    assert client.post("/api/v1/auth/forgot-password",
                       json={"email": "user@example.test"}).status_code == 200
    client.post("/api/v1/auth/forgot-password", json={"email": "nobody@example.test"})
    [message] = mailbox.sink.wait_for(1)
    assert message["To"] == "user@example.test"
    token = token_in(message.get_content(), r"reset-password\?token=")
    weak = client.post("/api/v1/auth/reset-password", json={"token": token, "password": "short"})
    assert weak.status_code == 400
    reset = client.post("/api/v1/auth/reset-password",
                        json={"token": token, "password": "my new password"})
    assert (reset.status_code, reset.get_json()) == (200, {"message": "Password reset"})
    assert client.get("/api/v1/auth/me", headers=bearer(tokens["access_token"])).status_code == 401
    assert login(client).status_code == 401
    signed_in = login(client, password="my new password")
    assert signed_in.get_json()["user"]["email_verified"] is True
    again = client.post("/api/v1/auth/reset-password",
                        json={"token": token, "password": "another password"})
    assert again.status_code == 400
    assert len(audit_entries(runtime, "auth.password_reset")) == 1


def test_a_new_reset_request_retires_the_previous_token(client, runtime, user):
    with runtime.db.transaction() as session:
        first = issue_account_token(session, user.id, RESET_PASSWORD, timedelta(hours=1))
        second = issue_account_token(session, user.id, RESET_PASSWORD, timedelta(hours=1))
    for token, status in ((first, 400), (second, 200)):
        response = client.post("/api/v1/auth/reset-password",
                               json={"token": token, "password": "pass word 2"})
        assert response.status_code == status


def test_an_expired_reset_token_is_refused(client, runtime, user):
    with runtime.db.transaction() as session:
        token = issue_account_token(session, user.id, RESET_PASSWORD, timedelta(seconds=-1))
    response = client.post("/api/v1/auth/reset-password",
                           json={"token": token, "password": "a new password"})
    assert response.status_code == 400
    assert login(client).status_code == 200


def test_reset_tokens_are_stored_only_as_hashes(client, runtime, user):
    with runtime.db.transaction() as session:
        token = issue_account_token(session, user.id, RESET_PASSWORD, timedelta(hours=1))
    with runtime.db.session() as session:
        stored = session.scalars(select(AccountToken.token_hash)).all()
    assert len(token) >= 43  # 32 random bytes, URL-safe base64
    assert token not in stored and len(stored[0]) == 64


# Account deletion

def test_deleting_the_account_needs_the_password_and_removes_everything(client, runtime, user):
    tokens = sign_in(client)
    headers = bearer(tokens["access_token"])
    assert client.delete("/api/v1/auth/me", headers=headers, json={}).status_code == 400
    wrong = client.delete("/api/v1/auth/me", headers=headers, json={"password": "nope"})
    assert wrong.status_code == 403
    assert client.delete("/api/v1/auth/me", headers=headers,
                         json={"password": PASSWORD}).status_code == 200
    assert _users(runtime) == []
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 401
    assert client.post("/api/v1/auth/refresh",
                       json={"refresh_token": tokens["refresh_token"]}).status_code == 401
    assert login(client).status_code == 401
    [entry] = audit_entries(runtime, "auth.account_delete")
    assert entry.before == {"email": "user@example.test", "display_name": "Test User"}


def test_an_sso_only_user_confirms_deletion_with_the_session(client, runtime):
    with runtime.db.transaction() as session:
        tokens = make_tokens(session, runtime.settings, make_user(session, email=EMAIL))
    response = client.delete("/api/v1/auth/me", headers=bearer(tokens.access_token))
    assert (response.status_code, response.get_json()) == (200, {"message": "Account deleted"})
    assert _users(runtime) == []


def test_the_last_system_administrator_cannot_delete_their_account(client, runtime):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, is_system_admin=True)
    headers = bearer(sign_in(client)["access_token"])
    response = client.delete("/api/v1/auth/me", headers=headers, json={"password": PASSWORD})
    assert response.status_code == 409
    assert response.get_json()["code"] == "conflict"
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, email="second@example.test",
                           is_system_admin=True)
    assert client.delete("/api/v1/auth/me", headers=headers,
                         json={"password": PASSWORD}).status_code == 200


def test_the_only_owner_of_an_org_cannot_delete_their_account(client, runtime, user):
    with runtime.db.transaction() as session:
        org = create_org(session, "Acme", user.id)
    headers = bearer(sign_in(client)["access_token"])
    response = client.delete("/api/v1/auth/me", headers=headers, json={"password": PASSWORD})
    assert response.status_code == 409
    assert response.get_json()["org_ids"] == [str(org.id)]


def test_the_store_is_not_needed_to_read_the_profile(runtime, user):
    """Authentication reads the database only: a dead Redis does not sign anyone out."""
    app = app_with(runtime, store=RedisStore("redis://127.0.0.1:1/0"))
    client = app.test_client()
    tokens = sign_in(client)
    assert client.get("/api/v1/auth/me", headers=bearer(tokens["access_token"])).status_code == 200


def test_thirty_reloads_in_a_minute_keep_the_user_signed_in_while_logins_stay_strict(runtime,
                                                                                     user):
    """A browser refreshes its access token on every page load: with the default limits, 30
    refreshes in a minute all work, and the 11th login in the same minute is still refused."""
    defaults = RateLimitSettings()
    client = app_with(runtime, **{"rate_limits.auth": defaults.auth,
                                  "rate_limits.refresh": defaults.refresh}).test_client()
    assert login(client, use_cookie=True).status_code == 200
    refreshed = [client.post("/api/v1/auth/refresh", json={"use_cookie": True},
                             headers={"X-Burnbox-CSRF": "1"}).status_code for _ in range(30)]
    assert refreshed == [200] * 30
    logins = [login(client, password="wrong").status_code for _ in range(10)]
    assert logins == [401] * 9 + [429]
    assert int(login(client).headers["Retry-After"]) >= 1


def test_sign_in_entry_points_count_in_the_strict_per_ip_buckets(runtime, user):
    client = app_with(runtime, **{"rate_limits.auth": "2/minute",
                                  "rate_limits.forgot_password": "1/hour"}).test_client()
    assert [login(client, password="wrong").status_code for _ in range(3)] == [401, 401, 429]
    assert _register(client).status_code == 429
    forgot = [client.post("/api/v1/auth/forgot-password",
                          json={"email": "user@example.test"}).status_code for _ in range(2)]
    assert forgot == [200, 429]
