"""Sessions through the API: listing and revoking, logout, refresh rotation and reuse detection,
the session limit with pending logins (including races and concurrent logins), and the fallback
when the pending-login store is down."""

import threading
import time
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from burnbox.kv import RedisStore
from burnbox.timeutil import utcnow
from models.identity.sessions import RefreshToken, UserSession
from models.identity.users import User
from models.platform.settings import lock_platform, validated_overrides
from tests.factories.identity import make_password_user
from tests.identity import app_with, bearer, login, sign_in
from web import create_app

SESSION_FIELDS = {"id", "ip_address", "user_agent", "last_used_at", "created_at"}


def _active(runtime, user_id):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(UserSession).where(
            UserSession.user_id == user_id, UserSession.revoked_at.is_(None))) or 0


def _me(client, tokens):
    return client.get("/api/v1/auth/me", headers=bearer(tokens["access_token"])).status_code


def _refresh(client, refresh_token, **body):
    return client.post("/api/v1/auth/refresh", json={"refresh_token": refresh_token, **body})


# Listing and revoking

def test_the_session_list_shows_active_sessions_with_the_current_one_marked(client, user):
    first = sign_in(client)
    client.post("/api/v1/auth/login", headers={"User-Agent": "phone/2.0"},
                json={"email": "user@example.test", "password": "correct horse battery"})
    response = client.get("/api/v1/auth/sessions", headers=bearer(first["access_token"]))
    assert response.status_code == 200
    body = response.get_json()
    assert (body["total"], body["page"], body["per_page"], body["total_pages"]) == (2, 1, 20, 1)
    assert all(set(item) == SESSION_FIELDS | {"is_current"} for item in body["data"])
    assert [item["is_current"] for item in body["data"]] == [True, False]
    assert body["data"][1]["user_agent"] == "phone/2.0"
    assert body["data"][0]["ip_address"] == "127.0.0.1"
    assert body["data"][0]["created_at"].endswith("Z")


def test_revoking_a_session_stops_its_tokens_at_once(client, runtime, user):
    keep, drop = sign_in(client), sign_in(client)
    listed = client.get("/api/v1/auth/sessions", headers=bearer(keep["access_token"])).get_json()
    drop_id = next(item["id"] for item in listed["data"] if not item["is_current"])
    assert _me(client, drop) == 200
    response = client.delete(f"/api/v1/auth/sessions/{drop_id}",
                             headers=bearer(keep["access_token"]))
    assert (response.status_code, response.get_json()) == (200, {"message": "Session deleted"})
    assert _me(client, drop) == 401
    assert _refresh(client, drop["refresh_token"]).status_code == 401
    assert _me(client, keep) == 200
    assert _active(runtime, user.id) == 1


def test_revoking_a_session_that_is_not_yours_or_not_active_is_404_a_malformed_id_400(
        client, runtime, user):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, email="other@example.test")
    mine = sign_in(client)
    theirs = sign_in(client, email="other@example.test")
    their_id = client.get("/api/v1/auth/sessions",
                          headers=bearer(theirs["access_token"])).get_json()["data"][0]["id"]
    headers = bearer(mine["access_token"])
    for session_id in (their_id, str(uuid.uuid4())):
        response = client.delete(f"/api/v1/auth/sessions/{session_id}", headers=headers)
        assert response.status_code == 404
        assert response.get_json()["code"] == "not_found"
    response = client.delete("/api/v1/auth/sessions/not-a-uuid", headers=headers)
    assert (response.status_code, response.get_json()["code"]) == (400, "validation_error")
    assert _me(client, theirs) == 200


def test_revoking_every_other_session_keeps_only_the_current_one(client, runtime, user):
    current, *others = [sign_in(client) for _ in range(4)]
    response = client.delete("/api/v1/auth/sessions", headers=bearer(current["access_token"]))
    assert response.status_code == 200
    assert response.get_json() == {"message": "Other sessions deleted", "revoked": 3}
    assert [_me(client, tokens) for tokens in others] == [401, 401, 401]
    assert _me(client, current) == 200
    assert _active(runtime, user.id) == 1


def test_session_endpoints_need_authentication(client):
    assert client.get("/api/v1/auth/sessions").status_code == 401
    assert client.delete("/api/v1/auth/sessions").status_code == 401
    assert client.delete(f"/api/v1/auth/sessions/{uuid.uuid4()}").status_code == 401


# Logout

