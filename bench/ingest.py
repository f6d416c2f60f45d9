"""SMTP ingest throughput and latency: Burnbox's `mailin` against the bare-aiosmtpd ceiling.

Two server processes, started and stopped here, each one plain asyncio event loop in its own
process: the candidate is `burnbox mailin`, which really stores (parse, raw message and
attachments written and fsynced, the e-mail committed before the 250 by the group-commit
committer in its store process, the event handed to the broker), with `smtp.store_threads` set
to the largest load; the ceiling is `python -m bench.ingest --ceiling PORT`, an
aiosmtpd server built like mailin's (SMTPUTF8, undecoded data) whose handler answers 250 and
discards the message: what the framework does on this machine when the application costs
nothing.

The same loads drive both in alternating rounds: PROCESSES client processes (started once,
kept for the whole run), each holding its share of the connections on one thread with
`bench.smtp_client` (a lean load generator: smtplib in a thread per connection took a good part
of the CPU the servers share with it). Each connection sends its messages one after the other,
one recipient each, spread over INBOXES inboxes; a round is ROUND_MESSAGES messages (1280, or
BURNBOX_BENCH_ROUND_MESSAGES). The loads are CONNECTIONS concurrent connections (16, 64 and 128
by default; any number from 1, the client processes sharing them as evenly as they divide).
Two shapes: 2 KB of plain text, and ~50 KB of multipart/mixed (a short text part and a 36 KiB
random binary attachment, base64-encoded). Every message has its own Message-ID (and attachment).

Per shape and load, for each server: messages per second (median over ROUNDS rounds, each from
the first connection's start to the last one's end), p50/p99 latency of one message (MAIL FROM
to the reply after the data) over every message of every round, and the ratio of the rates.
Then the headline: each server at the load where it was fastest, which is its ceiling in this
run (the bare server peaks at few connections; Burnbox, whose group commit stores whatever
arrived together in one transaction, at many), and the ratio of those two rates; with it the
CPU each party spent per acknowledged message at those loads (the server's processes, the
PostgreSQL processes serving the benchmark's database, the clients; read from /proc,
`bench.cpu`) and the rate that allows with every core busy, which shows what bounds the ratio
on this machine. One unmeasured warm-up round per shape, load and server comes first. Each
server runs as one process (Burnbox's with its store process), or as
BURNBOX_BENCH_SERVER_PROCESSES forked processes sharing its port (Burnbox as `burnbox mailin
--processes N`, the ceiling with the same supervisor). After the run, the e-mails in the
database are counted against the messages Burnbox acknowledged.

A second ceiling, when Node is on the PATH and maildev is installed (`make bench-maildev` puts
maildev 3.0.0 in bench/node_modules; BURNBOX_BENCH_MAILDEV names another executable): maildev,
which keeps mail in memory (the last MAILDEV_KEEPS messages here) and stores nothing durably, is
what many test setups run today. After the bare server's rounds of each shape, Burnbox and
maildev run the same loads in alternating rounds of their own, and get the same lines.

Two versions of Burnbox, in one run: with BURNBOX_BENCH_BASELINE set to another checkout of
Burnbox (a `git worktree` of an older commit, with the same schema and dependencies), the
baseline is that checkout's `burnbox mailin` (run from its folder, first on PYTHONPATH) instead
of the bare server. Both store into the same database, and the report is per load instead of
best against best: the ratio of the rates, and for each server the CPU per message of its SMTP
process and its store process (with PostgreSQL's and the clients'), and the ratio of the two
servers' own CPU per message, which the other work on a shared machine disturbs far less than
it does the rates.

Database: PostgreSQL at BURNBOX_BENCH_DATABASE_URL (default
postgresql+psycopg://postgres@127.0.0.1:5432/burnbox_bench; created when missing, its schema is
dropped and migrated, then seeded here before mailin starts) and, when BURNBOX_BENCH_REDIS_URL
is set, the Redis broker (its queues are flushed at the end; else mailin's in-process one,
which no worker drains). When PostgreSQL cannot be reached it says so and measures SQLite in
the run's temporary data directory (removed at the end, with the stored objects) instead. Run
alone with `python -m bench.ingest`; `make bench` runs it with the others.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import multiprocessing
import os
import queue
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiosmtpd.smtp import SMTP
from sqlalchemy import create_engine, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from bench import cpu, smtp_client
from bench.harness import compare_rounds
from tests.processes import BIN, ROOT, free_port, process_env

if TYPE_CHECKING:
    from burnbox.settings import Settings
    from models.runtime import Runtime

DEFAULT_DATABASE = "postgresql+psycopg://postgres@127.0.0.1:5432/burnbox_bench"
PROCESSES = 4
# Server processes of each server, Burnbox (`burnbox mailin --processes`) and the ceiling alike.
SERVER_PROCESSES = int(os.environ.get("BURNBOX_BENCH_SERVER_PROCESSES", "1"))
# The loads: concurrent SMTP connections in all (spread over the PROCESSES client processes, the
# first ones holding one more when it does not divide), or the comma-separated
# BURNBOX_BENCH_CONNECTIONS. A round is ROUND_MESSAGES messages whatever the load.
CONNECTIONS = tuple(int(count) for count in
                    os.environ.get("BURNBOX_BENCH_CONNECTIONS", "16,64,128").split(","))
ROUND_MESSAGES = int(os.environ.get("BURNBOX_BENCH_ROUND_MESSAGES", "1280"))
WARM_UP = 10  # per connection, in the unmeasured first round of each shape, load and server
INBOXES = 64
ROUNDS = int(os.environ.get("BURNBOX_BENCH_ROUNDS", "7"))  # per server, shape and load
# Another checkout whose `burnbox mailin` is the baseline instead of the bare server ("": none).
BASELINE_TREE = os.environ.get("BURNBOX_BENCH_BASELINE", "")
# maildev (Node; keeps mail in memory), the tool many test setups run today: a second ceiling,
# measured when Node and this executable are present (`make bench-maildev` installs it here).
MAILDEV = Path(os.environ.get("BURNBOX_BENCH_MAILDEV")
               or Path(__file__).resolve().parent / "node_modules" / ".bin" / "maildev")
MAILDEV_NAME = "maildev 3.0.0"
# Mail maildev keeps (the oldest dropped beyond it): its default keeps every message, and a
# run sends tens of thousands of 50 KB messages, more than a Node heap holds.
MAILDEV_KEEPS = 1000
SMALL_BYTES = 2048
ATTACHMENT_BYTES = 36 * 1024  # before base64: the whole message comes to about 50 KB
HOSTNAME = "mx.bench.example"
START_TIMEOUT = 60.0  # seconds for a server to accept connections
ROUND_TIMEOUT = 300.0  # seconds for one round's clients to report


# -- the messages ---------------------------------------------------------------------------

def _head(to: str, content_type: str) -> bytes:
    return (f"From: bench@sender.example\r\nTo: {to}\r\nSubject: Ingest benchmark\r\n"
            f"Message-ID: <{uuid.uuid4().hex}@sender.example>\r\nMIME-Version: 1.0\r\n"
            f"Content-Type: {content_type}\r\n\r\n").encode()


def small(to: str) -> bytes:
    """A plain-text message of exactly SMALL_BYTES bytes, with its own Message-ID."""
    head = _head(to, "text/plain; charset=us-ascii")
    line = b"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do.\r\n"
    room = SMALL_BYTES - len(head)
    tail = room % len(line)
    return head + line * (room // len(line)) + (b"x" * (tail - 2) + b"\r\n" if tail else b"")


def with_attachment(to: str) -> bytes:
    """A multipart/mixed message of about 50 KB: a short text part and ATTACHMENT_BYTES random
    bytes as a base64 application/octet-stream attachment, both its own."""
    boundary = f"=_{uuid.uuid4().hex}"
    encoded = base64.b64encode(os.urandom(ATTACHMENT_BYTES))
    wrapped = b"\r\n".join(encoded[n:n + 76] for n in range(0, len(encoded), 76))
    return (_head(to, f'multipart/mixed; boundary="{boundary}"')
            + f"--{boundary}\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
              "The report is attached.\r\n\r\n"
              f"--{boundary}\r\nContent-Type: application/octet-stream\r\n"
              'Content-Disposition: attachment; filename="report.bin"\r\n'
              "Content-Transfer-Encoding: base64\r\n\r\n".encode()
            + wrapped + f"\r\n--{boundary}--\r\n".encode())


ALL_SHAPES: dict[str, Callable[[str], bytes]] = {"2 KB": small, "50 KB with attachment":
                                                 with_attachment}
# The shapes measured: every one, or those whose names start with one of the comma-separated
# BURNBOX_BENCH_SHAPES ("2", "50"), for a profile of one shape under a steady load.
SHAPES = {name: build for name, build in ALL_SHAPES.items()
          if any(name.startswith(prefix.strip()) for prefix in
                 os.environ.get("BURNBOX_BENCH_SHAPES", "").split(","))}


# -- the ceiling server ---------------------------------------------------------------------

class Discard:
    """The ceiling's handler: 250 to every message, nothing kept (aiosmtpd's default handler
    already answers 250 to every recipient)."""

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return "250 OK"


def ceiling(port: int, processes: int = 1) -> None:
    """Serve bare aiosmtpd on 127.0.0.1:port until SIGTERM or SIGINT: in this process's event
    loop, or in `processes` forked processes sharing the port as `burnbox mailin --processes`
    runs them (the same supervisor)."""

    async def main(sock: socket.socket | None) -> None:
        loop = asyncio.get_running_loop()
        factory = lambda: SMTP(Discard(), hostname=HOSTNAME, ident="bare aiosmtpd",  # noqa: E731
                               enable_SMTPUTF8=True, decode_data=False)
        server = await (loop.create_server(factory, sock=sock) if sock is not None
                        else loop.create_server(factory, "127.0.0.1", port))
        stop = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        server.close()

    if processes == 1:
        asyncio.run(main(None))
    else:
        from mailin.supervisor import serve_forked  # the standard library only

        serve_forked("127.0.0.1", port, processes, lambda sock: asyncio.run(main(sock)))


# -- the clients ----------------------------------------------------------------------------

def _plan(shape: str, recipients: list[str], count: int) -> list[tuple[str, bytes]]:
    """`count` messages of `shape` for one connection, ready to send, to its recipients in
    turn."""
    build = ALL_SHAPES[shape]
    return [(to, smtp_client.prepare(build(to)))
            for to in (recipients[n % len(recipients)] for n in range(count))]


def _client(index: int, recipients: list[str], start: Any, commands: Any, results: Any,
            parent: int) -> None:
    """Client process number `index`: for each (port, shape, count, connections) command, hold
    its share of the connections (`share`, on one thread: `smtp_client.run`; none at all below
    PROCESSES connections for the last ones, which only pass the barrier),
    start sending when every client process is ready (`start`), and put the sessions'
    Outcomes (or the error, as text) on `results`; stop at None, or when the `parent` process
    is gone (killed before it could stop us)."""
    while os.getppid() == parent:
        try:
            command = commands.get(timeout=1)
        except queue.Empty:
            continue
        if command is None:
            return
        port, shape, count, connections = command
        sessions = share(connections, index)
        plans = [_plan(shape, recipients[n::sessions] or recipients, count)
                 for n in range(sessions)]
        try:
            results.put(smtp_client.run("127.0.0.1", port, "bench@sender.example", plans,
                                        lambda: start.wait(timeout=ROUND_TIMEOUT),
                                        timeout=120))
        except Exception as exc:
            start.abort()  # the other client processes stop waiting for this one
            results.put(f"{type(exc).__name__}: {exc}")


def share(connections: int, index: int) -> int:
    """The sessions client process `index` holds of `connections`: an even share, and one of
    the remainder for the first ones."""
    return connections // PROCESSES + (index < connections % PROCESSES)


@dataclass
class Round:
    """One round's outcome over every connection."""

    rate: float  # acknowledged messages per second, first start to last end
    latencies: list[float]
    acknowledged: int
    refused: int


