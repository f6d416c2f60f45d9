"""compose.yaml, read without a container engine (none runs here): its shape (PostgreSQL,
Redis and every process from the one image, the secret from one place, volumes for data, a
health check where there is HTTP and none elsewhere), and each process's command run with its
environment, as the image would run it, against PostgreSQL + Redis."""

import json
import os
import re
import secrets
import signal
import smtplib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import PG_URL, REDIS_URL
from tests.processes import (
    BIN,
    ROOT,
    free_port,
    process_env,
    scratch_stores,
    stop_groups,
    wait_for_http,
)
from tests.test_image import _all, _env, _healthcheck_command

APP = ("release", "web", "worker", "clock", "mailin")
HTTP = {"web"}
# Compose's `${NAME:?message}`: the variable, or stop with the message.
REQUIRED = re.compile(r"\$\{(\w+):\?[^}]*\}")


def compose() -> dict:
    """compose.yaml as Compose reads it (YAML merge keys resolved)."""
    return yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))


def test_every_process_runs_from_the_one_image_beside_postgresql_and_redis():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", *APP}
    for name in APP:
        service = services[name]
        assert (service["build"], service["image"]) == (".", "burnbox:latest"), name
        assert service["command"] == ["burnbox", name], name
        assert {"postgres", "redis"} <= set(service["depends_on"]), name
    for name in set(APP) - {"release"}:
        assert services[name]["depends_on"]["release"] == {
            "condition": "service_completed_successfully"}, name
    assert services["release"]["restart"] == "no"


def test_the_shared_secret_comes_from_one_place_and_data_lives_in_volumes():
    document = compose()
    services = document["services"]
    secrets_named = {services[name]["environment"]["BURNBOX_AUTH__JWT_SECRET"] for name in APP}
    [reference] = secrets_named
    assert REQUIRED.fullmatch(reference).group(1) == "BURNBOX_AUTH__JWT_SECRET"
    [data_volume] = json.loads(_all("VOLUME")[0])
    assert _env()["BURNBOX_DATA_DIR"] == data_volume
    for name in APP:
        assert services[name]["volumes"] == [f"burnbox-data:{data_volume}"], name
    assert services["postgres"]["volumes"] == ["postgres-data:/var/lib/postgresql/data"]
    assert services["redis"]["volumes"] == ["redis-data:/data"]
    assert set(document["volumes"]) == {"postgres-data", "redis-data", "burnbox-data"}


def test_health_checks_match_what_each_service_serves():
    services = compose()["services"]
    # The image's check asks the web server's /healthz: only web serves HTTP.
    assert _healthcheck_command() == ["python", "-m", "burnbox.healthcheck"]
    for name in APP:
        assert ("healthcheck" not in services[name]) == (name in HTTP), name
        if name not in HTTP:
            assert services[name]["healthcheck"] == {"disable": True}, name
    assert services["web"]["ports"] == ["8080:8080"]
    assert services["mailin"]["ports"] == ["2525:2525"]
    for store in ("postgres", "redis"):
        assert services[store]["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), store


@pytest.fixture
def stores() -> Iterator[tuple[str, str]]:
    """An empty database of its own and the test Redis db, emptied, as Compose URLs."""
    redis_url = REDIS_URL or "redis://127.0.0.1:6379/15"
    with scratch_stores(PG_URL, redis_url, "compose") as url:
        yield url.set(drivername="postgresql").render_as_string(hide_password=False), redis_url


def _environment(service: dict, stores: tuple[str, str], data: Path, secret: str
                 ) -> dict[str, str]:
    """What the container of `service` would have: the image's ENV, then the service's
    environment with `.env`'s secret filled in; the Compose network's addresses (postgres,
    redis, the container's own ports) replaced by this test's."""
    database, redis = stores
    env = process_env(**_env())
    for name, value in service["environment"].items():
        env[name] = REQUIRED.sub(lambda _: secret, str(value))
    assert env["DATABASE_URL"] == "postgresql://burnbox:burnbox@postgres:5432/burnbox"
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    env.update(DATABASE_URL=database, REDIS_URL=redis, BURNBOX_DATA_DIR=str(data),
               BURNBOX_HTTP__HOST="127.0.0.1", BURNBOX_SMTP__HOST="127.0.0.1",
               # Each container has its own localhost: a port of its own for each here.
               BURNBOX_HTTP__PORT=str(free_port()), BURNBOX_SMTP__PORT=str(free_port()))
    return env


@pytest.mark.skipif(not PG_URL, reason="needs the PostgreSQL + Redis backend")
def test_each_service_runs_its_command_with_its_environment(stores, tmp_path):
    services = compose()["services"]
    secret = secrets.token_urlsafe(48)  # what .env holds
    envs = {name: _environment(services[name], stores, tmp_path / "data", secret)
            for name in APP}
    release = subprocess.run([str(BIN / services["release"]["command"][0]),
                              *services["release"]["command"][1:]], env=envs["release"],
                             capture_output=True, text=True, timeout=120)
    assert release.returncode == 0, release.stderr
    started = {name: subprocess.Popen([str(BIN / "burnbox"), *services[name]["command"][1:]],
                                      env=envs[name], cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True)
               for name in APP if name != "release"}
    try:
        web = envs["web"]
        wait_for_http(f"http://127.0.0.1:{web['BURNBOX_HTTP__PORT']}/readyz", timeout=60)
        with smtplib.SMTP("127.0.0.1", int(envs["mailin"]["BURNBOX_SMTP__PORT"]),
                          timeout=10) as smtp:
            assert smtp.ehlo()[0] == 250
        # The image's health check, run in each container's environment: healthy where HTTP
        # is served, and it would fail (so it is disabled) everywhere else.
        for name in APP:
            check = subprocess.run([str(BIN / "python"), *_healthcheck_command()[1:]],
                                   env=envs[name], capture_output=True, text=True, timeout=30)
            assert (check.returncode == 0) == (name in HTTP), (name, check.stderr)
        for name, process in started.items():
            assert process.poll() is None, (name, process.stdout.read()[-3000:])
    finally:
        for process in started.values():
            os.killpg(process.pid, signal.SIGTERM)
        outputs = {name: process.communicate(timeout=60)[0] for name, process in started.items()}
        stop_groups(list(started.values()))  # and the children the leaders left
    for name, output in outputs.items():
        assert "Traceback" not in output, (name, output[-3000:])
