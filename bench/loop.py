"""The loop of a test suite, step by step, against maildev's in the same run.

A test that needs an e-mail creates an inbox, has its application send one message over one
SMTP connection, waits for it, reads the code, and deletes the inbox. Measured here as such a
suite does it:

- Burnbox: `POST /api/v1/inboxes` (a team API key, the seeded domain, `ttl` 10m), one SMTP
  connection sending one message to the new address (EHLO, MAIL, RCPT, DATA, QUIT; the step
  "DATA to 250" is timed alone too), `GET /api/v1/inboxes/:id/emails/wait` (which answers the
  e-mail's detail: its codes and links, so it is the read), `DELETE /api/v1/inboxes/:id`;
- maildev 3 (`make bench-maildev`; it keeps mail in memory and needs no inbox): the same SMTP
  send, `GET /api/email?to.address=ADDRESS` until it lists the message (the find, which answers
  the whole e-mail), `DELETE /api/email/:id`.

Each client keeps one HTTP connection open, as a test suite's HTTP client does. Loads: one test
at a time and PARALLEL tests at once (threads, each with its connections), TESTS loops per
round, ROUNDS rounds alternating Burnbox and maildev. Reported per shape and load: p50 / p90
of every step, of the whole loop, and of the loop without the SMTP connection's opening
(connect, greeting, EHLO: maildev greets only once a reverse DNS look-up of the client has
answered, 100 ms on a machine whose resolver does not), over all rounds; and the ratio of the
latter's p50s (Burnbox over maildev: the target is at most 1.0) and of DATA to 250 (at most
1.5 at one). Every loop must find its e-mail.

Shapes: the embedded default (`burnbox serve`, SQLite) always; the scaled one (`burnbox web`
with 2 gevent workers, `burnbox mailin`, `burnbox worker`, PostgreSQL + Redis) when
BURNBOX_BENCH_DATABASE_URL and BURNBOX_BENCH_REDIS_URL are set (the database named there is
emptied). Without maildev it measures Burnbox alone.

    make bench-maildev   # once
    .venv/bin/python -m bench.loop
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import smtplib
import statistics
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from functools import partial
from urllib.parse import quote

from sqlalchemy.engine import make_url

from bench import cpu
from bench.events import Shape, fresh_runtime, running, start
from bench.ingest import MAILDEV, maildev_present, postgres_database, postgres_serving
from tests.processes import BIN, free_port, wait_for_http, wait_for_port

TESTS = int(os.environ.get("BURNBOX_BENCH_LOOP_TESTS", "60"))  # loops per round and load
ROUNDS = int(os.environ.get("BURNBOX_BENCH_LOOP_ROUNDS", "3"))
PARALLEL = int(os.environ.get("BURNBOX_BENCH_LOOP_PARALLEL", "8"))
WARM_UP = 5  # loops per client thread before the first round, not measured
KEY_SCOPES = ["team.view", "team.inboxes.view", "team.inboxes.create", "team.inboxes.manage",
              "team.emails.view"]
BURNBOX = str(BIN / "burnbox")
FIND_PATIENCE = 10.0  # seconds a maildev find keeps asking before the loop fails
IDLE_SECONDS = 3.0  # each server measured idle that long, before its loops
SETTLE_SECONDS = 5.0  # and first left alone that long: gunicorn's workers answer before booted
# The processes a server's CPU is counted on, by name: its own, and those of its database and
# Redis (which work for it), and the benchmark's process, whose threads are the test suite.
Parties = dict[str, Callable[[], list[int]]]


def _message(to: str, number: int) -> bytes:
    """The e-mail an application sends in a sign-up test: a code in a short text."""
    message = EmailMessage()
    message["From"] = "app@shop.example"
    message["To"] = to
    message["Subject"] = f"Your sign-in code ({number})"
    message["Message-ID"] = f"<{uuid.uuid4()}@shop.example>"
    message.set_content(f"Hello,\n\nyour code is {482900 + number % 100}.\n\nThe shop\n")
    return message.as_bytes()


class Http:
    """One kept-alive HTTP connection, as a test suite's client holds."""

    def __init__(self, port: int, headers: dict[str, str] | None = None) -> None:
        self.port = port
        self.headers = headers or {}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def ask(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        """The status and the JSON answer (None when the body is empty). A kept-alive
        connection the server closed while it was idle (gunicorn does after a few seconds,
        while the other server runs its round) is opened again and the request sent once more,
        as HTTP clients do."""
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=data, headers=headers)
                answer = self.connection.getresponse()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt == 2:
                    raise
        raw = answer.read()
        return answer.status, json.loads(raw) if raw else None


