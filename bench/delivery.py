"""Webhook delivery on the scaled shape: lag under steady ingest, throughput at saturation, and
how fast a backlog left by a Redis outage is delivered once Redis returns.

The processes users run: `burnbox mailin`, `burnbox worker --processes 1` (its default pools:
`worker.threads` for the fan-out, `worker.delivery_threads` for deliveries) and `burnbox
clock`, on PostgreSQL (BURNBOX_BENCH_DATABASE_URL, default as bench.ingest's, created when
missing; its schema is dropped and migrated) and a private `redis-server` started here on a
free port (so that it can be stopped for the outage without touching anyone else's). One team
with one webhook on `email.received`, pointed at a loopback receiver (tests.receiver) in a
process of its own that answers 200 at once and notes when each request arrived.

1. Lag: `RATE` e-mails a second for `SECONDS` s over `CONNECTIONS` SMTP connections, each on a
   fixed schedule; the lag of an e-mail is from its SMTP 250 to its webhook's arrival (p50,
   p99). Baseline: the same number of webhook bodies POSTed straight to the receiver on the
   same schedule by a pool of `worker.delivery_threads` threads, each with one kept-alive
   connection; its lag is from the scheduled moment to the arrival.
2. Throughput: `BACKLOG` committed deliveries, then their first attempts, sent at once as the
   fan-out sends them (`tasks.webhooks.send_attempts`: up to `DELIVERY_BATCH` deliveries a
   message); deliveries a second from the first message to the last arrival (median of
   `ROUNDS`).
   Baseline: the same number of bodies POSTed by the same pool as fast as it can. With it,
   the CPU each spent per delivery (the worker's processes; the pool's, this process), which
   says what a free core would allow on a machine busy with other work.
3. Slow receiver: `SLOW_BACKLOG` committed deliveries to a receiver that takes `SLOW_ANSWER`
   s to answer each request, their first attempts sent at once as in 2; deliveries a second
   from the first message to the last arrival. Baseline: with BURNBOX_BENCH_BASELINE set to
   another checkout of Burnbox (a `git worktree` of an older commit, same schema and
   dependencies), that checkout's `burnbox worker` on the same backlog, in place of this
   one's for its round (run from its folder, first on PYTHONPATH); without it, the same
   bodies POSTed by `worker.delivery_threads` threads one request at a time each, the most a
   worker making one attempt per delivery thread at a time could reach.
4. Outage: Redis is stopped, `BACKLOG` e-mail events are committed without their hand-off
   (as ingest leaves them while Redis is down), Redis is started again after `OUTAGE` s; the
   time from its return to the last webhook's arrival. No baseline: the figure is held
   against the target (30 s).

Run alone with `python -m bench.delivery`; `python -m bench.delivery slow` runs phase 3
alone.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import multiprocessing
import os
import queue
import shutil
import signal
import smtplib
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from sqlalchemy import select, update

import tasks
from bench import cpu
from bench.events import Shape, Target, running, seed, start
from bench.harness import Comparison
from bench.ingest import DEFAULT_DATABASE, postgres_database
from burnbox.timeutil import isoformat, utcnow
from models.delivery import webhooks
from models.events import EMAIL_RECEIVED, Event, NewEvent, record_events
from models.mail.inboxes import Inbox
from models.runtime import Runtime
from tasks.webhooks import send_attempts
from tests.factories.mail import message
from tests.processes import BIN, ROOT, free_port, wait_for_port
from tests.receiver import Answer, Receiver

RATE = 200  # e-mails a second
SECONDS = 30
CONNECTIONS = 8
BACKLOG = 5000
ROUNDS = 3
OUTAGE = 15.0  # seconds Redis stays down
SLOW_ANSWER = 2.0  # seconds the slow receiver takes to answer each request
SLOW_BACKLOG = 1000
BASELINE_TREE = os.environ.get("BURNBOX_BENCH_BASELINE", "")
TIMEOUT = 180.0  # seconds any phase may wait for its arrivals
SECRET = "whsec_" + "b" * 32


# --- the receiver, in a process of its own --------------------------------------------------

def _serve(conn: Connection) -> None:
    """Run a Receiver and answer the parent's commands until told to stop."""
    receiver = Receiver().start()
    conn.send(receiver.port)
    while True:
        command = conn.recv()
        with receiver.arrived:
            if command == "count":
                conn.send(len(receiver.requests))
            elif command == "arrivals":  # (subject, arrival) of every request so far
                conn.send([(json.loads(r.body)["data"]["subject"], r.at)
                           for r in receiver.requests])
            elif command == "reset":
                receiver.requests.clear()
                conn.send(None)
            elif isinstance(command, float):  # the delay of every answer from now on
                receiver.default = Answer(200, delay=command)
                conn.send(None)
            else:
                break
    receiver.stop()
    conn.send(None)