def test_logout_with_the_refresh_token_ends_the_session(client, user):
    tokens = sign_in(client)
    response = client.post("/api/v1/auth/logout", json={"refresh_token": tokens["refresh_token"]})
    assert (response.status_code, response.get_json()) == (200, {"message": "Logged out"})
    assert _me(client, tokens) == 401
    assert _refresh(client, tokens["refresh_token"]).status_code == 401
    again = client.post("/api/v1/auth/logout", json={"refresh_token": tokens["refresh_token"]})
    assert again.status_code == 200


def test_logout_with_only_the_bearer_token_ends_its_session(client, user):
    tokens = sign_in(client)
    response = client.post("/api/v1/auth/logout", json={}, headers=bearer(tokens["access_token"]))
    assert response.status_code == 200
    assert _me(client, tokens) == 401


def test_logout_without_any_token_is_401(client):
    response = client.post("/api/v1/auth/logout", json={})
    assert response.status_code == 401


# Refresh

def test_refresh_rotates_the_refresh_token(client, user):
    tokens = sign_in(client)
    response = _refresh(client, tokens["refresh_token"])
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"tokens"}
    fresh = body["tokens"]
    assert set(fresh) == {"access_token", "refresh_token", "token_type", "expires_in"}
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert _me(client, fresh) == 200
    assert _refresh(client, fresh["refresh_token"]).status_code == 200


def _age_spent_tokens(runtime, age):
    """Move the rotation of every spent refresh token `age` into the past."""
    with runtime.db.transaction() as session:
        session.execute(update(RefreshToken).where(RefreshToken.rotated_at.is_not(None))
                        .values(rotated_at=utcnow() - age))


def test_reusing_a_rotated_refresh_token_revokes_the_session(client, runtime, user):
    stolen = sign_in(client)
    rotated = _refresh(client, stolen["refresh_token"]).get_json()["tokens"]
    _age_spent_tokens(runtime, runtime.settings.auth.refresh_reuse_grace)
    reused = _refresh(client, stolen["refresh_token"])
    assert reused.status_code == 401
    assert reused.get_json()["error"] == \
        "refresh token already used; the session has been revoked"
    assert _me(client, rotated) == 401
    assert _refresh(client, rotated["refresh_token"]).status_code == 401
    assert _active(runtime, user.id) == 0


def test_the_token_just_rotated_away_still_refreshes_within_the_grace(client, runtime, user):
    """A reload that aborts the refresh loses its answer and presents the spent token again."""
    first = sign_in(client)
    lost = _refresh(client, first["refresh_token"]).get_json()["tokens"]
    retries = [_refresh(client, first["refresh_token"]) for _ in range(3)]
    assert [r.status_code for r in retries] == [200, 200, 200]
    fresh = [r.get_json()["tokens"] for r in retries]
    assert len({t["refresh_token"] for t in [lost, *fresh]}) == 4
    for tokens in [lost, *fresh]:  # a racing tab may hold any of them: none was spent
        assert _me(client, tokens) == 200
    assert _refresh(client, fresh[-1]["refresh_token"]).status_code == 200
    assert _refresh(client, lost["refresh_token"]).status_code == 200
    assert _active(runtime, user.id) == 1


def test_an_older_spent_token_is_reuse_even_within_the_grace(client, runtime, user):
    first = sign_in(client)
    second = _refresh(client, first["refresh_token"]).get_json()["tokens"]
    third = _refresh(client, second["refresh_token"]).get_json()["tokens"]
    reused = _refresh(client, first["refresh_token"])
    assert reused.status_code == 401
    assert reused.get_json()["error"] == \
        "refresh token already used; the session has been revoked"
    assert _me(client, third) == 401
    assert _active(runtime, user.id) == 0


def test_without_a_grace_any_spent_token_is_reuse(make_app, runtime, user):
    client = make_app(**{"auth.refresh_reuse_grace": timedelta(0)}).test_client()
    first = sign_in(client)
    _refresh(client, first["refresh_token"])
    assert _refresh(client, first["refresh_token"]).status_code == 401
    assert _active(runtime, user.id) == 0


def test_refresh_moves_last_used_at(client, user):
    tokens = sign_in(client)
    before = client.get("/api/v1/auth/sessions",
                        headers=bearer(tokens["access_token"])).get_json()["data"][0]
    time.sleep(0.01)
    fresh = _refresh(client, tokens["refresh_token"]).get_json()["tokens"]
    after = client.get("/api/v1/auth/sessions",
                       headers=bearer(fresh["access_token"])).get_json()["data"][0]
    assert after["last_used_at"] > before["last_used_at"]
    assert after["created_at"] == before["created_at"]


