"""Events out, measured on real processes over loopback.

1. Latency from the SMTP 250 to the inbox stream's `email.received` message and to the
   webhook's arrival at a loopback receiver (p50 and p99; how many arrived of how many sent):
   at a steady `RATE` messages a second for `SECONDS` seconds, and for single messages
   `IDLE_GAP` seconds apart (what a test run waiting for one code sees); for those single
   messages also to the return of a `GET /inboxes/:id/emails/wait?subject=...` request made
   just before the message is sent (the inbox WebSocket of the same messages is its baseline:
   both are woken by the same published message). Same-run baselines: a
   message published on the key-value store reaching a socket (the bridge alone; scaled shape
   only, the embedded store lives inside the server process), and a bare pub/sub round trip
   on the store.
2. How many WebSockets one gunicorn gevent worker holds: sockets are opened one after another
   until one fails or `SOCKET_BOUND` are open; every one must then answer an application ping.
   The worker's resident memory before and after gives the cost per socket. gunicorn's
   `worker_connections` (1000 in gunicorn.conf.py) is raised above the bound for this run,
   so the figure is what the process holds, not that cap.

Shapes: the embedded one (`burnbox serve` on SQLite; `burnbox web` for the sockets) by
default; the scaled one (`burnbox web` with one worker, `burnbox worker`, `burnbox mailin` on
PostgreSQL and Redis) when BURNBOX_BENCH_DATABASE_URL and BURNBOX_BENCH_REDIS_URL are set (the
database named there is emptied). Run alone with `python -m bench.events`;
BURNBOX_BENCH_EVENTS_RATE sets `RATE`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import smtplib
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import requests
import websocket
from sqlalchemy import text

import tasks
from burnbox.kv import KeyValueStore, make_store
from burnbox.settings import Settings, load_settings
from models.delivery.realtime import publish, user_channel
from models.delivery.webhooks import create_webhook
from models.runtime import Runtime
from models.schema import upgrade
from models.tenancy.access import resolve_org_access
from models.tenancy.rbac import load_grants
from models.tenancy.teams import resolve_team_access
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.factories.tenancy import caller_of
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http, wait_for_port
from tests.receiver import Receiver

# Messages a second (the event-path target is set at 200: BURNBOX_BENCH_EVENTS_RATE=200).
RATE = int(os.environ.get("BURNBOX_BENCH_EVENTS_RATE", "20"))
SECONDS = 10
SETTLE = 30.0  # how long after the last message arrivals are waited for
SOCKET_BOUND = 2000
SOCKET_TIMEOUT = 10.0
# Single messages, each alone in the pipeline: what a test run waiting for one code sees.
IDLE_MESSAGES = 100  # enough for a p99 of its own, not only a maximum
IDLE_GAP = 1.0
WAIT_LEAD = 0.5  # how long before its message a wait request is made
BASELINE_ROUNDS = 200
WARM_UP = 10


@dataclass
class Latency:
    """Delays (seconds) of the messages that arrived, out of `expected` sent."""

    name: str
    delays: list[float]
    expected: int

    def line(self) -> str:
        """One report line: p50 and p99 (the maximum below 100 samples) in milliseconds, and
        how many arrived."""
        if len(self.delays) < 2:
            return f"{self.name:<60} {len(self.delays)}/{self.expected} arrived"
        p50 = statistics.median(self.delays) * 1000
        if len(self.delays) >= 100:
            tail = "p99", statistics.quantiles(self.delays, n=100, method="inclusive")[98] * 1000
        else:
            tail = "max", max(self.delays) * 1000
        return (f"{self.name:<60} p50 {p50:8.2f} ms  {tail[0]} {tail[1]:8.2f} ms  "
                f"({len(self.delays)}/{self.expected} arrived)")


@dataclass
class Held:
    """Sockets one web process held, and what they cost."""

    name: str
    sockets: int
    answered: int
    rss_per_socket_kib: float
    stopped_by: str

    def line(self) -> str:
        """One report line."""
        return (f"{self.name:<60} {self.sockets} open, {self.answered} answered a ping, "
                f"{self.rss_per_socket_kib:.0f} KiB RSS each; stopped by {self.stopped_by}")


@dataclass
class Target:
    """The seeded data: an inbox (with a webhook on its team) and a signed-in user who may
    read it."""

    inbox_id: uuid.UUID
    address: str
    user_id: uuid.UUID
    headers: dict[str, str]


class Shape:
    """Settings and process command lines of one deployment shape."""

    def __init__(self, database: str | None = None, redis_url: str | None = None) -> None:
        """The scaled shape on `database` and `redis_url` (by default the BURNBOX_BENCH_*
        variables), the embedded one when either is empty."""
        if database is None:
            database = os.environ.get("BURNBOX_BENCH_DATABASE_URL", "")
        if redis_url is None:
            redis_url = os.environ.get("BURNBOX_BENCH_REDIS_URL", "")
        self.scaled = bool(database and redis_url)
        self.data_dir = tempfile.mkdtemp(prefix="burnbox-bench-")
        overrides: dict[str, object] = {
            "data_dir": self.data_dir, "log.level": "WARNING",
            "auth.jwt_secret": "bench-" + "x" * 40, "smtp.hostname": "mx.bench.test"}
        if self.scaled:
            overrides |= {"database.url": database, "redis.url": redis_url}
        self.settings: Settings = load_settings(environ={}, overrides=overrides)
        self.name = "PostgreSQL + Redis" if self.scaled else "SQLite, in-process store"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a Burnbox child process of this shape."""
        settings = self.settings
        scaled = ({"BURNBOX_DATABASE__URL": settings.database.url,
                   "BURNBOX_REDIS__URL": settings.redis.url} if self.scaled else {})
        return process_env(
            BURNBOX_DATA_DIR=self.data_dir, BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret,
            BURNBOX_SMTP__HOSTNAME=settings.smtp.hostname, BURNBOX_LOG__LEVEL="WARNING",
            BURNBOX_WEBHOOKS__ALLOW_PRIVATE_TARGETS="true", BURNBOX_RATE_LIMITS__ENABLED="false",
            BURNBOX_WEBSOCKETS__MAX_PER_USER="0", BURNBOX_HTTP__HOST="127.0.0.1",
            **scaled, **extra)

    def web(self, port: int, **extra: str) -> subprocess.Popen[bytes]:
        """`burnbox web` (gunicorn) with one gevent worker."""
        return start([str(BIN / "burnbox"), "web"],
                      self.env(PORT=str(port), WEB_CONCURRENCY="1", **extra))


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextlib.contextmanager
def running(processes: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    """Stop the processes (their whole groups) on the way out."""
    try:
        yield
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def fresh_runtime(shape: Shape) -> Runtime:
    """A runtime of the shape on a migrated database: the scaled shape's PostgreSQL schema is
    emptied first (the embedded shape's data folder is new)."""
    runtime = Runtime.from_settings(shape.settings)
    if shape.scaled:
        with runtime.db.engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    upgrade(runtime.db.engine)
    return runtime


def seed(shape: Shape, hook_url: str) -> Target:
    """Migrate, then commit a team with a verified domain, an inbox and a webhook on it."""
    runtime = fresh_runtime(shape)
    tasks.setup_broker(runtime)
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world, ttl="1h")
    with runtime.db.transaction() as session:
        org = resolve_org_access(session, load_grants(session), caller_of(world.users["owner"]),
                                 world.ids["org"])
        create_webhook(session, resolve_team_access(session, org, world.ids["team"]),
                       url=hook_url, events=["email.received"], allow_private=True)
    runtime.db.dispose()
    return Target(inbox.id, inbox.full_address, world.users["team_member"].id,
                  world.headers["team_member"])