class ReceiverProcess:
    """A loopback receiver in its own process, so that its work is not charged to this one
    (`time.monotonic` is one clock for every process of the machine)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        self.port: int = self._conn.recv()
        self.url = f"http://127.0.0.1:{self.port}/hook"

    def ask(self, command: str) -> object:
        """Send one command; return its answer."""
        self._conn.send(command)
        return self._conn.recv()

    def arrivals(self, count: int) -> dict[str, float]:
        """Wait until `count` requests arrived since the last reset; when each subject came."""
        deadline = time.monotonic() + TIMEOUT
        while self.ask("count") < count:  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise RuntimeError(f"the receiver got {self.ask('count')} of {count} requests")
            time.sleep(0.02)
        arrived: dict[str, float] = {}
        for subject, at in self.ask("arrivals"):  # type: ignore[attr-defined]
            arrived.setdefault(subject, at)
        return arrived

    def stop(self) -> None:
        """Stop the receiver and its process."""
        self.ask("stop")
        self.process.join(timeout=10)


# --- a private Redis --------------------------------------------------------------------------

class PrivateRedis:
    """`redis-server` on a free loopback port, without persistence: stopping it loses what it
    held, as a restarted Redis without a disk does."""

    def __init__(self) -> None:
        program = shutil.which("redis-server")
        if program is None:
            raise RuntimeError("bench.delivery needs redis-server (apt-get install redis-server)")
        self.program = program
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self.process = subprocess.Popen(
            [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, timeout=30)

    def stop(self) -> None:
        """Stop the server."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


# --- figures ----------------------------------------------------------------------------------

@dataclass
class Lag:
    """Delays (seconds) from acknowledgement to arrival, against the bare POST pool's."""

    name: str
    delays: list[float]
    baseline: list[float]
    expected: int

    def line(self) -> str:
        """p50 and p99 of both, in milliseconds, the ratio of the p99s, and how many arrived."""
        ours, bare = _percentiles(self.delays), _percentiles(self.baseline)
        return (f"{self.name:<48} p50 {ours[0]:7.1f} ms p99 {ours[1]:7.1f} ms vs bare POST "
                f"p50 {bare[0]:6.1f} ms p99 {bare[1]:6.1f} ms  p99 ratio "
                f"{ours[1] / bare[1]:6.1f} ({len(self.delays)}/{self.expected} arrived)")


