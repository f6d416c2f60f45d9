"""SMTP ingest throughput: Burnbox's mailin against the bare-aiosmtpd ceiling, for 2 KB messages.

Both servers run in this process, each on its own event-loop thread, and the same client drives
both in alternating rounds: PROCESSES processes of CONNECTIONS threads, each thread holding one
SMTP connection and sending MESSAGES messages of 2 KB with smtplib, one recipient each, spread
over INBOXES inboxes. The ceiling is an aiosmtpd server whose handler answers 250 to everything;
the candidate really stores (parse, raw message written and fsynced, the e-mail committed
before the 250 by the group-commit committer, the event handed to the broker), with
`smtp.store_threads` set to the number of connections.

Database: PostgreSQL at BURNBOX_BENCH_DATABASE_URL (default
postgresql+psycopg://postgres@127.0.0.1:5432/burnbox_bench; created when missing, its schema is
dropped and migrated) and, when BURNBOX_BENCH_REDIS_URL is set, the Redis broker (else the
in-process one). When PostgreSQL cannot be reached it says so and measures SQLite instead.
"""

from __future__ import annotations

import multiprocessing
import os
import smtplib
import socket
import tempfile
import threading
import time
import uuid
from typing import Any

from aiosmtpd.controller import Controller
from sqlalchemy import create_engine, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

import tasks
from bench.harness import Comparison, compare_rounds
from burnbox.settings import Settings, load_settings
from mailin.server import MailinThread
from models.access import Caller, resolve_org_access
from models.audit import Origin
from models.domains import FULL, VERIFIED, Domain, assign_domain, register_domain
from models.inboxes import create_inbox
from models.orgs import create_org
from models.rbac import load_grants
from models.runtime import Runtime
from models.schema import upgrade
from models.teams import create_team
from models.users import new_user

DEFAULT_DATABASE = "postgresql+psycopg://postgres@127.0.0.1:5432/burnbox_bench"
PROCESSES = 4
CONNECTIONS = 4  # per client process: PROCESSES * CONNECTIONS concurrent SMTP sessions
MESSAGES = 100  # per connection and round
INBOXES = 64
ROUNDS = 5
MESSAGE_BYTES = 2048


class Accept:
    """The ceiling's handler: 250 to every recipient and every message, nothing stored."""

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return "250 OK"


def two_kilobytes(to: str) -> bytes:
    """A plain-text message of exactly MESSAGE_BYTES bytes."""
    head = (f"From: bench@sender.example\r\nTo: {to}\r\nSubject: Ingest benchmark\r\n"
            f"Message-ID: <{uuid.uuid4().hex}@sender.example>\r\n"
            "Content-Type: text/plain; charset=us-ascii\r\n\r\n").encode()
    line = b"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do.\r\n"
    room = MESSAGE_BYTES - len(head)
    tail = room % len(line)
    return head + line * (room // len(line)) + (b"x" * (tail - 2) + b"\r\n" if tail else b"")


def _connection(port: int, recipients: list[str], count: int, start: Any,
                spans: list[tuple[float, float]]) -> None:
    """One SMTP session: connect, wait for the others, send `count` messages."""
    payloads = [(to, two_kilobytes(to)) for to in recipients]
    with smtplib.SMTP("127.0.0.1", port, timeout=120) as smtp:
        smtp.ehlo()
        start.wait()
        began = time.perf_counter()
        for n in range(count):
            to, payload = payloads[n % len(payloads)]
            smtp.sendmail("bench@sender.example", [to], payload)
        spans.append((began, time.perf_counter()))


def _client(port: int, recipients: list[str], start: Any, results: Any) -> None:
    """One client process: CONNECTIONS sessions in threads; report their time spans."""
    spans: list[tuple[float, float]] = []
    threads = [threading.Thread(target=_connection, args=(
        port, recipients[n::CONNECTIONS] or recipients, MESSAGES, start, spans))
        for n in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(spans)


def drive(port: int, addresses: list[str]) -> float:
    """One round: PROCESSES x CONNECTIONS sessions send MESSAGES each; messages per second
    overall, from the first session's start to the last one's end."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(PROCESSES * CONNECTIONS), context.Queue()
    processes = [context.Process(target=_client, args=(
        port, addresses[n::PROCESSES] or addresses, start, results))
        for n in range(PROCESSES)]
    for process in processes:
        process.start()
    spans = [span for _ in processes for span in results.get(timeout=900)]
    for process in processes:
        process.join()
    sent = PROCESSES * CONNECTIONS * MESSAGES
    return sent / (max(end for _, end in spans) - min(began for began, _ in spans))


def _postgres(url: str) -> str | None:
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


def _settings() -> Settings:
    database = _postgres(os.environ.get("BURNBOX_BENCH_DATABASE_URL", DEFAULT_DATABASE))
    overrides: dict[str, Any] = {"data_dir": tempfile.mkdtemp(prefix="burnbox-bench-"),
                                 "log.level": "WARNING", "database.url": database or "",
                                 "smtp.store_threads": PROCESSES * CONNECTIONS,
                                 "redis.url": os.environ.get("BURNBOX_BENCH_REDIS_URL", "")}
    return load_settings(environ={}, overrides=overrides)


def _inboxes(runtime: Runtime) -> list[str]:
    """A user, org, team and verified domain, and INBOXES inboxes on it; their addresses."""
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


def run() -> list[Comparison]:
    """Measure the candidate and the ceiling in alternating rounds."""
    settings = _settings()
    runtime = Runtime.from_settings(settings)
    backend = runtime.db.engine.dialect.name
    if backend == "postgresql":
        with runtime.db.engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    else:
        print("PostgreSQL is not reachable: measuring SQLite instead")
    upgrade(runtime.db.engine)
    broker = tasks.setup_broker(runtime)
    addresses = _inboxes(runtime)
    candidate = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    ceiling = Controller(Accept(), hostname="127.0.0.1", port=_free_port())
    ceiling.start()
    try:
        comparison = compare_rounds(
            f"SMTP ingest, 2 KB messages, {PROCESSES * CONNECTIONS} connections ({backend}) "
            "vs bare aiosmtpd",
            lambda: drive(candidate.address[1], addresses),
            lambda: drive(ceiling.port, addresses), rounds=ROUNDS, unit="msg/s")
    finally:
        ceiling.stop()
        candidate.stop()
        broker.flush_all()
        runtime.db.dispose()
    return [comparison]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
