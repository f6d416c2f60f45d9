"""The scaled deployment for fault tests: a private PostgreSQL cluster, a private Redis and the
Procfile's processes (`burnbox web`, `worker`, `clock`, `mailin`) started for real against them,
so a test can stop either server, or kill a process, without disturbing any other test.

Every fault test is marked `faults` (slow: each starts its own servers and processes) and
`postgres` (it runs only when the suite runs on the PostgreSQL + Redis backend, as CI's
`make test-postgres` does; the SQLite run skips it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import tasks
from burnbox.settings import Settings
from models.runtime import Runtime
from models.schema import upgrade
from tests.pg_cluster import PrivateCluster, private_cluster
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http, wait_for_port
from tests.redis_server import PrivateRedis, private_redis

# Settings every process of a stack shares with the test's own runtime: the test settings'
# secret, cheap password hashing, limits no test reaches, and webhooks allowed to reach the
# loopback receiver.
_SHARED = ("env", "auth.jwt_secret", "auth.argon2_time_cost", "auth.argon2_memory_kib",
           "auth.argon2_parallelism", "rate_limits.authenticated", "rate_limits.anonymous",
           "rate_limits.auth", "rate_limits.refresh", "rate_limits.forgot_password",
           "rate_limits.demo")


def _variable(dotted: str) -> str:
    """The environment variable of a dotted setting: BURNBOX_SECTION__KEY."""
    return "BURNBOX_" + dotted.upper().replace(".", "__")


class Stack:
    """A private PostgreSQL and Redis, the test's runtime on them (migrated), and the processes
    the test starts; each process writes its JSON log lines to `<folder>/<name>.log`."""

    def __init__(self, folder: Path, cluster: PrivateCluster, redis: PrivateRedis,
                 settings: Settings, changes: dict[str, str]) -> None:
        self.folder = folder
        self.cluster = cluster
        self.redis = redis
        own = {"database.url": cluster.url, "redis.url": redis.url, "data_dir": str(folder),
               "storage.path": str(folder / "objects"), "webhooks.allow_private_targets": "true",
               "smtp.hostname": "mx.test", "log.format": "json", "log.level": "INFO"}
        shared = {key: _flat(settings, key) for key in _SHARED}
        self.changes = {**shared, **own, **changes}
        self.settings = settings.replace(**self.changes)
        self.runtime = Runtime.from_settings(self.settings)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a process of this stack."""
        return process_env(**{_variable(key): value for key, value in self.changes.items()},
                           **extra)

    def start(self, name: str, *args: str, **extra: str) -> subprocess.Popen[bytes]:
        """Start `burnbox <args>` as process `name`, in a session of its own (so a signal
        reaches its children too)."""
        log = (self.folder / f"{name}.log").open("ab")
        process = subprocess.Popen([str(BIN / "burnbox"), *args], cwd=ROOT,
                                   env=self.env(**extra), start_new_session=True,
                                   stdout=log, stderr=log)
        log.close()
        self.processes[name] = process
        return process

    def web(self, name: str = "web") -> str:
        """Start `burnbox web` (one gevent worker); its API base URL once it answers."""
        port = free_port()
        self.start(name, "web", PORT=str(port), WEB_CONCURRENCY="1",
                   BURNBOX_HTTP__HOST="127.0.0.1")
        wait_for_http(f"http://127.0.0.1:{port}/healthz", timeout=45)
        return f"http://127.0.0.1:{port}/api/v1"

    def mailin(self, name: str = "mailin") -> int:
        """Start `burnbox mailin`; its SMTP port once it accepts connections."""
        port = free_port()
        self.start(name, "mailin", "--processes", "1", BURNBOX_SMTP__PORT=str(port))
        wait_for_port(port, timeout=45)
        return port

    def worker(self, name: str = "worker") -> subprocess.Popen[bytes]:
        """Start `burnbox worker` with one worker process."""
        return self.start(name, "worker", "--processes", "1")

    def signal(self, name: str, number: signal.Signals) -> None:
        """Send `number` to process `name` and its children, and wait for it to end."""
        process = self.processes[name]
        if process.poll() is None:
            os.killpg(process.pid, number)
        process.wait(timeout=30)

    def running(self) -> list[str]:
        """The names of the processes still running."""
        return [name for name, process in self.processes.items() if process.poll() is None]

    def log(self, name: str) -> list[dict[str, Any]]:
        """The JSON log lines process `name` wrote so far."""
        lines = []
        for line in (self.folder / f"{name}.log").read_text(errors="replace").splitlines():
            if line.startswith("{"):
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    continue  # a line cut short by a kill
        return lines

    def stop_all(self) -> None:
        """SIGTERM every process still running, then SIGKILL what has not ended in 20 s."""
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def _flat(settings: Settings, dotted: str) -> str:
    """A setting's value as the environment spells it."""
    value: Any = settings
    for part in dotted.split("."):
        value = getattr(value, part)
    return str(value)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """Note on the test whether its call failed, for `make_stack` to show the logs."""
    report = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


CALL_FAILED = pytest.StashKey[bool]()
LOG_TAIL = 20  # errors and lines of each process's log shown when a fault test fails


@pytest.fixture
def make_stack(settings: Settings, request: pytest.FixtureRequest
               ) -> Iterator[Callable[..., Stack]]:
    """`make_stack(**changes)`: a Stack whose processes run with the dotted settings `changes`
    (strings, as in the environment) over the shared ones. The test's runtime is bound as the
    broker's, so events it commits are handed to the stack's Redis. Processes, servers and
    folder are stopped and removed after the test."""
    with ExitStack() as cleanup:

        def build(**changes: str) -> Stack:
            folder = Path(tempfile.mkdtemp(prefix="burnbox-faults-"))
            cleanup.callback(shutil.rmtree, folder, ignore_errors=True)
            cluster = cleanup.enter_context(private_cluster())
            redis = cleanup.enter_context(private_redis())
            stack = Stack(folder, cluster, redis, settings, changes)
            cleanup.callback(stack.runtime.db.dispose)
            cleanup.callback(show_logs_on_failure, stack, request.node)
            cleanup.callback(stack.stop_all)
            upgrade(stack.runtime.db.engine)
            tasks.setup_broker(stack.runtime)
            return stack

        yield build


def show_logs_on_failure(stack: Stack, node: pytest.Item) -> None:
    """After a failed test, write the end of every process's log to stderr (pytest shows it
    with the failure): the processes' own account of the fault."""
    if not node.stash.get(CALL_FAILED, False):
        return
    for name in stack.processes:
        lines = (stack.folder / f"{name}.log").read_text(errors="replace").splitlines()
        errors = [line for line in lines if '"level": "ERROR"' in line
                  or '"level": "CRITICAL"' in line]
        sys.stderr.write(f"--- {name}: the last {LOG_TAIL} of {len(errors)} errors\n")
        sys.stderr.write("\n".join(errors[-LOG_TAIL:]) + "\n")
        sys.stderr.write(f"--- {name}: the last {LOG_TAIL} of {len(lines)} log lines\n")
        sys.stderr.write("\n".join(lines[-LOG_TAIL:]) + "\n")
