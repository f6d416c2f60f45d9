"""Limits on a request body, whatever its shape: JSON nested too deep is a 400 (it was a 500, the
decoder's RecursionError), and a chunked body over the size limit is a 413 like one with a
Content-Length (it was cut at the limit and read as invalid JSON); an integer too long for Python
to convert is a 400 (it was a 500: the decoder's ValueError); a route whose body is required
answers a request without one with a 400 instead of acting on nothing."""

from __future__ import annotations

import io
import json
from typing import Any

from tests.identity import PASSWORD, bearer, sign_in
from web.api import MAX_JSON_DEPTH

LOGIN = "/api/v1/auth/login"


def test_json_nested_2000_deep_is_a_400_even_unauthenticated(client):
    deep = "[" * 2000 + "]" * 2000
    response = client.post(LOGIN, data=deep, content_type="application/json")
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error" and "nest" in body["details"]["json"][0]


def test_json_nested_past_the_limit_is_a_400_and_up_to_it_reaches_validation(client):
    def login_nested(depth: int) -> Any:
        value: Any = "x"
        for _ in range(depth - 1):  # the body object is the first level
            value = [value]
        return client.post(LOGIN, json={"email": value, "password": PASSWORD})

    too_deep = login_nested(MAX_JSON_DEPTH + 1)
    assert too_deep.status_code == 400 and set(too_deep.get_json()["details"]) == {"json"}
    deepest = login_nested(MAX_JSON_DEPTH)
    assert deepest.status_code == 400 and set(deepest.get_json()["details"]) == {"email"}


# Valid JSON, but the standard library refuses to convert an integer of more than 4,300 digits.
HUGE_INTEGER = "1" * 5000


def test_an_integer_of_5000_digits_is_a_400_before_login(client):
    response = client.post(LOGIN, data='{"email": "a@b.test", "password": ' + HUGE_INTEGER + "}",
                           content_type="application/json")
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error" and "digits" in body["details"]["json"][0]


def test_an_integer_of_5000_digits_is_a_400_on_an_authenticated_route_and_changes_nothing(
        client, world):
    path = world.path("/orgs/{org}/settings")
    before = client.get(path, headers=world.headers["owner"]).get_json()
    response = client.patch(path, data='{"max_teams": ' + HUGE_INTEGER + "}",
                            content_type="application/json", headers=world.headers["owner"])
    assert (response.status_code, response.get_json()["code"]) == (400, "validation_error")
    assert client.get(path, headers=world.headers["owner"]).get_json() == before


def test_a_required_body_left_out_is_a_400_and_changes_nothing(client, world):
    path = world.path("/orgs/{org}/teams/{team}")
    before = client.get(path, headers=world.headers["owner"]).get_json()
    for body in ({}, {"data": "name=x", "content_type": "application/x-www-form-urlencoded"}):
        response = client.patch(path, headers=world.headers["owner"], **body)
        assert response.status_code == 400
        assert response.get_json()["code"] == "validation_error"
        assert response.get_json()["details"] == {"json": ["a JSON body is required"]}
    assert client.get(path, headers=world.headers["owner"]).get_json() == before


def test_a_body_the_route_marks_optional_may_still_be_left_out(client, user):
    tokens = sign_in(client)
    response = client.post("/api/v1/auth/logout", headers=bearer(tokens["access_token"]))
    assert response.status_code == 200


def _chunked(client: Any, body: bytes) -> Any:
    """POST /auth/login with a body of unknown length, as a server that de-chunks hands it on."""
    return client.post(LOGIN, input_stream=io.BytesIO(body), content_type="application/json",
                       headers={"Transfer-Encoding": "chunked"},
                       environ_overrides={"wsgi.input_terminated": True})


def test_a_chunked_body_over_the_limit_is_a_413_like_one_with_a_length(client, app):
    limit = app.config["MAX_CONTENT_LENGTH"]
    padded = json.dumps({"email": "user@example.test", "password": "x" * limit}).encode()
    response = _chunked(client, padded)
    assert response.status_code == 413
    assert response.get_json() == {"error": "request body too large", "code": "payload_too_large"}


def test_a_chunked_body_up_to_the_limit_is_read_whole(client, user, app):
    body = json.dumps({"email": "user@example.test", "password": PASSWORD}).encode()
    assert _chunked(client, body).status_code == 200
    limit = app.config["MAX_CONTENT_LENGTH"]
    exact = body[:-1] + b" " * (limit - len(body)) + b"}"
    assert len(exact) == limit and _chunked(client, exact).status_code == 200
