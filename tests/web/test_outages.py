"""An unreachable dependency is a 503 `unavailable` with Retry-After on every route, never a 500."""

import dataclasses
import logging
import re
import uuid

import psycopg
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError

from burnbox.kv import RedisStore
from models.db import Database
from tests.factories.identity import auth_headers, make_user
from tests.processes import free_port
from web import create_app

# Routes that answer without the database by design: liveness, readiness (its own 503 body),
# metrics and the API documents; and the browser UI's static pages (endpoints `ui.*`).
# The compat faces' probes are their peer's liveness and readiness.
NO_DATABASE = re.compile(r"^/(healthz|readyz|metrics|api/v1/docs)"
                         r"|^/compat/[a-z]+/[^/]+/[^/]+/(livez|readyz)$")


def _unreachable_database_url(runtime) -> str:
    if runtime.db.engine.dialect.name == "postgresql":
        return f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/burnbox"
    return "sqlite:////proc/no-such-folder/burnbox.db"


def _path(rule) -> str:
    # `kind` is a compat face's scope kind (compat.scopes), one of two words.
    return rule.build({name: "inboxes" if name == "kind" else str(uuid.uuid4())
                       for name in rule.arguments},
                      append_unknown=False)[1]


def test_every_route_answers_503_unavailable_while_the_database_is_unreachable(runtime, caplog):
    engine = create_engine(_unreachable_database_url(runtime))
    app = create_app(runtime=dataclasses.replace(
        runtime, db=Database(runtime.settings, engine=engine)))
    client = app.test_client()
    answers: dict[str, int] = {}
    # An API key is looked up in the database on every route that authenticates.
    headers = {"Authorization": "Bearer bb_" + "0" * 64}
    with caplog.at_level(logging.WARNING, logger="web.errors"):
        for rule in app.url_map.iter_rules():
            if rule.endpoint == "static" or rule.endpoint.startswith("ui."):
                continue
            path = _path(rule)
            if NO_DATABASE.match(path):
                continue
            for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
                response = client.open(path, method=method, headers=headers, json={})
                answers[f"{method} {path}"] = response.status_code
                if response.status_code == 503:
                    assert response.get_json() == {
                        "error": "temporarily unavailable, try again shortly",
                        "code": "unavailable"}
                    assert response.headers["Retry-After"] == "5"
        login = client.post("/api/v1/auth/login",
                            json={"email": "a@example.com", "password": "a password"})
    engine.dispose()
    assert (login.status_code, login.get_json()["code"]) == (503, "unavailable")
    assert not [route for route, status in answers.items() if status >= 500 and status != 503]
    # Only a request refused for its input before any look-up may answer otherwise.
    others = {route: status for route, status in answers.items() if status != 503}
    assert all(400 <= status < 500 for status in others.values()), others
    assert len(others) < len(answers) / 4, others
    assert any(record.getMessage() == "dependency unavailable"
               and record.dependency == "database" for record in caplog.records)


def test_a_websocket_ticket_answers_503_unavailable_while_the_key_value_store_is_unreachable(
        runtime, make_app):
    with runtime.db.transaction() as session:
        user = make_user(session, email="tickets@example.test")
        headers = auth_headers(session, runtime.settings, user)
    closed = f"redis://127.0.0.1:{free_port()}/0"
    app = make_app(store=RedisStore(closed), **{"redis.url": closed})
    response = app.test_client().post("/api/v1/ws/ticket", headers=headers)
    assert response.status_code == 503
    assert response.get_json()["code"] == "unavailable"
    assert response.headers["Retry-After"] == "5"


def test_an_outage_after_the_view_is_a_503_too(make_app):
    app = make_app()
    app.config["PROPAGATE_EXCEPTIONS"] = False  # as in production: Flask answers the 500 itself
    failed: list[bool] = []

    @app.after_request
    def lose_the_database(response):
        if not failed:
            failed.append(True)
            raise OperationalError("COMMIT", {}, psycopg.OperationalError("server closed"))
        return response

    response = app.test_client().get("/healthz")
    assert (response.status_code, response.get_json()["code"]) == (503, "unavailable")
