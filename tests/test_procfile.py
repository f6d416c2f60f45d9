"""`.venv/bin/honcho start`, with the venv not on PATH (as the README says to run it), runs every
Procfile process against PostgreSQL + Redis, and an event recorded in a transaction is dispatched
by the separate worker process through the real Redis broker."""

import os
import signal
import smtplib
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

import tasks
from burnbox.settings import load_settings
from models.events import Event, record_event
from models.runtime import Runtime
from tests.conftest import PG_URL, TEST_REDIS_URL
from tests.processes import (
    BIN,
    ROOT,
    free_port,
    process_env,
    scratch_stores,
    wait_for_http,
    wait_for_port,
)

VENV_BIN = ROOT / ".venv" / "bin"

pytestmark = [
    pytest.mark.skipif(not PG_URL, reason="needs the PostgreSQL + Redis backend"),
    pytest.mark.skipif(not (VENV_BIN / "honcho").exists(), reason="needs `make install`'s .venv"),
]


@pytest.fixture
def procfile_settings():
    """A database of its own (created empty), and the test Redis database emptied."""
    redis_url = TEST_REDIS_URL
    with scratch_stores(PG_URL, redis_url, "procfile") as url:
        yield load_settings(environ={}, overrides={
            "database.url": url.render_as_string(hide_password=False),
            "redis.url": redis_url,
            "smtp.port": free_port(),
            "http.port": free_port(),
            # PostgreSQL: every process refuses to start without the one shared secret.
            "auth.jwt_secret": "procfile-" + "x" * 40,
        })


def test_honcho_runs_every_procfile_process_and_the_worker_dispatches_events(procfile_settings):
    settings = procfile_settings
    listeners = {name: free_port() for name in ("smtp", "worker", "clock")}
    mcp_port = free_port()
    env = process_env(
        DATABASE_URL=settings.database.url, REDIS_URL=settings.redis.url,
        PORT=str(settings.http.port), BURNBOX_HTTP__HOST="127.0.0.1",
        BURNBOX_SMTP__HOST="127.0.0.1", BURNBOX_SMTP__PORT=str(settings.smtp.port),
        BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret,
        WEB_CONCURRENCY="2", BURNBOX_METRICS__ENABLED="true",
        # honcho gives every process a PORT of its own: the MCP one is told where web is.
        BURNBOX_MCP__PORT=str(mcp_port),
        BURNBOX_MCP__API_URL=f"http://127.0.0.1:{settings.http.port}",
        **{f"BURNBOX_{name.upper()}__METRICS_PORT": str(port)
           for name, port in listeners.items()})
    # Without the venv on PATH, `burnbox` was "not found": the Procfile must find it itself.
    env["PATH"] = os.pathsep.join(entry for entry in env["PATH"].split(os.pathsep)
                                  if Path(entry).resolve() not in {BIN.resolve(),
                                                                   VENV_BIN.resolve()})
    honcho = subprocess.Popen([str(VENV_BIN / "honcho"), "start"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        base = f"http://127.0.0.1:{settings.http.port}"
        checks = wait_for_http(f"{base}/readyz", timeout=60).json()["checks"]
        assert checks == {"database": "ok", "redis": "ok", "storage": "ok"}
        with smtplib.SMTP("127.0.0.1", settings.smtp.port, timeout=10) as smtp:
            assert smtp.ehlo()[0] == 250
        # gunicorn's workers share metrics through prometheus_client's multiprocess files.
        metrics = wait_for_http(f"{base}/metrics").text
        assert 'flask_http_request_total{method="GET",status="200"}' in metrics
        assert 'url_rule="/readyz"' in metrics
        # The MCP process serves Streamable HTTP and asks web about keys (none here: 401).
        wait_for_port(mcp_port)
        assert requests.post(f"http://127.0.0.1:{mcp_port}/mcp", json={}, timeout=10,
                             headers={"Authorization": "Bearer bb_" + "0" * 64}
                             ).status_code == 401
        # mailin, worker and clock each serve theirs on a listener of their own.
        for name, port in listeners.items():
            assert "burnbox_" in wait_for_http(f"http://127.0.0.1:{port}/metrics").text, name

        runtime = Runtime.from_settings(settings)
        tasks.setup_broker(runtime)
        with runtime.db.transaction() as session:
            event_id = record_event(session, "probe.procfile", {"n": 1}).id
        assert _wait_dispatched(runtime, event_id), "the worker process never dispatched the event"
        runtime.db.dispose()
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        output, _ = honcho.communicate(timeout=30)
    for process in ("web.1", "worker.1", "clock.1", "mailin.1", "mcp.1", "release.1"):
        assert f"{process} started" in output or f"{process} | " in output, output[-3000:]
    assert "Traceback" not in output, output[-3000:]


def _wait_dispatched(runtime: Runtime, event_id: uuid.UUID, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with runtime.db.session() as session:
            if session.get(Event, event_id).dispatched_at is not None:
                return True
        time.sleep(0.2)
    return False
