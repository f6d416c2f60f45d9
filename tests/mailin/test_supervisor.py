"""`burnbox mailin --processes 2`: two SMTP processes accept on one port and every message is
stored; a child that dies is replaced; SIGTERM stops them all cleanly."""

import asyncio
import os
import signal
import smtplib
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import func, select

from burnbox.settings import load_settings
from mailin.supervisor import smtp_processes, tcp_listener
from models.mail.entities import Email
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.processes import BIN, ROOT, children, free_port, mailin_env, wait_for_port, wait_until

CONNECTIONS = 8
MESSAGES = 5  # per connection


def _send(port, address):
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        for _ in range(MESSAGES):
            smtp.sendmail("load@sender.example", [address], message(address))


def test_forked_processes_share_the_port_and_one_that_dies_is_replaced(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        address = make_inbox(session, committed_runtime.settings, world).full_address
    port = free_port()
    env = mailin_env(committed_runtime, port, BURNBOX_SMTP__HOST="127.0.0.1")
    parent = subprocess.Popen([str(BIN / "burnbox"), "mailin", "--processes", "2"], cwd=ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        wait_for_port(port)
        wait_until(lambda: len(children(parent.pid)) == 2)
        first = children(parent.pid)
        with ThreadPoolExecutor(CONNECTIONS) as pool:
            list(pool.map(lambda _: _send(port, address), range(CONNECTIONS)))

        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: len(children(parent.pid) - {victim}) == 2)
        assert len(children(parent.pid) & first) == 1  # the survivor, and a new process
        with ThreadPoolExecutor(CONNECTIONS) as pool:
            list(pool.map(lambda _: _send(port, address), range(CONNECTIONS)))

        running = children(parent.pid)
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 0, parent.stderr.read().decode()[-2000:]
        assert not any(Path(f"/proc/{child}").exists() and
                       "zombie" not in Path(f"/proc/{child}/status").read_text()
                       for child in running)
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait(timeout=10)
    with committed_runtime.db.session() as session:
        stored = session.scalar(select(func.count()).select_from(Email))
    assert stored == 2 * CONNECTIONS * MESSAGES


def test_mailin_runs_one_smtp_process_per_core_in_the_scaled_mode_unless_told():
    """One SMTP process is bound to about one core by its interpreter lock: in the scaled mode
    `burnbox mailin` uses the machine's cores by itself; the embedded mode keeps one writer."""
    cores = len(os.sched_getaffinity(0))

    def processes(**overrides):
        return smtp_processes(load_settings(environ={}, overrides=overrides))

    assert processes(**{"redis.url": "redis://127.0.0.1:6379/0"}) == cores
    assert processes() == 1
    assert processes(**{"redis.url": "redis://127.0.0.1:6379/0", "smtp.processes": 3}) == 3
    assert processes(**{"smtp.processes": 2}) == 2


def test_the_shared_listener_makes_connections_without_nagle():
    # asyncio sets TCP_NODELAY on what it accepts only from a socket whose proto says TCP; from
    # `socket.create_server`'s (proto 0) every EHLO waited 40 ms for a delayed ACK.
    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                raw = transport.get_extra_info("socket")
                accepted.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = tcp_listener("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            nodelay = await asyncio.wait_for(accepted, 10)
            writer.close()
        return nodelay

    assert asyncio.run(accept_one()) == 1
