"""A PostgreSQL that stops while the API is serving: every answer is 200 or 503 `unavailable`
with Retry-After (never a 500), and the same app serves again once the server is back."""

import threading
import time

import pytest
from sqlalchemy import text

from models.runtime import Runtime
from models.schema import upgrade
from tests.factories.identity import auth_headers, make_user
from tests.pg_cluster import private_cluster
from tests.processes import wait_until
from web import context as web_context
from web import create_app

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_a_stopped_postgresql_answers_503_and_recovers_without_a_restart(settings):
    with private_cluster() as cluster:
        runtime = Runtime.from_settings(settings.replace(**{"database.url": cluster.url}))
        upgrade(runtime.db.engine)
        with runtime.db.transaction() as session:
            user = make_user(session, email="outage@example.test")
            headers = auth_headers(session, runtime.settings, user)
        app = create_app(runtime=runtime)
        # (sent, answered, status, body, Retry-After) of each request, in order.
        answers: list[tuple[float, float, int, dict, str | None]] = []
        stop = threading.Event()

        def call_the_api() -> None:
            client = app.test_client()
            while not stop.is_set():
                sent = time.monotonic()
                # The session list: it reads the database. (/auth/me may be answered from
                # the process's cached caller while the server is down.)
                response = client.get("/api/v1/auth/sessions", headers=headers)
                answers.append((sent, time.monotonic(), response.status_code,
                                response.get_json(), response.headers.get("Retry-After")))
                time.sleep(0.02)

        caller = threading.Thread(target=call_the_api, daemon=True)
        caller.start()
        try:
            time.sleep(0.5)
            cluster.stop()
            stopped_at = time.monotonic()
            time.sleep(1.5)
            readiness = app.test_client().get("/readyz")
            starting_at = time.monotonic()
            cluster.start()
            started_at = time.monotonic()
            wait_until(lambda: any(sent > started_at and status == 200
                                   for sent, _, status, _, _ in answers[-3:]), timeout=15)
        finally:
            stop.set()
            caller.join(timeout=30)
            runtime.db.dispose()

    statuses = [status for _, _, status, _, _ in answers]
    assert set(statuses) <= {200, 503}, statuses
    assert all(body == {"error": "temporarily unavailable, try again shortly",
                        "code": "unavailable"} and retry == "5"
               for _, _, status, body, retry in answers if status == 503)
    while_stopped = [status for sent, answered, status, _, _ in answers
                     if stopped_at < sent and answered < starting_at]
    assert while_stopped and set(while_stopped) == {503}, while_stopped
    assert statuses[0] == 200 and statuses[-1] == 200
    assert readiness.status_code == 503
    assert readiness.get_json()["checks"]["database"].startswith("unavailable")


def test_a_connection_the_server_ends_before_the_request_is_closed_is_not_a_500(settings):
    # The PostgreSQL restart fault test found it: a connection the server ended after the view
    # answered made the session's closing rollback raise in the request's teardown, and
    # gunicorn answered 500 to a request that had succeeded.
    runtime = Runtime.from_settings(settings)  # a pool of its own on the test database
    app = create_app(runtime=runtime)

    @app.after_request
    def server_ends_the_connection(response):
        pid = web_context.db().scalar(text("SELECT pg_backend_pid()"))
        with runtime.db.engine.connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        return response

    try:
        client = app.test_client()
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200  # the pool replaced the connection
    finally:
        runtime.db.dispose()
