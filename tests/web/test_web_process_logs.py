"""`burnbox web` (gunicorn, gevent workers) writes Burnbox's structured JSON lines: one per
request with its id, route, caller and client IP; warnings carrying the request id; gunicorn's
own lines in the same format, each once."""

import json
import os
import signal
import subprocess
import time

import pytest
import requests

from tests.factories.identity import make_tokens, make_user
from tests.identity import bearer
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http

pytestmark = pytest.mark.slow


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _line_for(path, request_id: str, message: str | None = None, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in _lines(path):
            if line.get("request_id") == request_id and message in (None, line["message"]):
                return line
        time.sleep(0.1)
    raise AssertionError(f"no line for {request_id} in {path.read_text()}")


def test_the_web_process_logs_one_json_line_per_request(committed_runtime, tmp_path):
    settings = committed_runtime.settings
    with committed_runtime.db.transaction() as session:
        user = make_user(session, email="logs@example.test")
        tokens = make_tokens(session, settings, user)
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"storage cannot live under a file")
    port, output = free_port(), tmp_path / "web.log"
    env = process_env(
        BURNBOX_ENV="test", BURNBOX_DATA_DIR=settings.data_dir,
        BURNBOX_DATABASE__URL=settings.database.url, BURNBOX_REDIS__URL=settings.redis.url,
        BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret,
        BURNBOX_STORAGE__PATH=str(blocker / "objects"), BURNBOX_HTTP__HOST="127.0.0.1",
        PORT=str(port), WEB_CONCURRENCY="1", GUNICORN_CMD_ARGS="--graceful-timeout 1")
    env["BURNBOX_LOG__FORMAT"] = "json"
    with output.open("wb") as sink:
        web = subprocess.Popen([str(BIN / "burnbox"), "web"], cwd=ROOT, env=env,
                               start_new_session=True, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz")
        me = requests.get(f"http://127.0.0.1:{port}/api/v1/auth/me",
                          headers={**bearer(tokens.access_token), "X-Request-ID": "log-test-me",
                                   "X-Forwarded-For": "203.0.113.9"}, timeout=5)
        assert me.status_code == 200, me.text
        ready = requests.get(f"http://127.0.0.1:{port}/readyz",
                             headers={"X-Request-ID": "log-test-ready"}, timeout=10)
        assert ready.status_code == 503

        line = _line_for(output, "log-test-me")
        assert line["logger"] == "burnbox.access"
        assert line["method"] == "GET"
        assert line["route"] == "/api/v1/auth/me"
        assert line["status"] == 200
        assert line["user_id"] == str(user.id)
        assert line["api_key_id"] is None
        assert line["client_ip"] == "127.0.0.1"  # the peer: 127.0.0.1 is no trusted proxy here
        assert isinstance(line["duration_ms"], float | int)
        warning = _line_for(output, "log-test-ready", "readiness check failed")
        assert (warning["level"], warning["dependency"]) == ("WARNING", "storage")
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
    lines = _lines(output)  # every line is JSON: json.loads would have failed otherwise
    booted = [line for line in lines if line["message"].startswith("Booting worker")]
    assert len(booted) == 1
    assert booted[0]["logger"] == "gunicorn.error"
    assert len([line for line in lines if line.get("request_id") == "log-test-me"]) == 1
