"""The Dockerfile, read without a Docker engine: tini as PID 1, production settings, a HEALTHCHECK
whose command works against a live server, and a .dockerignore that keeps local environments,
data, secrets and caches out of the build context (and keeps in what the image needs)."""

import fnmatch
import json
import os
import signal
import subprocess

import pytest

from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    logical, current = [], ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1].strip()) for text in logical]


def _all(name: str) -> list[str]:
    return [arguments for instruction, arguments in _instructions() if instruction == name]


def _env() -> dict[str, str]:
    values = {}
    for arguments in _all("ENV"):
        for pair in arguments.split():
            key, _, value = pair.partition("=")
            values[key] = value
    return values


def _healthcheck_command() -> list[str]:
    (healthcheck,) = _all("HEALTHCHECK")
    _, _, command = healthcheck.partition(" CMD ")
    return json.loads(command)


def test_tini_from_debian_runs_as_pid_1_in_front_of_every_command():
    assert any("apt-get install" in run and " tini" in run for run in _all("RUN"))
    (entrypoint,) = _all("ENTRYPOINT")
    assert json.loads(entrypoint) == ["/usr/bin/tini", "--"]
    assert json.loads(_all("CMD")[-1]) == ["burnbox", "serve"]


def test_the_image_runs_in_production_with_its_data_in_the_volume():
    env = _env()
    assert env["BURNBOX_ENV"] == "production"
    assert env["BURNBOX_DATA_DIR"] == "/data"
    assert json.loads(_all("VOLUME")[0]) == ["/data"]
    # Installed editable: `burnbox web` finds gunicorn.conf.py beside the package, in /app.
    assert any("pip install --no-deps --editable ." in run for run in _all("RUN"))


def test_the_healthcheck_has_bounds_and_asks_burnbox_healthcheck():
    (healthcheck,) = _all("HEALTHCHECK")
    for option in ("--interval=", "--timeout=", "--start-period=", "--retries="):
        assert option in healthcheck
    assert _healthcheck_command() == ["python", "-m", "burnbox.healthcheck"]


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves `path` out of the build context: a pattern matches it or one of its
    parent folders (`**/` matches any depth, none included)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    for pattern in patterns:
        for prefix in prefixes:
            if fnmatch.fnmatchcase(prefix, pattern):
                return True
            if pattern.startswith("**/"):
                tail = prefix.split("/")
                if any(fnmatch.fnmatchcase("/".join(tail[i:]), pattern[3:])
                       for i in range(len(tail))):
                    return True
    return False


@pytest.mark.parametrize("path", [
    ".venv/bin/python", ".git/HEAD", ".env", "deploy/.env", "data/burnbox.db",
    "data/jwt_secret", "elsewhere/jwt_secret", "burnbox/__pycache__/cli.cpython-311.pyc",
    ".pytest_cache/README.md", ".ruff_cache/x", ".hypothesis/examples/x", "burnbox.egg-info/PKG",
    "bench/results/ingest.json", "build/lib/x.py",
])
def test_dockerignore_keeps_local_state_secrets_and_caches_out(path):
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert _ignored(path, patterns)


def test_dockerignore_keeps_what_the_image_needs():
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for path in ("requirements.lock", "pyproject.toml", "gunicorn.conf.py", "alembic.ini",
                 "burnbox/cli.py", "burnbox/healthcheck.py", "web/__init__.py",
                 "migrations/env.py", "Procfile", "bench/harness.py"):
        assert not _ignored(path, patterns), path


@pytest.mark.slow
def test_the_healthcheck_command_passes_on_a_live_server_and_fails_without_one(tmp_path):
    port = free_port()
    # What the image sets, with the port from a config file and the server bound to loopback.
    config = tmp_path / "burnbox.toml"
    config.write_text(f"[http]\nport = {port}\n")
    image_env = process_env(BURNBOX_CONFIG=str(config), BURNBOX_DATA_DIR=str(tmp_path),
                            BURNBOX_HTTP__HOST="0.0.0.0", BURNBOX_ENV="production")
    command = [str(BIN / "python"), *_healthcheck_command()[1:]]
    web = subprocess.Popen(
        [str(BIN / "burnbox"), "web", "--host", "127.0.0.1"], cwd=ROOT, start_new_session=True,
        env={**image_env, "WEB_CONCURRENCY": "1"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz")
        healthy = subprocess.run(command, env=image_env, capture_output=True, text=True,
                                 timeout=30)
        assert healthy.returncode == 0, healthy.stderr
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
    unhealthy = subprocess.run(command, env=image_env, capture_output=True, text=True, timeout=30)
    assert unhealthy.returncode == 1
    assert unhealthy.stderr.startswith(f"unhealthy: http://127.0.0.1:{port}/healthz")
