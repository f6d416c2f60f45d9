"""Helpers for tests that run Burnbox processes for real: free ports and waiting for them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import URL, create_engine, text
from sqlalchemy.engine import make_url

from burnbox.kv import RedisStore

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def missing_server(reason: str) -> None:
    """Skip the test for want of a server program (initdb, redis-server), or fail it when
    BURNBOX_TEST_REQUIRE_SERVERS=1 (CI sets it: there a missing program must not pass as a
    skipped fault test)."""
    if os.environ.get("BURNBOX_TEST_REQUIRE_SERVERS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def process_env(**extra: str) -> dict[str, str]:
    """The environment for a child process: this interpreter's bin first, no BURNBOX_ leftovers,
    text logs and no MCP listener unless `extra` says otherwise (`burnbox serve` opens one on
    the fixed port 8081 by default: two tests serving at once met there, and the second
    printed a warning)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BURNBOX_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update({"BURNBOX_LOG__FORMAT": "text", "BURNBOX_MCP__PORT": "0", **extra})
    return env


def mailin_env(runtime: Any, port: int, **extra: str) -> dict[str, str]:
    """The environment for a `burnbox mailin` child of a test runtime: its database, Redis,
    object folder and secret, SMTP on `port`, warnings only."""
    settings = runtime.settings
    return process_env(
        BURNBOX_ENV="test", BURNBOX_DATA_DIR=settings.data_dir,
        BURNBOX_DATABASE__URL=settings.database_url, BURNBOX_REDIS__URL=settings.redis.url,
        BURNBOX_STORAGE__PATH=str(runtime.storage.root), BURNBOX_SMTP__PORT=str(port),
        BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret, BURNBOX_LOG__LEVEL="WARNING",
        **extra)


def children(pid: int) -> set[int]:
    """The process ids of `pid`'s children (Linux)."""
    return {int(child) for child in
            Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def terminate(process: subprocess.Popen, timeout: float = 20.0) -> None:
    """Stop a child with SIGTERM; one still running after `timeout` is killed and the
    TimeoutExpired raised (a process that ignores SIGTERM is a bug to see)."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


def stop_groups(processes: list[subprocess.Popen], timeout: float = 30.0) -> None:
    """SIGTERM the process group each of `processes` leads (started with
    start_new_session), then wait until no process of those groups is left: SIGKILL for what
    still runs after `timeout`, and at most 5 s more for it to go. Waiting for the leaders
    alone was not enough: a README block's background job (honcho, its workers and clock)
    outlived the bash that started it, and while it shut down its worker took the next test's
    messages off the same Redis queues (that test then counted no cleanup and no dispatch)."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        killed_at = None
        while _group_alive(process.pid):
            now = time.monotonic()
            if killed_at is None and now >= deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                killed_at = now
            if killed_at is not None and now - killed_at > 5:
                break  # a zombie nobody reaps: nothing of it runs
            time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_until(condition: Callable[[], object], timeout: float = 30.0) -> None:
    """Poll `condition` until it is true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# How long a process started by a test may take to answer: a bound that catches a process that
# hangs, not one that is slow. A process start (imports, migrations, a gunicorn worker's fork)
# took over 30 s on the 2-core machine under the parallel suite, so a 30 s bound failed
# `burnbox serve` and `burnbox web` starts that were on their way.
START_TIMEOUT = 120.0


class ProcessExited(RuntimeError):
    """The process a test waited for ended before it answered; `output` is what it printed
    (when its stdout was a pipe)."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.output = process.stdout.read() if process.stdout else ""
        super().__init__(f"exited with {process.returncode} before answering:\n{self.output}")


def wait_for_http(url: str, timeout: float = START_TIMEOUT, status: int = 200,
                  process: subprocess.Popen | None = None) -> requests.Response:
    """Poll `url` until it answers `status`; raise TimeoutError with the last outcome, or
    ProcessExited as soon as `process` (the one that should answer) has ended: polling a dead
    process for the whole timeout hid why it died."""
    deadline, last = time.monotonic() + timeout, "no answer"
    while time.monotonic() < deadline:
        try:
            response = requests.get(url, timeout=2)
            if response.status_code == status:
                return response
            last = f"{response.status_code} {response.text[:200]}"
        except requests.RequestException as exc:
            last = repr(exc)
        if process is not None and process.poll() is not None:
            raise ProcessExited(process)
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer {status}: {last}")


def wait_for_port(port: int, timeout: float = START_TIMEOUT) -> None:
    """Wait until something accepts TCP connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on port {port}")


@contextmanager
def scratch_stores(pg_url: str, redis_url: str, suffix: str) -> Iterator[URL]:
    """An empty PostgreSQL database of its own beside `pg_url`'s (`<name>_<suffix>`), dropped
    afterwards, with the Redis database at `redis_url` emptied before and after: for tests that
    run whole processes, which cannot join the suite's rolled-back transaction. Yields the new
    database's URL."""
    url = make_url(pg_url)
    name = f"{url.database}_{suffix}"
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    drop = text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    with admin.connect() as connection:
        connection.execute(drop)
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    RedisStore(redis_url)._client.flushdb()
    try:
        yield url.set(database=name)
    finally:
        RedisStore(redis_url)._client.flushdb()
        with admin.connect() as connection:
            connection.execute(drop)
        admin.dispose()