def _connect(base: str, path: str, headers: dict[str, str],
             session: requests.Session) -> websocket.WebSocket:
    ticket = session.post(f"{base}/api/v1/ws/ticket", headers=headers, timeout=SOCKET_TIMEOUT)
    ticket.raise_for_status()
    url = f"{base.replace('http', 'ws', 1)}/api/v1/ws/{path}?ticket={ticket.json()['ticket']}"
    return websocket.create_connection(url, timeout=SOCKET_TIMEOUT)


class Arrivals:
    """When each numbered message arrived (time.monotonic), filled by a reader thread."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self._lock = threading.Lock()

    def note(self, key: str, at: float | None = None) -> None:
        """Record the first arrival of `key` (now, unless `at` says when)."""
        now = time.monotonic() if at is None else at
        with self._lock:
            self.at.setdefault(key, now)

    def has_all(self, keys: Iterable[str]) -> bool:
        """True once every key arrived."""
        with self._lock:
            return all(key in self.at for key in keys)


def _read(ws: websocket.WebSocket, arrivals: Arrivals, key: Callable[[dict], str | None],
          stop: threading.Event) -> None:
    ws.settimeout(0.5)
    while not stop.is_set():
        try:
            raw = ws.recv()
        except websocket.WebSocketTimeoutException:
            continue
        except (websocket.WebSocketException, OSError):
            return
        found = key(json.loads(raw))
        if found is not None:
            arrivals.note(found)


def _delays(sent: dict[str, float], arrivals: Arrivals) -> list[float]:
    return [arrivals.at[key] - at for key, at in sent.items() if key in arrivals.at]


class MailProbe:
    """One SMTP connection sending to the inbox, one socket on its stream, and the webhook
    receiver: sends numbered messages and times each 250 to its two arrivals."""

    def __init__(self, shape: Shape, base: str, smtp_port: int, target: Target,
                 receiver: Receiver) -> None:
        self.shape, self.target, self.receiver = shape, target, receiver
        self.on_socket, self.on_hook, self.on_wait = Arrivals(), Arrivals(), Arrivals()
        self._base = base
        self._waits: list[threading.Thread] = []
        self._stop = threading.Event()
        self._ws = _connect(base, f"inboxes/{target.inbox_id}", target.headers,
                            requests.Session())
        self._reader = threading.Thread(target=_read, daemon=True, args=(
            self._ws, self.on_socket, lambda m: m["data"]["subject"], self._stop))
        self._reader.start()
        self._smtp = smtplib.SMTP("127.0.0.1", smtp_port, timeout=30)

    def close(self) -> None:
        """Close the connection and the socket."""
        self._stop.set()
        self._reader.join(timeout=5)
        self._ws.close()
        self._smtp.quit()

    def _wait_for(self, subject: str) -> None:
        """Note when a wait request for the e-mail titled `subject` returns it."""
        response = requests.get(
            f"{self._base}/api/v1/inboxes/{self.target.inbox_id}/emails/wait",
            params={"subject": subject, "timeout": f"{SETTLE:.0f}s"},
            headers=self.target.headers, timeout=SETTLE + 10)
        if response.status_code == 200 and response.json()["emails"]:
            self.on_wait.note(subject)

    def send(self, label: str, count: int, interval: float, *, waits: bool = False
             ) -> dict[str, float]:
        """Send `count` messages `interval` seconds apart (on a fixed schedule, so a slow 250
        does not lower the rate); wait for their arrivals; return when each 250 was read.
        With `waits`, a wait request for each message is made `WAIT_LEAD` seconds before it."""
        sent: dict[str, float] = {}
        started = time.monotonic()
        for number in range(count):
            subject = f"{label} {number}"
            if waits:
                pause = started + number * interval - WAIT_LEAD - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                waiter = threading.Thread(target=self._wait_for, args=(subject,), daemon=True)
                waiter.start()
                self._waits.append(waiter)
            pause = started + number * interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            self._smtp.sendmail("bench@sender.example", [self.target.address],
                                message(self.target.address, subject=subject))
            sent[subject] = time.monotonic()  # sendmail returns once the 250 is read
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            with self.receiver.arrived:
                for request in self.receiver.requests:
                    self.on_hook.note(json.loads(request.body)["data"]["subject"], request.at)
            if (self.on_socket.has_all(sent) and self.on_hook.has_all(sent)
                    and (not waits or self.on_wait.has_all(sent))):
                break
            time.sleep(0.05)
        return sent

    def measure(self, label: str, count: int, interval: float, *, waits: bool = False
                ) -> list[Latency]:
        """The latencies of one run: socket, webhook, and with `waits` the wait request."""
        sent = self.send(label, count, interval, waits=waits)
        where = f"{label}, {self.shape.name}"
        figures = [Latency(f"SMTP 250 -> inbox WebSocket ({where})",
                           _delays(sent, self.on_socket), count),
                   Latency(f"SMTP 250 -> webhook at receiver ({where})",
                           _delays(sent, self.on_hook), count)]
        if waits:
            figures.append(Latency(f"SMTP 250 -> GET .../emails/wait returns ({where})",
                                   _delays(sent, self.on_wait), count))
        return figures


def _bridge_latency(shape: Shape, base: str, target: Target, store: KeyValueStore) -> Latency:
    """A message published on the store by this process, to a socket of the web process."""
    stop, arrivals = threading.Event(), Arrivals()
    ws = _connect(base, "notifications", target.headers, requests.Session())
    reader = threading.Thread(target=_read, args=(ws, arrivals, lambda m: m["data"].get("n"),
                                                  stop), daemon=True)
    reader.start()
    sent: dict[str, float] = {}
    for number in range(BASELINE_ROUNDS):
        key = str(number)
        sent[key] = time.monotonic()
        publish(store, user_channel(target.user_id), "bench", {"n": key})
        deadline = time.monotonic() + 5
        while not arrivals.has_all([key]) and time.monotonic() < deadline:
            time.sleep(0.0005)
    stop.set()
    reader.join(timeout=5)
    ws.close()
    return Latency(f"baseline: store publish -> WebSocket ({shape.name})",
                   _delays(sent, arrivals), BASELINE_ROUNDS)


def _pubsub_round_trip(shape: Shape, store: KeyValueStore) -> Latency:
    """The bare pub/sub round trip on the shape's store, in this process."""
    channel = f"realtime:bench:{uuid.uuid4().hex}"
    subscription = store.subscribe(channel)
    delays = []
    try:
        for number in range(BASELINE_ROUNDS):
            started = time.monotonic()
            store.publish(channel, str(number))
            if subscription.get(timeout=5) is not None:
                delays.append(time.monotonic() - started)
    finally:
        subscription.close()
    return Latency(f"baseline: bare pub/sub round trip ({shape.name})", delays, BASELINE_ROUNDS)


