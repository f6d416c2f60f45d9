"""Cookie mode: with `use_cookie: true` the refresh token travels as the httpOnly
bb_refresh_token cookie scoped to /api/v1/auth, never in the JSON; refresh and logout read it."""

from datetime import timedelta

import pytest

from tests.factories.identity import make_password_user
from tests.identity import PASSWORD, app_with, bearer, login

COOKIE = "bb_refresh_token"
# The header that lets the refresh cookie count (a cross-site form cannot send it).
CSRF = {"X-Burnbox-CSRF": "1"}


def _cookie(response):
    """The attributes of the bb_refresh_token Set-Cookie header: {name: value}, or None."""
    for header in response.headers.getlist("Set-Cookie"):
        if header.startswith(COOKIE + "="):
            parts = [part.strip() for part in header.split(";")]
            attributes = {}
            for part in parts:
                name, _, value = part.partition("=")
                attributes[name.lower()] = value
            attributes["value"] = parts[0].partition("=")[2]
            return attributes
    return None


def _assert_cookie_mode(response, secure=False):
    tokens = response.get_json()["tokens"]
    assert "refresh_token" not in tokens
    assert set(tokens) == {"access_token", "token_type", "expires_in"}
    cookie = _cookie(response)
    assert cookie is not None
    assert len(cookie["value"]) >= 43
    assert cookie["path"] == "/api/v1/auth"
    assert "httponly" in cookie
    assert cookie["samesite"] == "Lax"
    assert cookie["max-age"] == "2592000"
    assert ("secure" in cookie) is secure
    return cookie["value"]


def _assert_body_mode(response):
    assert "refresh_token" in response.get_json()["tokens"]
    assert _cookie(response) is None


@pytest.fixture
def user(runtime):
    """The login helpers' account, allowed one session."""
    with runtime.db.transaction() as session:
        return make_password_user(session, runtime.settings, max_sessions=1)


def test_login_in_cookie_mode_sets_the_cookie_and_leaves_the_token_out(client, user):
    _assert_cookie_mode(login(client, use_cookie=True))


def test_without_the_flag_login_and_refresh_return_both_tokens_in_the_body(client, user):
    response = login(client)
    _assert_body_mode(response)
    refresh_token = response.get_json()["tokens"]["refresh_token"]
    _assert_body_mode(client.post("/api/v1/auth/refresh", json={"refresh_token": refresh_token}))


def test_register_in_cookie_mode_sets_the_cookie(client):
    response = client.post("/api/v1/auth/register", json={
        "email": "new@example.test", "password": PASSWORD, "display_name": "New",
        "use_cookie": True})
    assert response.status_code == 201
    _assert_cookie_mode(response)


def test_resolve_in_cookie_mode_sets_the_cookie(client, user):
    login(client)
    pending = login(client).get_json()
    response = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": pending["pending_token"],
        "revoke_session_id": pending["sessions"][0]["id"], "use_cookie": True})
    assert response.status_code == 200
    _assert_cookie_mode(response)


def test_refresh_reads_the_cookie_and_answers_with_a_rotated_cookie(make_app, user):
    # No refresh reuse grace here: replaying the spent cookie is reuse at once.
    client = make_app(**{"auth.refresh_reuse_grace": timedelta(0)}).test_client()
    first = _assert_cookie_mode(login(client, use_cookie=True))
    response = client.post("/api/v1/auth/refresh", json={}, headers=CSRF)
    assert response.status_code == 200
    second = _assert_cookie_mode(response)
    assert second != first
    # The browser now holds the rotated cookie; replaying the first one is reuse.
    replay = client.post("/api/v1/auth/refresh", json={"refresh_token": first})
    assert replay.status_code == 401
    assert client.post("/api/v1/auth/refresh", json={}, headers=CSRF).status_code == 401


def test_refresh_with_a_body_token_and_the_flag_switches_to_cookie_mode(client, user):
    tokens = login(client).get_json()["tokens"]
    response = client.post("/api/v1/auth/refresh",
                           json={"refresh_token": tokens["refresh_token"], "use_cookie": True})
    _assert_cookie_mode(response)


def test_refresh_from_the_cookie_can_ask_for_the_token_in_the_body(client, user):
    login(client, use_cookie=True)
    response = client.post("/api/v1/auth/refresh", json={"use_cookie": False}, headers=CSRF)
    assert response.status_code == 200
    assert "refresh_token" in response.get_json()["tokens"]


def test_logout_reads_the_cookie_ends_the_session_and_clears_the_cookie(client, user):
    access = login(client, use_cookie=True).get_json()["tokens"]["access_token"]
    response = client.post("/api/v1/auth/logout", json={}, headers=CSRF)
    assert response.status_code == 200
    cleared = _cookie(response)
    assert cleared["value"] == "" and cleared["max-age"] == "0"
    assert cleared["path"] == "/api/v1/auth"
    assert client.get("/api/v1/auth/me", headers=bearer(access)).status_code == 401
    assert client.get_cookie(COOKIE, path="/api/v1/auth") is None


def test_the_cookie_is_secure_behind_https(runtime, user):
    client = app_with(runtime).test_client()
    response = client.post("/api/v1/auth/login", base_url="https://burnbox.example.test",
                           json={"email": "user@example.test", "password": PASSWORD,
                                 "use_cookie": True})
    _assert_cookie_mode(response, secure=True)


def test_the_cookie_is_secure_when_the_public_url_is_https(runtime, user):
    client = app_with(runtime, **{"http.public_url": "https://burnbox.example.test"}).test_client()
    _assert_cookie_mode(login(client, use_cookie=True), secure=True)


def test_cookie_secure_false_keeps_it_off_even_behind_https(runtime, user):
    client = app_with(runtime, **{"auth.cookie_secure": "false"}).test_client()
    response = client.post("/api/v1/auth/login", base_url="https://burnbox.example.test",
                           json={"email": "user@example.test", "password": PASSWORD,
                                 "use_cookie": True})
    _assert_cookie_mode(response, secure=False)


@pytest.mark.parametrize(("samesite", "secure"), [("Strict", False), ("None", True)])
def test_samesite_is_configurable_and_none_forces_secure(runtime, user, samesite, secure):
    client = app_with(runtime, **{"auth.cookie_samesite": samesite}).test_client()
    cookie = _cookie(login(client, use_cookie=True))
    assert cookie["samesite"] == samesite
    assert ("secure" in cookie) is secure


def test_the_cookie_without_the_csrf_header_is_refused_and_left_unspent(client, user):
    login(client, use_cookie=True)
    for path in ("/api/v1/auth/refresh", "/api/v1/auth/logout"):
        response = client.post(path, json={})
        assert response.status_code == 403
        assert response.get_json()["code"] == "forbidden"
        assert "X-Burnbox-CSRF" in response.get_json()["error"]
    # A cross-site form posts text/plain, which reads as an empty body: refused the same way.
    form = client.post("/api/v1/auth/refresh", data="x=1", content_type="text/plain")
    assert form.status_code == 403
    assert client.post("/api/v1/auth/refresh", json={}, headers=CSRF).status_code == 200