def _send(smtp_port: int, to: str, number: int, steps: Steps) -> None:
    """One message over one new SMTP connection, as an application sends it, its steps timed
    into `steps`: the connection's opening (connect, greeting, EHLO), the DATA command to its
    250, and the whole session to QUIT's answer."""
    began = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", smtp_port, timeout=30) as smtp:
        smtp.ehlo("app.example")
        steps[OPENING] = time.perf_counter() - began
        smtp.mail("app@shop.example")
        code, _ = smtp.rcpt(to)
        if code != 250:
            raise RuntimeError(f"RCPT {to} answered {code}")
        started = time.perf_counter()
        code, reply = smtp.data(_message(to, number))
        steps["DATA to 250"] = time.perf_counter() - started
        if code != 250:
            raise RuntimeError(f"DATA answered {code} {reply!r}")
    steps["SMTP, connect to QUIT"] = time.perf_counter() - began


Steps = dict[str, float]  # step name -> seconds
OPENING = "SMTP opening (connect, greeting, EHLO)"


def _close(steps: Steps, whole: float) -> None:
    """Add the loop's totals to its `steps`: the whole loop, and the loop without the SMTP
    connection's opening (maildev's greeting waits for a reverse DNS look-up of the client,
    100 ms on a machine whose resolver does not answer; the target is set on this figure)."""
    steps["whole loop"] = whole
    steps["loop"] = whole - steps[OPENING]




@dataclass
class Burnbox:
    """Burnbox's loop: create, send, wait (the read), delete."""

    http_port: int
    smtp_port: int
    key: str
    assignment_id: str
    name: str
    parties: Parties

    def client(self) -> Callable[[int], Steps]:
        http = Http(self.http_port, {"Authorization": f"Bearer {self.key}"})

        def loop(number: int) -> Steps:
            steps: Steps = {}
            began = time.perf_counter()
            status, inbox = http.ask("POST", "/api/v1/inboxes", {
                "domain_assignment_id": self.assignment_id, "ttl": "10m"})
            if status != 201 or not isinstance(inbox, dict):
                raise RuntimeError(f"POST /inboxes answered {status}: {inbox}")
            steps["create the inbox"] = time.perf_counter() - began
            _send(self.smtp_port, inbox["full_address"], number, steps)
            mark = time.perf_counter()
            status, waited = http.ask("GET", f"/api/v1/inboxes/{inbox['id']}/emails/wait"
                                              "?timeout=10s")
            if status != 200 or not isinstance(waited, dict) or not waited["emails"]:
                raise RuntimeError(f"the wait answered {status}: {waited}")
            steps["the wait answers (the read)"] = time.perf_counter() - mark
            mark = time.perf_counter()
            status, _ = http.ask("DELETE", f"/api/v1/inboxes/{inbox['id']}")
            if status != 200:
                raise RuntimeError(f"DELETE /inboxes/:id answered {status}")
            steps["delete"] = time.perf_counter() - mark
            _close(steps, time.perf_counter() - began)
            return steps

        return loop


@dataclass
class Maildev:
    """maildev's loop: send, find by address, delete."""

    http_port: int
    smtp_port: int
    parties: Parties
    name: str = "maildev 3.0.0"

    def client(self) -> Callable[[int], Steps]:
        http = Http(self.http_port)
        worker = uuid.uuid4().hex[:8]

        def loop(number: int) -> Steps:
            steps: Steps = {}
            to = f"test-{worker}-{number}@maildev.example"
            began = time.perf_counter()
            _send(self.smtp_port, to, number, steps)
            mark = time.perf_counter()
            deadline = mark + FIND_PATIENCE
            while True:
                status, found = http.ask("GET", f"/api/email?to.address={quote(to)}")
                if status == 200 and isinstance(found, list) and found:
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"maildev never listed the message to {to}")
                time.sleep(0.001)
            steps["the find answers (the read)"] = time.perf_counter() - mark
            mark = time.perf_counter()
            status, _ = http.ask("DELETE", f"/api/email/{found[0]['id']}")
            if status != 200:
                raise RuntimeError(f"maildev's DELETE answered {status}")
            steps["delete"] = time.perf_counter() - mark
            _close(steps, time.perf_counter() - began)
            return steps

        return loop


Server = Burnbox | Maildev


