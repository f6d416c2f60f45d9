"""Requests waiting for e-mail (`GET /inboxes/:id/emails/wait`) held by one web process.

`WAITERS` waits that nothing will answer are opened at once against one gunicorn gevent worker
(`burnbox web`, `worker_connections` raised above the count), over raw keep-nothing HTTP/1.1
connections so the client costs little. A short wait sent after them marks the end of their
intake (each looks once, then sleeps; on a loaded machine that takes seconds): when it has
been answered, the worker's CPU is measured over `WINDOWS` consecutive spans of
`IDLE_SECONDS`, the cost of holding them. The same worker's CPU over one span with no wait
open, measured just before in the same run, is the baseline. Then every wait must end at its
timeout with 200 and `"timed_out": true`. The worker's resident memory before and after gives
the cost per waiter.

Shapes as in `bench.events` (embedded by default, scaled with BURNBOX_BENCH_DATABASE_URL and
BURNBOX_BENCH_REDIS_URL). Run alone with `python -m bench.waiters`.
"""

from __future__ import annotations

import os
import selectors
import socket
import time
from dataclasses import dataclass

from bench import cpu
from bench.events import Shape, _rss_kib, _worker_pid, running, seed
from tests.processes import free_port, wait_for_http

WAITERS = 1000
IDLE_SECONDS = 5.0
WINDOWS = 4
WAIT_TIMEOUT = 150  # seconds: long enough to take every wait in, then measure
PARK_BOUND = 25.0  # seconds to open them all


@dataclass
class Waiters:
    """What one web process did while holding waits."""

    name: str
    opened: int
    answered: int
    idle_cpu_pct: float
    held_cpu_pct: list[float]
    rss_per_waiter_kib: float
    park_seconds: float
    intake_seconds: float
    load: str

    def line(self) -> str:
        """One report line: CPU with and without the waits, in the same run."""
        return (f"{self.name:<60} {self.opened} sent in {self.park_seconds:.1f} s, taken in "
                f"{self.intake_seconds:.1f} s, "
                f"{self.answered} timed out cleanly; worker CPU (% of a core) with none "
                f"{self.idle_cpu_pct:.2f}, then per {IDLE_SECONDS:.0f} s holding them "
                f"{' '.join(f'{pct:.2f}' for pct in self.held_cpu_pct)}; "
                f"{self.rss_per_waiter_kib:.1f} KiB RSS each; load {self.load}")


def _request(port: int, token: str, path: str) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: {token}\r\nConnection: close\r\n\r\n").encode()


def _cpu_pct(meter: cpu.Meter, seconds: float) -> float:
    before = meter.seconds["web"]
    meter.measure(lambda: time.sleep(seconds) or 0.0)
    return (meter.seconds["web"] - before) * 100 / seconds


def _park(port: int, request: bytes, count: int) -> tuple[list[socket.socket], float]:
    """Open `count` connections and send each the request; return them once sent, and how
    long that took."""
    started = time.monotonic()
    opened = []
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port), timeout=PARK_BOUND)
        connection.sendall(request)
        opened.append(connection)
    return opened, time.monotonic() - started


def _collect(connections: list[socket.socket], deadline: float) -> int:
    """Read every answer to its end; how many were 200 with timed_out true."""
    selector = selectors.DefaultSelector()
    answers: dict[socket.socket, bytearray] = {}
    for connection in connections:
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ)
        answers[connection] = bytearray()
    pending = len(connections)
    while pending and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1.0):
            connection = key.fileobj
            chunk = connection.recv(65536)  # type: ignore[union-attr]
            if chunk:
                answers[connection].extend(chunk)  # type: ignore[index]
                continue
            selector.unregister(connection)
            connection.close()  # type: ignore[union-attr]
            pending -= 1
    for connection in connections:
        connection.close()
    return sum(1 for answer in answers.values()
               if answer.startswith(b"HTTP/1.1 200") and b'"timed_out":true' in answer
               .replace(b" ", b""))


def _held(shape: Shape) -> Waiters:
    target = seed(shape, "http://127.0.0.1:9/unused")
    port = free_port()
    master = shape.web(port, GUNICORN_CMD_ARGS=f"--worker-connections {WAITERS + 200}")
    with running([master]):
        wait_for_http(f"http://127.0.0.1:{port}/healthz", timeout=60)
        worker = _worker_pid(master.pid)
        meter = cpu.Meter({"web": cpu.fixed([worker])})
        path = (f"/api/v1/inboxes/{target.inbox_id}/emails/wait"
                f"?subject=never-sent&timeout={WAIT_TIMEOUT}s")
        request = _request(port, target.headers["Authorization"], path)
        # Warm the worker's code paths with one short wait, then the idle baseline.
        short = request.replace(f"timeout={WAIT_TIMEOUT}s".encode(), b"timeout=100ms")
        _collect(_park(port, short, 1)[0], time.monotonic() + 10)  # warm the code paths
        idle = _cpu_pct(meter, IDLE_SECONDS)
        rss_before, rss_started = _rss_kib(worker), time.monotonic()
        connections, park_seconds = _park(port, request, WAITERS)
        _collect(_park(port, short, 1)[0], time.monotonic() + WAIT_TIMEOUT)
        intake_seconds = time.monotonic() - rss_started
        held = [_cpu_pct(meter, IDLE_SECONDS) for _ in range(WINDOWS)]
        rss_after = _rss_kib(worker)
        answered = _collect(connections, time.monotonic() + WAIT_TIMEOUT + 30)
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return Waiters(f"{WAITERS} waits held by one gunicorn gevent worker ({shape.name})",
                   len(connections), answered, idle, held,
                   (rss_after - rss_before) / WAITERS, park_seconds, intake_seconds, load)


def run() -> list[Waiters]:
    """Measure on the shape the environment chooses."""
    return [_held(Shape())]


if __name__ == "__main__":
    for figure in run():
        print(figure.line())