def _latencies(shape: Shape) -> list[Latency]:
    receiver = Receiver().start()
    try:
        target = seed(shape, receiver.url)
        http, smtp = free_port(), free_port()
        if shape.scaled:
            processes = [shape.web(http),
                         start([str(BIN / "burnbox"), "worker", "--processes", "1"],
                                shape.env()),
                         start([str(BIN / "burnbox"), "mailin"],
                                shape.env(BURNBOX_SMTP__PORT=str(smtp)))]
        else:
            processes = [start([str(BIN / "burnbox"), "serve", "--port", str(http),
                                 "--smtp-port", str(smtp)], shape.env())]
        with running(processes):
            base = f"http://127.0.0.1:{http}"
            wait_for_http(f"{base}/healthz", timeout=60)
            wait_for_port(smtp, timeout=60)
            probe = MailProbe(shape, base, smtp, target, receiver)
            try:
                # Unmeasured: every pool, connection and subscription gets in place first.
                probe.send("warm-up", WARM_UP, 0.0)
                figures = [*probe.measure(f"{RATE}/s for {SECONDS} s", RATE * SECONDS,
                                          1 / RATE),
                           *probe.measure(f"one per {IDLE_GAP:.0f} s", IDLE_MESSAGES, IDLE_GAP,
                                          waits=True)]
            finally:
                probe.close()
            store = make_store(shape.settings)
            if shape.scaled:
                figures.append(_bridge_latency(shape, base, target, store))
            figures.append(_pubsub_round_trip(shape, store))
        return figures
    finally:
        receiver.stop()


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _worker_pid(master: int) -> int:
    """The pid of the one worker of a gunicorn master."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise TimeoutError("gunicorn started no worker")


def _sockets_held(shape: Shape) -> Held:
    """Open sockets against one gevent worker until one fails or SOCKET_BOUND are open."""
    target = seed(shape, "http://127.0.0.1:9/unused")
    port = free_port()
    master = shape.web(port, GUNICORN_CMD_ARGS=f"--worker-connections {SOCKET_BOUND + 100}")
    sockets: list[websocket.WebSocket] = []
    with running([master]):
        base = f"http://127.0.0.1:{port}"
        wait_for_http(f"{base}/healthz", timeout=60)
        worker = _worker_pid(master.pid)
        session = requests.Session()
        before, stopped_by = _rss_kib(worker), f"the bound ({SOCKET_BOUND})"
        try:
            while len(sockets) < SOCKET_BOUND:
                try:
                    sockets.append(_connect(base, "notifications", target.headers, session))
                except (OSError, requests.RequestException,
                        websocket.WebSocketException) as exc:
                    stopped_by = f"{type(exc).__name__} at socket {len(sockets) + 1}"
                    break
            after = _rss_kib(worker)
            answered = 0
            for ws in sockets:
                with contextlib.suppress(OSError, websocket.WebSocketException):
                    ws.send(json.dumps({"type": "ping"}))
                    if json.loads(ws.recv())["type"] == "pong":
                        answered += 1
        finally:
            for ws in sockets:
                with contextlib.suppress(OSError, websocket.WebSocketException):
                    ws.close()
    per_socket = (after - before) / len(sockets) if sockets else 0.0
    return Held(f"sockets held by one gunicorn gevent worker ({shape.name})", len(sockets),
                answered, per_socket, stopped_by)


def run() -> list[Latency | Held]:
    """Measure both figures on the shape the environment chooses."""
    return [*_latencies(Shape()), _sockets_held(Shape())]


if __name__ == "__main__":
    for figure in run():
        print(figure.line())