def _percentiles(delays: Sequence[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(delays, n=100, method="inclusive")
    return cuts[49] * 1000, cuts[98] * 1000


@dataclass
class Recovery:
    """How long after Redis came back the last webhook of the backlog arrived."""

    name: str
    first: float
    last: float
    target: float = 30.0

    def line(self) -> str:
        """One report line."""
        verdict = "within" if self.last <= self.target else "OVER"
        return (f"{self.name:<48} first after {self.first:5.1f} s, all after {self.last:5.1f} s"
                f"  ({verdict} the {self.target:.0f} s target)")


# --- the bare POST pool -----------------------------------------------------------------------

def _payload(subject: str) -> tuple[bytes, dict[str, str]]:
    """A webhook body and its headers as an attempt builds them."""
    now = utcnow()
    attempt = webhooks.Attempt(
        delivery_id=uuid.uuid4(), webhook_id=uuid.uuid4(), event=EMAIL_RECEIVED, number=1,
        url="", secret=SECRET, payload={
            "email_id": str(uuid.uuid4()), "inbox_id": str(uuid.uuid4()),
            "address": "box@bench.test", "from": "bench@sender.example",
            "to": "box@bench.test", "subject": subject, "size_bytes": 420,
            "has_attachments": False, "received_at": isoformat(now)},
        event_created_at=now, lease_token=uuid.uuid4(), started_at=now)
    body = webhooks.delivery_body(attempt)
    return body, webhooks.delivery_headers(attempt, body)


def _bare_posts(port: int, jobs: list[tuple[float, bytes, dict[str, str]]],
                threads: int) -> None:
    """POST every (not before, body, headers) job, in order, from `threads` threads, each on
    one kept-alive connection."""
    pending: queue.SimpleQueue[tuple[float, bytes, dict[str, str]]] = queue.SimpleQueue()
    for job in jobs:
        pending.put(job)

    def post() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            while True:
                try:
                    not_before, body, headers = pending.get_nowait()
                except queue.Empty:
                    return
                pause = not_before - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                connection.request("POST", "/hook", body=body, headers=headers)
                connection.getresponse().read()
        finally:
            connection.close()

    pool = [threading.Thread(target=post) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


# --- the phases -------------------------------------------------------------------------------

def _steady_lag(shape: Shape, receiver: ReceiverProcess, target: Target,
                smtp_port: int) -> Lag:
    count = RATE * SECONDS
    subjects = [f"steady {n}" for n in range(count)]
    messages = [message(target.address, subject=subject) for subject in subjects]
    acked: dict[str, float] = {}
    receiver.ask("reset")
    began = time.monotonic() + 1.0

    def send(first: int) -> None:
        with smtplib.SMTP("127.0.0.1", smtp_port, timeout=30) as client:
            for number in range(first, count, CONNECTIONS):
                pause = began + number / RATE - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                client.sendmail("bench@sender.example", [target.address], messages[number])
                acked[subjects[number]] = time.monotonic()  # the 250 has been read

    senders = [threading.Thread(target=send, args=(first,)) for first in range(CONNECTIONS)]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join()
    arrived = receiver.arrivals(count)
    delays = [arrived[subject] - at for subject, at in acked.items() if subject in arrived]

    receiver.ask("reset")
    began = time.monotonic() + 1.0
    scheduled = {f"bare {n}": began + n / RATE for n in range(count)}
    _bare_posts(receiver.port, [(at, *_payload(subject)) for subject, at in scheduled.items()],
                shape.settings.worker.delivery_threads)
    bare = receiver.arrivals(count)
    return Lag(f"{RATE} e-mails/s for {SECONDS} s: SMTP 250 -> webhook", delays,
               [bare[subject] - at for subject, at in scheduled.items()], count)


def _committed_deliveries(runtime: Runtime, target: Target, count: int
                          ) -> dict[uuid.UUID, uuid.UUID]:
    """`count` e-mail events of the target's team, already dispatched, each with its pending
    delivery to the webhook (delivery id -> webhook id)."""
    with runtime.db.transaction() as session:
        inbox = session.get(Inbox, target.inbox_id)
        assert inbox is not None
        ids = record_events(session, [_email_event(inbox, f"drain {n}") for n in range(count)])
        session.execute(update(Event).where(Event.id.in_(ids)).values(dispatched_at=utcnow()))
        return webhooks.create_deliveries(
            session, session.scalars(select(Event).where(Event.id.in_(ids))).all())


def _email_event(inbox: Inbox, subject: str) -> NewEvent:
    return NewEvent(EMAIL_RECEIVED, {
        "email_id": str(uuid.uuid4()), "inbox_id": str(inbox.id), "address": inbox.full_address,
        "from": "bench@sender.example", "to": inbox.full_address, "subject": subject,
        "size_bytes": 420, "has_attachments": False, "received_at": isoformat(utcnow())},
        org_id=inbox.org_id, team_id=inbox.team_id)


def _drain_rate(runtime: Runtime, receiver: ReceiverProcess,
                deliveries: dict[uuid.UUID, uuid.UUID]) -> float:
    """Send the first attempts of the committed deliveries; deliveries a second until the last
    arrived."""
    receiver.ask("reset")
    started = time.monotonic()
    send_attempts(deliveries, 1)
    return len(deliveries) / (max(receiver.arrivals(len(deliveries)).values()) - started)


def _bare_rate(shape: Shape, receiver: ReceiverProcess, count: int = BACKLOG,
               label: str = "bare drain") -> float:
    jobs = [(0.0, *_payload(f"{label} {n}")) for n in range(count)]
    receiver.ask("reset")
    started = time.monotonic()
    _bare_posts(receiver.port, jobs, shape.settings.worker.delivery_threads)
    return count / (max(receiver.arrivals(count).values()) - started)


@dataclass
class CpuCost:
    """CPU milliseconds per delivery: the worker process's, against the bare pool's."""

    name: str
    worker_ms: float
    bare_ms: float

    def line(self) -> str:
        """One report line, with the rate one busy core would allow each."""
        return (f"{self.name:<48} worker {self.worker_ms:5.2f} ms vs bare pool "
                f"{self.bare_ms:5.2f} ms CPU a delivery (one core: {1000 / self.worker_ms:5.0f}"
                f" vs {1000 / self.bare_ms:5.0f}/s)")


def _saturation(shape: Shape, runtime: Runtime, receiver: ReceiverProcess, target: Target,
                worker_group: int) -> tuple[Comparison, CpuCost]:
    # Only the drain is metered, not the rows each candidate round commits first.
    ours, bare = [], []
    worker = cpu.Meter({"worker": cpu.in_group(worker_group)})
    pool = cpu.Meter({"bare": cpu.fixed([os.getpid()])})

    def drain() -> None:
        deliveries = _committed_deliveries(runtime, target, BACKLOG)
        ours.append(worker.measure(lambda: _drain_rate(runtime, receiver, deliveries)))

    for round_number in range(ROUNDS):
        if round_number % 2:
            drain()
            bare.append(pool.measure(lambda: _bare_rate(shape, receiver)))
        else:
            bare.append(pool.measure(lambda: _bare_rate(shape, receiver)))
            drain()
    operations = BACKLOG * ROUNDS
    return (Comparison(f"backlog of {BACKLOG} deliveries vs bare POST pool",
                       statistics.median(ours), statistics.median(bare), "deliveries/s"),
            CpuCost("CPU per delivery at saturation", worker.per_operation(operations)["worker"],
                    pool.per_operation(operations)["bare"]))


def _slow_rate(runtime: Runtime, receiver: ReceiverProcess, target: Target) -> float:
    """Deliveries a second of the running worker to a receiver answering in `SLOW_ANSWER` s."""
    deliveries = _committed_deliveries(runtime, target, SLOW_BACKLOG)
    receiver.ask(SLOW_ANSWER)
    try:
        return _drain_rate(runtime, receiver, deliveries)
    finally:
        receiver.ask(0.0)


def _bare_slow_rate(shape: Shape, receiver: ReceiverProcess) -> float:
    receiver.ask(SLOW_ANSWER)
    try:
        return _bare_rate(shape, receiver, SLOW_BACKLOG, "bare slow")
    finally:
        receiver.ask(0.0)


def _baseline_name() -> str:
    commit = subprocess.run(["git", "-C", BASELINE_TREE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    return f"worker of {commit or BASELINE_TREE}"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=60)


def _worker(shape: Shape, tree: Path) -> subprocess.Popen[bytes]:
    """`burnbox worker --processes 1` of the checkout `tree`."""
    env = shape.env(PYTHONPATH=str(tree)) if tree != ROOT else shape.env()
    return subprocess.Popen([str(BIN / "burnbox"), "worker", "--processes", "1"], cwd=tree,
                            env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _slow_receiver(shape: Shape, runtime: Runtime, receiver: ReceiverProcess, target: Target,
                   processes: list[subprocess.Popen[bytes]]) -> Comparison:
    """This worker against the baseline (see the module docstring) on a slow receiver; with a
    baseline checkout its worker replaces processes[0] for its round, which then starts again
    (a small unmeasured drain first, so that each is up and warm)."""
    ours = _slow_rate(runtime, receiver, target)
    if not BASELINE_TREE:
        return Comparison(f"{SLOW_ANSWER:.0f} s receiver vs one POST a delivery thread",
                          ours, _bare_slow_rate(shape, receiver), "deliveries/s")
    for tree in (Path(BASELINE_TREE).resolve(), ROOT):
        _stop(processes[0])
        processes[0] = _worker(shape, tree)
        _drain_rate(runtime, receiver, _committed_deliveries(runtime, target, 50))
        if tree != ROOT:
            baseline = _slow_rate(runtime, receiver, target)
    return Comparison(f"{SLOW_ANSWER:.0f} s receiver vs {_baseline_name()}", ours, baseline,
                      "deliveries/s")


def _outage(runtime: Runtime, redis: PrivateRedis, receiver: ReceiverProcess,
            target: Target) -> Recovery:
    receiver.ask("reset")
    redis.stop()
    down_until = time.monotonic() + OUTAGE
    with runtime.db.transaction() as session:
        inbox = session.get(Inbox, target.inbox_id)
        assert inbox is not None
        # No hand-off (events_committed is off here): a commit's fails while Redis is down.
        record_events(session, [_email_event(inbox, f"outage {n}") for n in range(BACKLOG)])
    time.sleep(max(down_until - time.monotonic(), 0))
    redis.start()
    returned = time.monotonic()
    arrived = receiver.arrivals(BACKLOG).values()
    return Recovery(f"{BACKLOG} e-mails committed during a {OUTAGE:.0f} s Redis outage",
                    min(arrived) - returned, max(arrived) - returned)


@contextlib.contextmanager
def _deployment() -> Iterator[tuple[Shape, Runtime, PrivateRedis, ReceiverProcess, Target,
                                    int, list[subprocess.Popen[bytes]]]]:
    database = postgres_database(os.environ.get("BURNBOX_BENCH_DATABASE_URL", DEFAULT_DATABASE))
    if database is None:
        raise RuntimeError("bench.delivery needs PostgreSQL (BURNBOX_BENCH_DATABASE_URL)")
    redis = PrivateRedis()
    redis.start()
    receiver = ReceiverProcess()
    try:
        shape = Shape(database, redis.url)
        target = seed(shape, receiver.url)
        runtime = Runtime.from_settings(shape.settings)
        tasks.setup_broker(runtime)
        runtime.db.handoffs.events_committed = None  # this process hands nothing over by commit
        smtp = free_port()
        burnbox = str(BIN / "burnbox")
        processes = [start([burnbox, "worker", "--processes", "1"], shape.env()),
                     start([burnbox, "mailin"], shape.env(BURNBOX_SMTP__PORT=str(smtp))),
                     start([burnbox, "clock"], shape.env())]
        with running(processes):
            wait_for_port(smtp, timeout=60)
            # The worker first: its process group (each process started here leads its
            # own) is the one metered, and the slow-receiver phase may replace it.
            yield shape, runtime, redis, receiver, target, smtp, processes
        runtime.db.dispose()
    finally:
        receiver.stop()
        redis.stop()


def run() -> list[Lag | Comparison | CpuCost | Recovery]:
    """Measure the figures on one deployment."""
    with _deployment() as (shape, runtime, redis, receiver, target, smtp, processes):
        # Unmeasured: every process, pool and connection gets in place first.
        _drain_rate(runtime, receiver, _committed_deliveries(runtime, target, 500))
        figures: list[Lag | Comparison | CpuCost | Recovery] = [
            _steady_lag(shape, receiver, target, smtp),
            *_saturation(shape, runtime, receiver, target, processes[0].pid)]
        figures.append(_slow_receiver(shape, runtime, receiver, target, processes))
        figures.append(_outage(runtime, redis, receiver, target))
        return figures


def run_slow() -> list[Comparison]:
    """The slow-receiver phase alone."""
    with _deployment() as (shape, runtime, _redis, receiver, target, _smtp, processes):
        _drain_rate(runtime, receiver, _committed_deliveries(runtime, target, 500))
        return [_slow_receiver(shape, runtime, receiver, target, processes)]


if __name__ == "__main__":
    for figure in run_slow() if sys.argv[1:] == ["slow"] else run():
        print(figure.line())
