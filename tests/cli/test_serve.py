"""`burnbox serve`, the newcomer's first command, run for real in a subprocess."""

import signal
import smtplib
import subprocess

import pytest
import requests
from openapi_spec_validator import validate

from tests.processes import BIN, ROOT, free_port, process_env, terminate, wait_for_http


@pytest.fixture
def served(tmp_path):
    http_port, smtp_port = free_port(), free_port()
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path / "data"))
    process = subprocess.Popen(
        [str(BIN / "burnbox"), "serve", "--port", str(http_port), "--smtp-port", str(smtp_port)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_http(f"http://127.0.0.1:{http_port}/healthz")
        yield process, http_port, smtp_port
    finally:
        terminate(process)


def test_serve_answers_health_openapi_and_smtp_on_the_embedded_default(served, tmp_path):
    _, http_port, smtp_port = served
    base = f"http://127.0.0.1:{http_port}"
    assert wait_for_http(f"{base}/readyz").json()["checks"] == {"database": "ok", "storage": "ok"}
    document = wait_for_http(f"{base}/api/v1/docs/openapi.json").json()
    validate(document)
    assert document["openapi"].startswith("3.0")
    with smtplib.SMTP("127.0.0.1", smtp_port, timeout=10) as smtp:
        code, features = smtp.ehlo("test.example")
        assert code == 250
        for extension in (b"SIZE", b"8BITMIME", b"PIPELINING", b"ENHANCEDSTATUSCODES"):
            assert extension in features
    assert (tmp_path / "data" / "burnbox.db").exists()


def test_serve_stops_cleanly_on_sigterm(served):
    process, _, _ = served
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    assert "Burnbox is running" in output
    assert "Burnbox stopped." in output
    assert "Traceback" not in output


def test_a_malformed_setting_stops_start_up_naming_the_key(tmp_path):
    result = subprocess.run(
        [str(BIN / "burnbox"), "serve"], cwd=ROOT, capture_output=True, text=True, timeout=30,
        env=process_env(BURNBOX_DATA_DIR=str(tmp_path), BURNBOX_DEFAULTS__WEBHOOK_TIMEOUT="soon"))
    assert result.returncode != 0
    assert "defaults.webhook_timeout" in result.stderr


def test_production_refuses_a_placeholder_jwt_secret(tmp_path):
    result = subprocess.run(
        [str(BIN / "burnbox"), "migrate"], cwd=ROOT, capture_output=True, text=True, timeout=30,
        env=process_env(BURNBOX_DATA_DIR=str(tmp_path), BURNBOX_ENV="production",
                        BURNBOX_AUTH__JWT_SECRET="changeme"))
    assert result.returncode != 0
    assert "auth.jwt_secret" in result.stderr


def test_a_restart_keeps_the_tokens_it_signed_valid(tmp_path):
    # With no auth.jwt_secret each start used to sign with a new random key, so every restart
    # logged every user out with only "invalid access token" to say why.
    http_port, smtp_port = free_port(), free_port()
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path / "data"), BURNBOX_BOOTSTRAP__ENABLED="true",
                      BURNBOX_BOOTSTRAP__ADMIN_PASSWORD="correct horse battery staple")
    command = [str(BIN / "burnbox"), "serve", "--port", str(http_port),
               "--smtp-port", str(smtp_port)]
    base = f"http://127.0.0.1:{http_port}/api/v1"

    def run_once(token: str | None) -> str:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            wait_for_http(f"http://127.0.0.1:{http_port}/healthz")
            if token is None:
                login = requests.post(f"{base}/auth/login", timeout=10, json={
                    "email": "admin@burnbox.test", "password": "correct horse battery staple"})
                assert login.status_code == 200, login.text
                token = login.json()["tokens"]["access_token"]
            me = requests.get(f"{base}/auth/me", headers={"Authorization": f"Bearer {token}"},
                              timeout=10)
            assert me.status_code == 200, me.text
            return token
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)

    token = run_once(None)
    assert run_once(token) == token
