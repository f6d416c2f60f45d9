"""One JWT secret for every process: generated once into data_dir on SQLite (0600, the same for
processes starting together, kept across restarts), required on any other database; gunicorn's
workers all accept a token signed with it."""

import os
import signal
import stat
import subprocess
import sys
import uuid
from datetime import timedelta

import pytest
import requests

from burnbox.security import encode_access_token
from burnbox.settings import SettingsError, load_settings
from burnbox.signing_secret import SECRET_FILE, resolve_jwt_secret
from models.runtime import Runtime
from tests.identity import bearer
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http

POSTGRES = "postgresql://burnbox@db.invalid/burnbox"


def _embedded(data_dir, **environ):
    return load_settings(environ={"BURNBOX_DATA_DIR": str(data_dir), **environ})


def test_without_a_secret_sqlite_generates_one_kept_private_in_the_data_dir(tmp_path):
    settings = resolve_jwt_secret(_embedded(tmp_path / "data"))
    path = tmp_path / "data" / SECRET_FILE
    assert settings.auth.jwt_secret == path.read_text().strip()
    assert len(settings.auth.jwt_secret) >= 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [SECRET_FILE]  # no temporary files left


def test_a_restart_reads_the_same_secret_so_tokens_stay_valid(tmp_path):
    first = Runtime.from_settings(_embedded(tmp_path)).settings.auth.jwt_secret
    second = Runtime.from_settings(_embedded(tmp_path)).settings.auth.jwt_secret
    assert first == second


def test_processes_starting_together_agree_on_one_secret(tmp_path):
    script = ("import sys; from burnbox.settings import load_settings; "
              "from burnbox.signing_secret import resolve_jwt_secret; "
              "print(resolve_jwt_secret(load_settings(environ={'BURNBOX_DATA_DIR': sys.argv[1]}))"
              ".auth.jwt_secret)")
    starts = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True) for _ in range(8)]
    secrets = {start.communicate(timeout=60)[0].strip() for start in starts}
    assert secrets == {(tmp_path / SECRET_FILE).read_text().strip()}


def test_a_configured_secret_wins_and_no_file_is_written(tmp_path):
    settings = resolve_jwt_secret(_embedded(tmp_path, BURNBOX_AUTH__JWT_SECRET="z" * 40))
    assert settings.auth.jwt_secret == "z" * 40
    assert not (tmp_path / SECRET_FILE).exists()


def test_a_damaged_secret_file_stops_start_up_saying_what_to_do(tmp_path):
    (tmp_path / SECRET_FILE).write_text("short\n")
    with pytest.raises(SettingsError, match="delete it to generate a new one"):
        resolve_jwt_secret(_embedded(tmp_path))


def test_a_data_dir_that_cannot_hold_the_secret_stops_start_up_saying_what_to_set(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("the data dir cannot live under a file")
    with pytest.raises(SettingsError, match=r"cannot be read or created.*JWT_SECRET"):
        resolve_jwt_secret(_embedded(blocker / "data"))


def test_production_on_sqlite_uses_the_generated_secret(tmp_path):
    settings = resolve_jwt_secret(_embedded(tmp_path, BURNBOX_ENV="production"))
    assert settings.auth.jwt_secret == (tmp_path / SECRET_FILE).read_text().strip()


def test_without_a_secret_a_database_other_than_sqlite_is_refused(tmp_path):
    settings = _embedded(tmp_path, DATABASE_URL=POSTGRES)
    with pytest.raises(SettingsError, match="BURNBOX_AUTH__JWT_SECRET"):
        resolve_jwt_secret(settings)
    with pytest.raises(SettingsError, match="BURNBOX_AUTH__JWT_SECRET"):
        Runtime.from_settings(settings)
    assert not (tmp_path / SECRET_FILE).exists()


@pytest.mark.parametrize("command", ["web", "worker", "clock", "mailin", "release"])
def test_a_scaled_process_without_a_secret_refuses_to_start_in_one_line(tmp_path, command):
    result = subprocess.run(
        [str(BIN / "burnbox"), command], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env=process_env(BURNBOX_DATA_DIR=str(tmp_path), DATABASE_URL=POSTGRES,
                        REDIS_URL="redis://127.0.0.1:1/0"))
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "auth.jwt_secret" in result.stderr
    assert "BURNBOX_AUTH__JWT_SECRET" in result.stderr


@pytest.mark.slow
def test_every_gunicorn_worker_of_an_embedded_web_process_accepts_the_shared_secret(tmp_path):
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path), BURNBOX_HTTP__HOST="127.0.0.1",
                      PORT=str(free_port()), WEB_CONCURRENCY="2", BURNBOX_LOG__LEVEL="WARNING")
    subprocess.run([str(BIN / "burnbox"), "migrate"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=60)
    web = subprocess.Popen([str(BIN / "burnbox"), "web"], cwd=ROOT, env=env,
                           start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{env['PORT']}"
        wait_for_http(f"{base}/healthz")
        secret = (tmp_path / SECRET_FILE).read_text().strip()
        # A well-signed token of a session that does not exist: a worker with another key would
        # say "signed with a different secret" instead.
        token = encode_access_token(secret, user_id=uuid.uuid4(), session_id=uuid.uuid4(),
                                    ttl=timedelta(minutes=5))
        messages = set()
        for _ in range(30):  # a new connection each time, so both workers take some
            response = requests.get(f"{base}/api/v1/auth/me", headers=bearer(token), timeout=5)
            messages.add((response.status_code, response.json()["error"]))
        assert messages == {(401, "invalid access token")}
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
