"""Several SMTP ingest processes sharing one port, for machines with more than one core.

One mailin process is bound by its interpreter lock to about one core. `burnbox mailin
--processes N` (or `smtp.processes`) binds the listening socket once and forks N children that
all accept on it; the kernel hands each new connection to one of them. Every child builds its
own runtime after the fork (database pool, store process): nothing
that holds a connection or a thread crosses a fork, so the parent never opens one.

The parent only supervises. A child that exits unexpectedly is replaced after `RESTART_PAUSE`
(so one that cannot start does not spin); what it acknowledged is already committed, and what
it had not acknowledged the senders retry. SIGTERM and SIGINT are passed on to every child,
each stops accepting and stores what is queued (mailin.server.run), and the parent returns once
all of them have exited.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from types import FrameType

from burnbox.settings import Settings

log = logging.getLogger(__name__)

RESTART_PAUSE = 1.0
BACKLOG = 1024


def smtp_processes(settings: Settings) -> int:
    """How many SMTP processes `burnbox mailin` runs: `smtp.processes` when set; else, in the
    scaled mode (Redis configured), one per core this process may run on, since one process
    is bound to about one core; else one (the embedded mode's single writer)."""
    if settings.smtp.processes > 0:
        return settings.smtp.processes
    if settings.embedded:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


def tcp_listener(host: str, port: int) -> socket.socket:
    """A socket listening on host:port that says it is TCP. asyncio turns Nagle's algorithm off
    (TCP_NODELAY) on the connections it accepts only when the listening socket's `proto` is
    TCP, and `socket.create_server` leaves it 0: every multi-line reply (EHLO's) then waited
    for the client's delayed acknowledgement, 40 ms per connection."""
    listener = socket.create_server((host, port), backlog=BACKLOG)
    return socket.socket(listener.family, listener.type, socket.IPPROTO_TCP,
                         fileno=listener.detach())


def serve_forked(host: str, port: int, processes: int,
                 child: Callable[[socket.socket], None]) -> None:
    """Bind host:port, run `child(listening_socket)` in `processes` forked processes, replace
    any that dies, and return after SIGTERM or SIGINT once every child has exited."""
    listener = tcp_listener(host, port)
    children: set[int] = set()
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            _signal(pid, signal.SIGTERM)

    def spawn() -> None:
        pid = os.fork()
        if pid == 0:  # the child: its own signal handling, then serve until told to stop
            status = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                child(listener)
                status = 0
            except BaseException:
                log.exception("SMTP process failed")
            finally:
                os._exit(status)
        children.add(pid)
        if stopping:  # the signal came while this child was being forked
            _signal(pid, signal.SIGTERM)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        for _ in range(processes):
            spawn()
        log.info("mailin listening", extra={"address": listener.getsockname()[:2],
                                            "processes": processes})
        while children:
            pid, status = os.wait()  # retried after a signal handler runs (PEP 475)
            children.discard(pid)
            if stopping:
                continue
            log.error("an SMTP process exited; starting another",
                      extra={"pid": pid, "exit_status": os.waitstatus_to_exitcode(status)})
            time.sleep(RESTART_PAUSE)
            if not stopping:
                spawn()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        listener.close()
    log.info("mailin stopped")


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone; os.wait() collects it
        os.kill(pid, signum)