def test_an_unknown_missing_or_expired_refresh_token_is_401(client, runtime, user):
    tokens = sign_in(client)
    assert _refresh(client, "made-up").status_code == 401
    assert client.post("/api/v1/auth/refresh", json={}).status_code == 401
    with runtime.db.transaction() as session:
        session.execute(update(UserSession).where(UserSession.user_id == user.id)
                        .values(expires_at=utcnow() - timedelta(seconds=1)))
    assert _refresh(client, tokens["refresh_token"]).status_code == 401
    assert _me(client, tokens) == 401


# The session limit

def _set_limit(runtime, limit):
    with runtime.db.transaction() as session:
        row = lock_platform(session)
        row.overrides = validated_overrides(row.overrides, {"max_sessions_per_user": limit},
                                            runtime.settings)


def test_at_the_limit_login_answers_409_and_revokes_nothing(client, runtime):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings, max_sessions=2)
    held = [sign_in(client), sign_in(client)]
    response = login(client)
    assert response.status_code == 409
    body = response.get_json()
    assert set(body) == {"error", "code", "pending_token", "sessions", "limit"}
    assert body["code"] == "session_limit"
    assert body["limit"] == 2
    assert len(body["pending_token"]) >= 43
    assert len(body["sessions"]) == 2
    assert all(set(item) == SESSION_FIELDS for item in body["sessions"])
    assert [_me(client, tokens) for tokens in held] == [200, 200]
    assert _active(runtime, user.id) == 2


def test_the_default_limit_is_five(client, user):
    for _ in range(5):
        sign_in(client)
    response = login(client)
    assert response.status_code == 409
    assert response.get_json()["limit"] == 5


def test_the_platform_limit_applies_unless_the_user_has_their_own(client, runtime):
    _set_limit(runtime, 1)
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings)
        make_password_user(session, runtime.settings, email="vip@example.test", max_sessions=3)
    sign_in(client)
    assert login(client).get_json()["limit"] == 1
    for _ in range(3):
        sign_in(client, email="vip@example.test")
    assert login(client, email="vip@example.test").get_json()["limit"] == 3


def test_a_limit_of_zero_means_no_limit(client, runtime, user):
    _set_limit(runtime, 0)
    for _ in range(7):
        sign_in(client)


def test_pending_sessions_can_be_read_without_consuming_the_token(client, runtime):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, max_sessions=1)
    sign_in(client)
    pending = login(client).get_json()
    response = client.get(f"/api/v1/auth/login/pending-sessions?token={pending['pending_token']}")
    assert response.status_code == 200
    assert response.get_json() == {"sessions": pending["sessions"], "limit": 1}
    resolved = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": pending["pending_token"],
        "revoke_session_id": pending["sessions"][0]["id"]})
    assert resolved.status_code == 200
    gone = client.get(f"/api/v1/auth/login/pending-sessions?token={pending['pending_token']}")
    assert gone.status_code == 401
    assert client.get("/api/v1/auth/login/pending-sessions").status_code == 400


def test_resolving_revokes_the_chosen_session_and_completes_the_login(client, runtime):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings, max_sessions=2)
    old, kept = sign_in(client), sign_in(client)
    pending = login(client).get_json()
    old_id = pending["sessions"][0]["id"]
    response = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": pending["pending_token"], "revoke_session_id": old_id})
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == {"user", "tokens"}
    assert body["user"]["email"] == "user@example.test"
    assert _me(client, body["tokens"]) == 200
    assert (_me(client, old), _me(client, kept)) == (401, 200)
    assert _active(runtime, user.id) == 2
    reused = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": pending["pending_token"], "revoke_session_id": old_id})
    assert reused.status_code == 401


def test_when_the_limit_is_still_reached_resolve_answers_409_with_a_fresh_token(client, runtime):
    """The race: two pending logins free the same place; the second finds the limit reached."""
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings, max_sessions=2)
    sign_in(client)
    sign_in(client)
    first, second = login(client).get_json(), login(client).get_json()
    oldest = first["sessions"][0]["id"]
    won = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": first["pending_token"], "revoke_session_id": oldest})
    assert won.status_code == 200
    lost = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": second["pending_token"], "revoke_session_id": oldest})
    assert lost.status_code == 409
    body = lost.get_json()
    assert body["code"] == "session_limit" and body["limit"] == 2
    assert body["pending_token"] not in (first["pending_token"], second["pending_token"])
    listed = [item["id"] for item in body["sessions"]]
    assert oldest not in listed and len(listed) == 2
    assert _active(runtime, user.id) == 2
    retried = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": body["pending_token"], "revoke_session_id": listed[0]})
    assert retried.status_code == 200
    assert _active(runtime, user.id) == 2