class Clients:
    """PROCESSES client processes, kept for the whole run, that send one round at a time."""

    def __init__(self, addresses: list[str]) -> None:
        context = multiprocessing.get_context("spawn")
        self.start = context.Barrier(PROCESSES)
        self.results = context.Queue()
        self.commands = [context.Queue() for _ in range(PROCESSES)]
        self.processes = [context.Process(
            target=_client, args=(n, addresses[n::PROCESSES] or addresses, self.start,
                                  self.commands[n], self.results, os.getpid()),
            daemon=True)
            for n in range(PROCESSES)]
        for process in self.processes:
            process.start()

    def send(self, port: int, shape: str, count: int, connections: int) -> Round:
        """`connections` connections (one of the loads) each send `count` messages of `shape`
        to the server on `port`; raise RuntimeError when a client fails or does not report
        within ROUND_TIMEOUT, ValueError when `connections` is not positive."""
        if connections < 1:
            raise ValueError(f"a load is one connection or more: {connections}")
        for commands in self.commands:
            commands.put((port, shape, count, connections))
        sessions: list[smtp_client.Outcome] = []
        deadline = time.monotonic() + ROUND_TIMEOUT
        for _ in self.processes:
            while True:
                try:
                    reported = self.results.get(timeout=1)
                    break
                except queue.Empty as exc:
                    dead = [p.pid for p in self.processes if not p.is_alive()]
                    if dead or time.monotonic() > deadline:
                        raise RuntimeError(f"SMTP clients on port {port} did not report "
                                           f"(dead: {dead})") from exc
            if isinstance(reported, str):
                raise RuntimeError(f"an SMTP client on port {port} failed: {reported}")
            sessions.extend(reported)
        latencies = [delay for session in sessions for delay in session.latencies]
        span = max(s.ended for s in sessions) - min(s.began for s in sessions)
        return Round(len(latencies) / span, latencies, len(latencies),
                     sum(s.refused for s in sessions))

    def close(self, patience: float = 10.0) -> None:
        """Stop the client processes: ask them, and terminate those still running after
        `patience` seconds in all."""
        for commands in self.commands:
            with contextlib.suppress(Exception):
                commands.put(None)
        deadline = time.monotonic() + patience
        for process in self.processes:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.terminate()
                process.join()


