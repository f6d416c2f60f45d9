"""No input to the identity endpoints produces a 500: every odd value gets a 4xx envelope (or is
accepted)."""

import uuid

import pytest

from tests.identity import PASSWORD, bearer, sign_in

ODD = [None, 0, -1, 10**30, 1.5, True, [], {}, "", " ", "\x00", "a" * 10_000, "ü" * 300,
       "../../etc/passwd", "<script>alert(1)</script>", {"$ne": 1}, ["x"], "bb_" + "0" * 64]

ENDPOINTS = [
    ("post", "/api/v1/auth/register", {"email": "odd@example.test", "password": PASSWORD,
                                       "display_name": "Odd", "use_cookie": False}),
    ("post", "/api/v1/auth/login", {"email": "user@example.test", "password": PASSWORD}),
    ("post", "/api/v1/auth/login/resolve", {"pending_token": "x",
                                            "revoke_session_id": str(uuid.UUID(int=0))}),
    ("post", "/api/v1/auth/refresh", {"refresh_token": "x", "use_cookie": False}),
    ("post", "/api/v1/auth/logout", {"refresh_token": "x"}),
    ("patch", "/api/v1/auth/me", {"display_name": "A", "timezone": "UTC",
                                  "date_format": "YYYY-MM-DD", "time_format": "24h"}),
    ("put", "/api/v1/auth/me/password", {"current_password": PASSWORD, "new_password": "y" * 9}),
    ("delete", "/api/v1/auth/me", {"password": "wrong"}),
    ("post", "/api/v1/auth/forgot-password", {"email": "user@example.test"}),
    ("post", "/api/v1/auth/reset-password", {"token": "x", "password": PASSWORD}),
    ("post", "/api/v1/setup/complete", {"admin": {"email": "a@example.test", "password": PASSWORD,
                                                  "display_name": "A"}, "org": {"name": "O"}}),
    ("post", "/api/v1/setup/test-smtp", {"host": "127.0.0.1", "port": 1, "starttls": False}),
    ("post", "/api/v1/setup/test-storage", {"path": "/nonexistent/probe"}),
]


def _check(response):
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        body = response.get_json()
        assert set(body) >= {"error", "code"}


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS,
                         ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_odd_values_in_any_field_never_produce_a_500(client, method, path, body, user):
    headers = bearer(sign_in(client)["access_token"])
    call = getattr(client, method)
    for field in body:
        for value in ODD:
            _check(call(path, headers=headers, json={**body, field: value}))
    for raw in ("", "null", "[]", '"text"', "{", "1"):
        _check(call(path, headers=headers, data=raw, content_type="application/json"))


@pytest.mark.parametrize("path", [
    "/api/v1/auth/verify-email/" + "x" * 5000, "/api/v1/auth/verify-email/%00",
    "/api/v1/auth/login/pending-sessions?token=%00", "/api/v1/auth/sessions?page=0",
    "/api/v1/auth/sessions?per_page=abc", "/api/v1/auth/me"])
def test_odd_paths_and_queries_never_produce_a_500(client, path, user):
    _check(client.get(path, headers=bearer(sign_in(client)["access_token"])))