def test_a_resolve_still_at_a_lowered_limit_keeps_the_chosen_session_revoked(client, runtime):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings, max_sessions=3)
    first, second, third = sign_in(client), sign_in(client), sign_in(client)
    with runtime.db.transaction() as session:
        session.get(User, user.id).max_sessions = 1
    pending = login(client).get_json()
    chosen = pending["sessions"][0]["id"]
    response = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": pending["pending_token"], "revoke_session_id": chosen})
    assert response.status_code == 409
    assert chosen not in [item["id"] for item in response.get_json()["sessions"]]
    assert (_me(client, first), _me(client, second), _me(client, third)) == (401, 200, 200)
    assert _active(runtime, user.id) == 2


def test_resolving_with_someone_elses_session_revokes_nothing_of_theirs(client, runtime):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, max_sessions=1)
        make_password_user(session, runtime.settings, email="other@example.test")
    sign_in(client)
    theirs = sign_in(client, email="other@example.test")
    their_id = client.get("/api/v1/auth/sessions",
                          headers=bearer(theirs["access_token"])).get_json()["data"][0]["id"]
    pending = login(client).get_json()
    response = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": pending["pending_token"], "revoke_session_id": their_id})
    assert response.status_code == 409
    assert _me(client, theirs) == 200


def test_bad_resolve_requests_are_rejected(client):
    unknown = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": "nope", "revoke_session_id": str(uuid.uuid4())})
    assert unknown.status_code == 401
    malformed = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": "nope", "revoke_session_id": "not-a-uuid"})
    assert malformed.status_code == 400


def test_a_pending_token_expires(runtime):
    with runtime.db.transaction() as session:
        make_password_user(session, runtime.settings, max_sessions=1)
    client = app_with(runtime, **{"auth.pending_login_ttl": timedelta(milliseconds=300)}
                      ).test_client()
    sign_in(client)
    pending = login(client).get_json()
    time.sleep(0.5)
    response = client.post("/api/v1/auth/login/resolve", json={
        "pending_token": pending["pending_token"],
        "revoke_session_id": pending["sessions"][0]["id"]})
    assert response.status_code == 401


def test_without_the_pending_login_store_login_revokes_the_oldest_session(runtime):
    with runtime.db.transaction() as session:
        user = make_password_user(session, runtime.settings, max_sessions=2)
    client = app_with(runtime, store=RedisStore("redis://127.0.0.1:1/0")).test_client()
    oldest, newer = sign_in(client), sign_in(client)
    response = login(client)
    assert response.status_code == 200
    assert (_me(client, oldest), _me(client, newer)) == (401, 200)
    assert _me(client, response.get_json()["tokens"]) == 200
    assert _active(runtime, user.id) == 2
    pending = client.get("/api/v1/auth/login/pending-sessions?token=anything")
    assert pending.status_code == 401


# Concurrency: the row lock on the user serialises logins

def _in_parallel(count, call):
    """Run `call(i)` in `count` threads released together; return the results in order."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def run(i):
        barrier.wait()
        results[i] = call(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.slow
def test_twenty_concurrent_logins_never_exceed_a_limit_of_five(committed_runtime):
    with committed_runtime.db.transaction() as session:
        user = make_password_user(session, committed_runtime.settings, max_sessions=5)
    app = create_app(runtime=committed_runtime)
    statuses = _in_parallel(20, lambda _: login(app.test_client()).status_code)
    assert sorted(statuses) == [200] * 5 + [409] * 15
    assert _active(committed_runtime, user.id) == 5


@pytest.mark.slow
def test_concurrent_resolves_of_one_freed_place_let_exactly_one_in(committed_runtime):
    with committed_runtime.db.transaction() as session:
        user = make_password_user(session, committed_runtime.settings, max_sessions=1)
    app = create_app(runtime=committed_runtime)
    client = app.test_client()
    sign_in(client)
    pendings = [login(client).get_json() for _ in range(8)]
    only = pendings[0]["sessions"][0]["id"]
    statuses = _in_parallel(8, lambda i: app.test_client().post(
        "/api/v1/auth/login/resolve",
        json={"pending_token": pendings[i]["pending_token"], "revoke_session_id": only},
    ).status_code)
    assert sorted(statuses) == [200] + [409] * 7
    assert _active(committed_runtime, user.id) == 1
