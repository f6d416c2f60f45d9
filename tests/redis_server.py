"""A private Redis for fault tests: its own `redis-server` on a free port, so stopping and
starting it disturbs no other test. It keeps nothing on disk (no snapshot, no append-only
file): a restart comes back empty, as a Redis without persistence does in production, which
loses every queued message and every key."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from tests.processes import free_port, missing_server


class PrivateRedis:
    """One `redis-server` on 127.0.0.1:`port`, stopped and started at will."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=1)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.05)
            finally:
                client.close()

    def stop(self) -> None:
        """Kill the server (an outage, not a shutdown: nothing is saved either way)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None

    def client(self) -> redis.Redis:
        """A client of the server (for a test to look at queues and keys)."""
        return redis.Redis(port=self.port, socket_timeout=5)


@contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    """A started private Redis, stopped afterwards; skip the test when redis-server is
    missing (see `missing_server`)."""
    if shutil.which("redis-server") is None:
        missing_server("no redis-server on PATH")
    server = PrivateRedis()
    try:
        server.start()
        yield server
    finally:
        server.stop()