@dataclass
class Measured:
    """Every loop's steps of one server at one load, and the CPU its parties spent on them."""

    server: str
    load: int
    meter: cpu.Meter
    steps: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, loop: Steps) -> None:
        for step, seconds in loop.items():
            self.steps[step].append(seconds)

    def p(self, step: str, quantile: int) -> float:
        """The step's p50 (quantile 50) or p90 in milliseconds."""
        values = self.steps[step]
        if quantile == 50:
            return statistics.median(values) * 1000
        return statistics.quantiles(values, n=10, method="inclusive")[quantile // 10 - 1] * 1000


@dataclass
class Line:
    """A report line of this benchmark."""

    text: str

    def line(self) -> str:
        return self.text


def _run_loops(server: Server, clients: list[Callable[[int], Steps]], count: int,
               into: Measured | None) -> None:
    """`count` loops shared by `clients`, one thread each at once; each loop's steps into
    `into` (None: a warm-up)."""
    numbers = iter(range(count))
    lock = threading.Lock()
    failures: list[BaseException] = []

    def work(loop: Callable[[int], Steps]) -> None:
        while True:
            with lock:
                number = next(numbers, None)
            if number is None:
                return
            try:
                steps = loop(number)
            except Exception as error:  # reported by the caller, loudly
                failures.append(error)
                return
            if into is not None:
                with lock:
                    into.add(steps)

    threads = [threading.Thread(target=work, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"{server.name}: a loop failed: {failures[0]}") from failures[0]


def _cpu_text(spent: dict[str, float], unit: str) -> str:
    shares = ", ".join(f"{name} {ms:.1f}" for name, ms in spent.items())
    return f"{shares}, in all {sum(spent.values()):.1f} ms {unit}"


def idle(servers: list[Server], shape_name: str) -> list[Line]:
    """What each server's parties spend doing nothing, in CPU ms per second: the share of the
    cores a test suite's machine gives up to an idle Burnbox."""
    lines = []
    time.sleep(SETTLE_SECONDS)
    for server in servers:
        meter = cpu.Meter(server.parties)
        meter.measure(lambda: time.sleep(IDLE_SECONDS))
        lines.append(Line(f"loop {shape_name}, {server.name} idle, CPU ms per second: "
                          + _cpu_text(meter.per_operation(round(IDLE_SECONDS)), "per second")))
    return lines


def measure(servers: list[Server], shape_name: str) -> list[Line]:
    """Every server at one test at a time and PARALLEL at once, in alternating rounds; the
    report lines, with the CPU per loop of each server's parties (the benchmark's own
    client threads too): with every core busy, no load can run more loops a second than the
    cores over the whole loop's CPU."""
    lines: list[Line] = []
    cores = len(os.sched_getaffinity(0))
    for load in (1, PARALLEL):
        measured = {server.name: Measured(server.name, load, cpu.Meter(server.parties))
                    for server in servers}
        clients = {server.name: [server.client() for _ in range(load)] for server in servers}
        for server in servers:
            _run_loops(server, clients[server.name], WARM_UP * load, None)
        for _ in range(ROUNDS):
            for server in servers:
                figures = measured[server.name]
                figures.meter.measure(
                    partial(_run_loops, server, clients[server.name], TESTS, figures))
        for server in servers:
            figures = measured[server.name]
            steps = ", ".join(f"{step} {figures.p(step, 50):.1f} / {figures.p(step, 90):.1f}"
                              for step in figures.steps)
            lines.append(Line(f"loop {shape_name}, {load} at once, {server.name} (p50 / p90 ms, "
                              f"{len(figures.steps['loop'])} loops): {steps}"))
            if cpu.available():
                spent = figures.meter.per_operation(len(figures.steps["loop"]))
                bound = cores * 1000 / sum(spent.values()) if sum(spent.values()) else 0.0
                lines.append(Line(
                    f"loop {shape_name}, {load} at once, {server.name} CPU per loop: "
                    f"{_cpu_text(spent, 'per loop')} (at most {bound:.0f} loops/s on "
                    f"{cores} cores)"))
        if len(servers) == 2:
            ours, theirs = (measured[server.name] for server in servers)
            lines.append(Line(
                f"loop {shape_name}, {load} at once: Burnbox's loop over maildev's, p50 "
                f"{ours.p('loop', 50) / theirs.p('loop', 50):.2f}, p90 "
                f"{ours.p('loop', 90) / theirs.p('loop', 90):.2f} (target: at most 1.0); "
                f"DATA to 250 p50 {ours.p('DATA to 250', 50) / theirs.p('DATA to 250', 50):.2f}"
                f" (target at one: at most 1.5)"))
    return lines


def _seed(shape: Shape) -> tuple[str, str]:
    """Migrate the (emptied, for PostgreSQL) database; a team key of its lead's and the team's
    domain assignment id."""
    from bench.read_world import lead_key
    from tests.factories.mail import make_mail_world

    runtime = fresh_runtime(shape)
    with runtime.db.transaction() as session:
        world = make_mail_world(session, shape.settings)
        key = lead_key(session, world, "bench-loop", KEY_SCOPES)
    runtime.db.dispose()
    return key, str(world.ids["assignment"])


@contextlib.contextmanager
def burnbox(shape: Shape) -> Iterator[Burnbox]:
    """The shape's Burnbox up and answering, seeded."""
    key, assignment = _seed(shape)
    http_port, smtp_port = free_port(), free_port()
    # The clock re-checks the seeded domain's DNS, which no real server knows (it would be
    # marked failed, and no inbox could be made on it): ask a port where nothing answers. The
    # rate limiter on, as it is by default, far above the load.
    extra = {"BURNBOX_DNS__NAMESERVERS": f"127.0.0.1:{free_port()}",
             "BURNBOX_SMTP__HOST": "127.0.0.1", "BURNBOX_SMTP__PORT": str(smtp_port)}
    limits = {"BURNBOX_RATE_LIMITS__ENABLED": "true",
              "BURNBOX_RATE_LIMITS__AUTHENTICATED": "100000000/minute"}

    def env(**more: str) -> dict[str, str]:
        return shape.env(**extra, **more) | limits

    if shape.scaled:
        started = {"web": start([BURNBOX, "web"], env(PORT=str(http_port),
                                                      WEB_CONCURRENCY="2")),
                   "mailin": start([BURNBOX, "mailin"], env()),
                   "worker": start([BURNBOX, "worker"], env())}
        name = "Burnbox scaled"
        database = make_url(shape.settings.database.url).database or ""
        services = {"PostgreSQL": postgres_serving(database), "Redis": cpu.named("redis-server")}
    else:
        started = {"serve": start([BURNBOX, "serve"], env(BURNBOX_HTTP__PORT=str(http_port)))}
        name = "Burnbox embedded"
        services = {}
    parties = {role: cpu.in_group(process.pid) for role, process in started.items()}
    with running(list(started.values())):
        wait_for_http(f"http://127.0.0.1:{http_port}/healthz", timeout=120)
        wait_for_port(smtp_port, timeout=120)
        yield Burnbox(http_port, smtp_port, key, assignment, name,
                      parties | services | {"client": cpu.fixed([os.getpid()])})


@contextlib.contextmanager
def maildev() -> Iterator[Maildev | None]:
    """maildev up and answering, or None when it is not installed."""
    if not maildev_present():
        yield None
        return
    http_port, smtp_port = free_port(), free_port()
    process = start([str(MAILDEV), "--smtp", str(smtp_port), "--ip", "127.0.0.1",
                     "--web", str(http_port), "--web-ip", "127.0.0.1"], os.environ.copy())
    with running([process]):
        wait_for_http(f"http://127.0.0.1:{http_port}/api/healthz", timeout=60)
        wait_for_port(smtp_port, timeout=60)
        yield Maildev(http_port, smtp_port, {"maildev": cpu.in_group(process.pid),
                                             "client": cpu.fixed([os.getpid()])})


def run() -> list[Line]:
    """The loop on the embedded default and, when configured, the scaled shape, each beside
    maildev's."""
    lines: list[Line] = []
    database = os.environ.get("BURNBOX_BENCH_DATABASE_URL", "")
    shapes = [Shape(database="", redis_url="")]
    if database and os.environ.get("BURNBOX_BENCH_REDIS_URL"):
        shapes.append(Shape(database=postgres_database(database) or ""))
    with maildev() as peer:
        if peer is None:
            lines.append(Line("loop: maildev is not installed (make bench-maildev): Burnbox "
                              "alone"))
        for shape in shapes:
            with burnbox(shape) as ours:
                servers = [ours, *([peer] if peer else [])]
                if cpu.available():
                    lines += idle(servers, ours.name)
                lines += measure(servers, ours.name)
    lines.append(Line(f"loop: load average {os.getloadavg()[0]:.2f} (1 min) on "
                      f"{os.cpu_count()} CPUs"))
    return lines


if __name__ == "__main__":
    for result in run():
        print(result.line())