# -- the servers ----------------------------------------------------------------------------

@dataclass
class Server:
    """A server process in its own session (process group), its port and its log file; `name`
    is how the report calls it."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @classmethod
    def start(cls, name: str, args: list[str], env: dict[str, str], port: int,
              log: Path, cwd: Path = ROOT) -> Server:
        """Start `args` in `cwd`, in a new session with stdout and stderr to `log`."""
        with log.open("wb") as output:
            process = subprocess.Popen(args, cwd=cwd, env=env, start_new_session=True,
                                       stdout=output, stderr=subprocess.STDOUT)
        return cls(name, process, port, log)

    @property
    def stores(self) -> bool:
        """True for a Burnbox server (it stores what it acknowledges), False for the bare one."""
        return "mailin" in self.process.args

    def wait_until_up(self) -> None:
        """Wait until the server accepts connections; raise RuntimeError, with the end of its
        log, when it exits first or START_TIMEOUT passes."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        state = (f"exited with {self.process.returncode}" if self.process.poll() is not None
                 else f"did not accept connections within {START_TIMEOUT:.0f} s")
        tail = self.log.read_text(errors="replace").strip().splitlines()[-15:]
        raise RuntimeError(f"{self.name} on port {self.port} {state}; its output ends:\n"
                           + "\n".join(tail))

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it after 15 s."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def baseline_name() -> str:
    """What the candidate is compared with: the bare server, or the baseline checkout's
    Burnbox, named by its commit."""
    if not BASELINE_TREE:
        return "bare aiosmtpd"
    commit = subprocess.run(["git", "-C", BASELINE_TREE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    return f"Burnbox {commit or BASELINE_TREE}"


@contextlib.contextmanager
def _servers(settings: Settings, backend: str) -> Iterator[list[Server]]:
    """`burnbox mailin`, the baseline (the ceiling, or the baseline checkout's `burnbox
    mailin`) and maildev when present, each up and listening; every process group stopped on
    the way out, whatever happens (an error, Ctrl-C)."""
    data_dir = Path(settings.data_dir)
    env = {"BURNBOX_DATA_DIR": str(data_dir), "BURNBOX_LOG__LEVEL": "WARNING",
           "BURNBOX_SMTP__HOST": "127.0.0.1", "BURNBOX_SMTP__HOSTNAME": HOSTNAME,
           "BURNBOX_SMTP__STORE_THREADS": str(settings.smtp.store_threads),
           "BURNBOX_AUTH__JWT_SECRET": settings.auth.jwt_secret}
    if backend == "postgresql":
        env["BURNBOX_DATABASE__URL"] = settings.database.url
    if settings.redis.url:
        env["BURNBOX_REDIS__URL"] = settings.redis.url
    started: list[Server] = []
    try:
        port = free_port()
        started.append(Server.start(
            "burnbox mailin", [str(BIN / "burnbox"), "mailin", "--processes",
                               str(SERVER_PROCESSES)],
            process_env(BURNBOX_SMTP__PORT=str(port), **env), port, data_dir / "mailin.log"))
        port = free_port()
        if BASELINE_TREE:
            tree = Path(BASELINE_TREE).resolve()
            started.append(Server.start(
                baseline_name(), [str(BIN / "burnbox"), "mailin", "--processes",
                                  str(SERVER_PROCESSES)],
                process_env(BURNBOX_SMTP__PORT=str(port), PYTHONPATH=str(tree), **env), port,
                data_dir / "baseline.log", cwd=tree))
        else:
            started.append(Server.start(
                "bare aiosmtpd", [sys.executable, "-m", "bench.ingest", "--ceiling",
                                  str(port), str(SERVER_PROCESSES)],
                process_env(), port, data_dir / "ceiling.log"))
        if maildev_present():
            port = free_port()
            started.append(Server.start(
                MAILDEV_NAME, [str(MAILDEV), "--smtp", str(port), "--ip", "127.0.0.1",
                               "--web", str(free_port()), "--web-ip", "127.0.0.1",
                               "--max-emails", str(MAILDEV_KEEPS)],
                process_env(), port, data_dir / "maildev.log"))
        for server in started:
            server.wait_until_up()
        yield started
    finally:
        for server in started:
            server.stop()


def maildev_present() -> bool:
    """True when maildev can be measured: Node on the PATH and its executable at MAILDEV."""
    return shutil.which("node") is not None and MAILDEV.is_file()


# -- the database ---------------------------------------------------------------------------

def postgres_database(url: str) -> str | None:
    """The benchmark database's URL, created when missing; None when PostgreSQL is down."""
    target = make_url(url)
    admin = create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            exists = connection.scalar(text("SELECT 1 FROM pg_database WHERE datname = :name"),
                                       {"name": target.database})
            if not exists:
                connection.execute(text(f'CREATE DATABASE "{target.database}"'))
    except OperationalError:
        return None
    finally:
        admin.dispose()
    return url


def _settings(data_dir: str) -> Settings:
    from burnbox.settings import load_settings

    database = postgres_database(os.environ.get("BURNBOX_BENCH_DATABASE_URL", DEFAULT_DATABASE))
    overrides: dict[str, Any] = {"data_dir": data_dir, "log.level": "WARNING",
                                 "database.url": database or "", "smtp.hostname": HOSTNAME,
                                 "smtp.store_threads": max(CONNECTIONS),
                                 "redis.url": os.environ.get("BURNBOX_BENCH_REDIS_URL", ""),
                                 "auth.jwt_secret": "bench-" + "x" * 40}
    return load_settings(environ={}, overrides=overrides)


def _inboxes(runtime: Runtime) -> list[str]:
    """A user, org, team and verified domain, and INBOXES inboxes on it; their addresses."""
    from models.domains.assignments import FULL, assign_domain
    from models.domains.domains import VERIFIED, Domain, register_domain
    from models.identity.users import new_user
    from models.mail.inboxes import create_inbox
    from models.platform.audit import Origin
    from models.tenancy.access import Caller, resolve_org_access
    from models.tenancy.orgs import create_org
    from models.tenancy.rbac import load_grants
    from models.tenancy.teams import create_team

    settings = runtime.settings
    with runtime.db.transaction() as session:
        user = new_user(email="bench@bench.example", display_name="Bench", password_hash=None)
        session.add(user)
        session.flush()
        caller = Caller(user_id=user.id, is_system_admin=False, origin=Origin())
        org = create_org(session, "Bench", user.id)
        session.flush()
        access = resolve_org_access(session, load_grants(session), caller, org.id)
        team = create_team(session, settings, access, name="Bench")
        domain = register_domain(session, settings, caller, org.id, "bench.example")
        session.execute(update(Domain).where(Domain.id == domain.id).values(status=VERIFIED))
        session.refresh(domain)
        assignment = assign_domain(session, settings, caller, team, domain.id, FULL)
        return [create_inbox(session, settings, assignment, created_by=user.id, ttl="24h")
                .full_address for _ in range(INBOXES)]


# -- the figures ----------------------------------------------------------------------------

@dataclass
class Load:
    """One server's rounds of one shape: their rates, every acknowledged latency, and the CPU
    its parties spent meanwhile (`meter`)."""

    meter: cpu.Meter
    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    acknowledged: int = 0  # in the measured rounds
    refused: int = 0
    warm_up_acknowledged: int = 0  # in the unmeasured warm-up round

    def measure(self, send: Callable[[], Round]) -> float:
        """Run and record one round (`send`), metering its CPU; its rate."""
        return self.meter.measure(lambda: self.add(send()))

    def add(self, outcome: Round) -> float:
        """Record a round; its rate."""
        self.rates.append(outcome.rate)
        self.latencies.extend(outcome.latencies)
        self.acknowledged += outcome.acknowledged
        self.refused += outcome.refused
        return outcome.rate

    @property
    def rate(self) -> float:
        """The median rate of the rounds."""
        return statistics.median(self.rates)

    def text(self, name: str) -> str:
        """`name R msg/s p50 X ms p99 Y ms` (median rate), then ` (N refused)` when any were."""
        p50, p99 = (statistics.quantiles(self.latencies, n=100, method="inclusive")[i] * 1000
                    for i in (49, 98))
        refused = f" ({self.refused} refused)" if self.refused else ""
        return (f"{name} {self.rate:.0f} msg/s p50 {p50:.1f} ms "
                f"p99 {p99:.1f} ms{refused}")


@dataclass
class Ingest:
    """One shape under one load: Burnbox and the baseline (the ceiling, or another checkout's
    Burnbox), and the ratio of their rates."""

    shape: str
    backend: str
    connections: int
    burnbox: Load
    baseline: Load
    baseline_name: str = "bare aiosmtpd"

    @property
    def ratio(self) -> float:
        """Burnbox's median rate as a fraction of the baseline's under this load."""
        return self.burnbox.rate / self.baseline.rate

    def line(self) -> str:
        """One report line."""
        return (f"SMTP ingest {self.shape}, {self.connections} conns ({self.backend}): "
                f"{self.burnbox.text('Burnbox')} | {self.baseline.text(self.baseline_name)} | "
                f"ratio {self.ratio:.2f}")


@dataclass
class Peak:
    """One shape's headline: each server at the load where it was fastest (its ceiling in
    this run), and the ratio of those rates."""

    shape: str
    backend: str
    loads: list[Ingest]

    @property
    def burnbox(self) -> Ingest:
        """The load under which Burnbox was fastest."""
        return max(self.loads, key=lambda load: load.burnbox.rate)

    @property
    def ceiling(self) -> Ingest:
        """The load under which the ceiling was fastest."""
        return max(self.loads, key=lambda load: load.baseline.rate)

    @property
    def ratio(self) -> float:
        """Burnbox's best rate as a fraction of the ceiling's best."""
        return self.burnbox.burnbox.rate / self.ceiling.baseline.rate

    def line(self) -> str:
        """One report line."""
        return (f"SMTP ingest {self.shape}, each at its best load ({self.backend}): Burnbox "
                f"{self.burnbox.burnbox.rate:.0f} msg/s at {self.burnbox.connections} conns | "
                f"{self.ceiling.baseline_name} {self.ceiling.baseline.rate:.0f} msg/s at "
                f"{self.ceiling.connections} conns | ratio {self.ratio:.2f}")


@dataclass
class CpuShare:
    """CPU per message of each party for Burnbox and its baseline (`where`: each at its best
    load, or one load), the rate that allows on this machine, and the ratio of the two
    servers' own CPU per message."""

    shape: str
    where: str
    burnbox: Load
    baseline: Load
    baseline_name: str

    @classmethod
    def at_best(cls, peak: Peak) -> CpuShare:
        """Each server at the load where it was fastest."""
        return cls(peak.shape, "each at its best load", peak.burnbox.burnbox,
                   peak.ceiling.baseline, peak.ceiling.baseline_name)

    @classmethod
    def under(cls, load: Ingest) -> CpuShare:
        """Both servers under one load."""
        return cls(load.shape, f"{load.connections} conns", load.burnbox, load.baseline,
                   load.baseline_name)

    def line(self) -> str:
        """One report line (empty figures where /proc cannot be read)."""
        if not cpu.available():
            return f"SMTP ingest {self.shape} CPU per message: not measured (no /proc)"
        ours, theirs = (load.meter.per_operation(load.acknowledged)
                        for load in (self.burnbox, self.baseline))
        own = [sum(ms for name, ms in parties.items() if name in SERVER_PARTIES)
               for parties in (ours, theirs)]
        ratio = f"{own[0] / own[1]:.2f}" if own[1] else "-"
        return (f"SMTP ingest {self.shape} CPU per message, {self.where}: Burnbox "
                f"{self._text(ours)} | {self.baseline_name} {self._text(theirs)} | "
                f"servers' own CPU ratio {ratio}")

    @staticmethod
    def _text(parties: dict[str, float]) -> str:
        total = sum(parties.values())
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        bound = f"{cores * 1000 / total:.0f} msg/s" if total else "-"
        shares = ", ".join(f"{name} {ms:.2f}" for name, ms in parties.items())
        return f"{shares}, in all {total:.2f} ms (at most {bound} on {cores} cores)"


@dataclass
class Stored:
    """E-mails found in the database against the messages Burnbox acknowledged."""

    backend: str
    stored: int
    acknowledged: int

    def line(self) -> str:
        """One report line, saying MISSING when an acknowledged message is not stored."""
        verdict = "" if self.stored >= self.acknowledged else (
            f" -- MISSING {self.acknowledged - self.stored} acknowledged messages")
        return (f"SMTP ingest ({self.backend}): stored {self.stored}/{self.acknowledged} "
                f"acknowledged messages{verdict}")


SERVER_PARTIES = ("server", "SMTP", "store")  # a server's own processes, as `_meter` names them


def _is_store_process(pid: int) -> bool:
    return "mailin.store_process" in cpu.command_line(pid)


def postgres_serving(database: str) -> Callable[[], list[int]]:
    """The PostgreSQL processes that work for `database`: the backends and autovacuum workers
    that name it on their command lines, and the shared processes of their server (the WAL
    writer, the checkpointer...). Not the backends of other databases: on a shared machine
    other work keeps them busy, and counting them made the database's share a measure of the
    neighbours."""
    every = cpu.named("postgres")

    def find() -> list[int]:
        words = {pid: cpu.command_line(pid).split() for pid in every()}
        ours = [pid for pid, line in words.items() if database in line]
        servers = {cpu.parent(pid) for pid in ours}
        shared = [pid for pid, line in words.items()
                  if (pid in servers or cpu.parent(pid) in servers) and pid not in ours
                  and "worker" not in line and not any(
                      "(" in word or word == "[local]" for word in line)]  # no client's
        return ours + shared

    return find


def _meter(server: Server, clients: Clients, database: str | None) -> cpu.Meter:
    """CPU of the server's process group (Burnbox's split into its SMTP processes and its
    store processes), of the PostgreSQL processes serving `database` (when that is the
    backend: the database works for the server), and of the clients."""
    group = server.process.pid
    groups = ({"SMTP": cpu.in_group(group, lambda pid: not _is_store_process(pid)),
               "store": cpu.in_group(group, _is_store_process)} if server.stores
              else {"server": cpu.in_group(group)})
    if database is not None:
        groups["PostgreSQL"] = postgres_serving(database)
    groups["clients"] = cpu.fixed(process.pid for process in clients.processes
                                  if process.pid is not None)
    return cpu.Meter(groups)


def _measure(clients: Clients, mailin: Server, baseline: Server, backend: str,
             database: str | None, shape: str, connections: int) -> Ingest:
    """Both servers under one load, in alternating rounds after one unmeasured warm-up
    round each (`database`: the PostgreSQL database they store into, None on SQLite)."""
    burnbox = Load(_meter(mailin, clients, database))
    baseline_load = Load(_meter(baseline, clients, database))
    burnbox.warm_up_acknowledged = clients.send(mailin.port, shape, WARM_UP,
                                                 connections).acknowledged
    baseline_load.warm_up_acknowledged = clients.send(baseline.port, shape, WARM_UP,
                                                      connections).acknowledged
    count = max(1, ROUND_MESSAGES // connections)
    compare_rounds(
        f"{shape}, {connections} conns",
        lambda: burnbox.measure(lambda: clients.send(mailin.port, shape, count, connections)),
        lambda: baseline_load.measure(lambda: clients.send(baseline.port, shape, count,
                                                           connections)),
        rounds=ROUNDS, unit="msg/s")
    return Ingest(shape, backend, connections, burnbox, baseline_load, baseline.name)


def run() -> list[Ingest | Peak | CpuShare | Stored]:
    """Seed the database, start both servers, measure every shape under every load in
    alternating rounds, and check that every message Burnbox acknowledged was stored. Raises
    RuntimeError when a server does not come up or a client fails; no server or client
    process outlives it."""
    # Burnbox is imported here and in the helpers, not at the top: the client processes and the
    # ceiling re-import this module, and must neither need the application nor pay for it.
    import tasks
    from models.runtime import Runtime
    from models.schema import upgrade

    data_dir = tempfile.mkdtemp(prefix="burnbox-bench-")
    try:
        settings = _settings(data_dir)
        runtime = Runtime.from_settings(settings)
        backend = runtime.db.engine.dialect.name
        database = runtime.db.engine.url.database if backend == "postgresql" else None
        if backend == "postgresql":
            with runtime.db.engine.begin() as connection:
                connection.execute(text("DROP SCHEMA public CASCADE"))
                connection.execute(text("CREATE SCHEMA public"))
        else:
            print("PostgreSQL is not reachable: measuring SQLite instead")
        upgrade(runtime.db.engine)
        broker = tasks.setup_broker(runtime)
        addresses = _inboxes(runtime)
        runtime.db.dispose()
        figures: list[Ingest | Peak | CpuShare | Stored] = []
        acknowledged = 0  # by Burnbox, warm-up rounds included
        clients = Clients(addresses)
        patience = 0.0  # unless the rounds finish: then the clients are idle and stop at once
        try:
            with _servers(settings, backend) as (mailin, *baselines):
                for shape in SHAPES:
                    # Each baseline against Burnbox in rounds of their own, one after the
                    # other: the harness alternates two servers, and pairs keep it simple.
                    for baseline in baselines:
                        loads = []
                        for connections in CONNECTIONS:
                            load = _measure(clients, mailin, baseline, backend, database,
                                            shape, connections)
                            for server, measured in ((mailin, load.burnbox),
                                                     (baseline, load.baseline)):
                                if server.stores:
                                    acknowledged += (measured.acknowledged
                                                     + measured.warm_up_acknowledged)
                            loads.append(load)
                        if baseline.stores:  # two versions: each load on its own
                            figures += [item for load in loads
                                        for item in (load, CpuShare.under(load))]
                        else:
                            peak = Peak(shape, backend, loads)
                            figures += [*loads, peak, CpuShare.at_best(peak)]
                patience = 10.0
        finally:
            clients.close(patience)
            broker.flush_all()
        with runtime.db.engine.connect() as connection:
            stored = connection.scalar(text("SELECT count(*) FROM emails")) or 0
        runtime.db.dispose()
        return [*figures, Stored(backend, stored, acknowledged)]
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ceiling"]:
        ceiling(int(sys.argv[2]), int(sys.argv[3]))
    else:
        # SIGTERM unwinds like Ctrl-C, so that the servers' process groups are stopped too.
        signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
        started = time.monotonic()
        for figure in run():
            print(figure.line(), flush=True)
        print(f"({time.monotonic() - started:.0f} s)")
