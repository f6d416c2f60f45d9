"""`burnbox web` binds where the settings say, whatever their source: gunicorn once read only
BURNBOX_HTTP__HOST and PORT, so an http.port in the config file never reached it. Precedence:
`--host`/`--port` > BURNBOX_HTTP__* > PORT > config file > defaults."""

import os
import signal
import subprocess

import pytest

from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http

pytestmark = pytest.mark.slow


def _web(tmp_path, *args: str, **environ: str) -> subprocess.Popen:
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path), WEB_CONCURRENCY="1", **environ)
    return subprocess.Popen([str(BIN / "burnbox"), "web", *args], cwd=ROOT, env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _stop(web: subprocess.Popen) -> None:
    os.killpg(web.pid, signal.SIGTERM)
    web.wait(timeout=30)


def test_the_port_of_the_config_file_reaches_gunicorn(tmp_path):
    port = free_port()
    config = tmp_path / "burnbox.toml"
    config.write_text(f'[http]\nhost = "127.0.0.1"\nport = {port}\n')
    web = _web(tmp_path, BURNBOX_CONFIG=str(config))
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz")
    finally:
        _stop(web)


def test_the_flags_win_over_the_environment_and_the_config_file(tmp_path):
    from_file, from_port, from_flag = free_port(), free_port(), free_port()
    config = tmp_path / "burnbox.toml"
    config.write_text(f'[http]\nhost = "0.0.0.0"\nport = {from_file}\n')
    web = _web(tmp_path, "--host", "127.0.0.1", "--port", str(from_flag),
               BURNBOX_CONFIG=str(config), PORT=str(from_port))
    try:
        wait_for_http(f"http://127.0.0.1:{from_flag}/healthz")
    finally:
        _stop(web)
