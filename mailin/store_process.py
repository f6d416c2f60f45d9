"""Storing in a process of its own: `burnbox mailin` hands every accepted message to a store
process, which runs the group-commit `Committer` (mailin/committer.py) and answers with the new
e-mail ids; only then does the SMTP session get its 250.

Why: one process's interpreter lock lets one of its threads run Python at a time. With the
committer as a thread of the SMTP process, the event loop (sessions, parsing) and the committer
(writing objects, building and sending statements) take turns on one core, and their handing
the lock back and forth costs more again. As two processes, each has a core of its own
(measured: docs/mail.md, Benchmark). The embedded mode (`burnbox serve`, `MailinThread`) keeps
the committer as a thread: one process is its point.

The two talk over a private socket pair in frames: a 4-byte big-endian length, then a pickle
(both ends are this program). The first frame to the store process is the `Settings`; then
each message is `(seq, fields)`, the `Accepted`'s fields by name with `received_at` as whole
microseconds since the epoch (`_message_frame`), and each answer `(seq, email_ids, None)` or
`(seq, None, (error text, whether it was a full disk))`.

Failures:
- A message the committer could not store gets its error: the session answers 451 (452 for
  a full disk).
- The store process exits (killed, crashed): every message waiting on it fails (451: the
  sender retries; one that was committed after all is stored twice, never lost), new ones fail
  at once, and another store process starts after `RESTART_PAUSE`.
- The SMTP process exits, even killed: the store process reads the end of its socket, stores
  what it has received (none of it was acknowledged, so a retry may store it again), and exits.
  It ignores SIGTERM and SIGINT, which a process manager sends the whole process group: it
  stops when its SMTP process has stopped sending.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import logging
import os
import pickle
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import uuid
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, BinaryIO

from burnbox import metrics
from burnbox.gc_tuning import tune_collector
from burnbox.outages import disk_full
from burnbox.settings import Settings

if TYPE_CHECKING:
    from models.mail.ingest.store import Accepted

log = logging.getLogger(__name__)

RESTART_PAUSE = 1.0  # seconds before a store process that exited is replaced
_LENGTH = struct.Struct("!I")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class StoreProcessGone(RuntimeError):
    """The store process is not running, or exited before it answered."""


class StoreFailed(RuntimeError):
    """The store process could not store the message (its error, as text). Raised from an
    `OSError(ENOSPC)` when that error was a full disk, so `burnbox.outages.disk_full` reads
    it as it reads the committer's own error."""

    @classmethod
    def of(cls, text: str, full: bool) -> StoreFailed:
        """The failure the store process reported: its error's text, and whether it was a
        full disk."""
        failure = cls(text)
        if full:
            failure.__cause__ = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return failure


def _frame(value: Any) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def _message_frame(seq: int, message: Accepted) -> bytes:
    """The frame of one message: its fields by name, `received_at` as whole microseconds since
    the epoch (`_message_fields` reads it back). Why not the `Accepted` itself: pickle writes an
    aware datetime through its time zone's reduction, and the dataclass through copyreg; measured
    on a 2 KB message, 14 us of the SMTP process's CPU per message that way, 6 this way."""
    return _frame((seq, {**vars(message),
                         "received_at": (message.received_at - _EPOCH) // _MICROSECOND}))


def _message_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of the `Accepted` that `_message_frame` sent (the same instant, in
    UTC)."""
    return {**fields, "received_at": _EPOCH + timedelta(microseconds=fields["received_at"])}


class StoreProcess:
    """The SMTP side: starts the store process and keeps one running until `close()`, sends it
    messages, and hands each session its answer. Runs in the SMTP server's event loop."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.process: subprocess.Popen[bytes] | None = None  # the current store process
        self._sequence = itertools.count()
        self._waiting: dict[int, asyncio.Future[list[uuid.UUID]]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._outgoing: list[bytes] = []
        self._supervisor: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()

    async def start(self) -> StoreProcess:
        """Start the store process; raise when it cannot be started."""
        reader, process = await self._spawn()
        self._supervisor = asyncio.get_running_loop().create_task(
            self._supervise(reader, process))
        return self

    async def commit(self, message: Accepted) -> list[uuid.UUID]:
        """Store the message in the store process and return its new e-mail ids (empty: no
        recipient was live any more); raise StoreFailed or StoreProcessGone when it was not
        stored."""
        if self._writer is None or self._closing.is_set():
            raise StoreProcessGone("the store process is not running")
        seq = next(self._sequence)
        frame = _message_frame(seq, message)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[list[uuid.UUID]] = loop.create_future()
        self._waiting[seq] = answer
        self._outgoing.append(frame)
        if len(self._outgoing) == 1:
            loop.call_soon(self._send)
        try:
            return await answer
        finally:
            self._waiting.pop(seq, None)

    async def close(self) -> None:
        """Let the store process store what it has received, answer it, and exit; return once
        it has (and start no other)."""
        self._closing.set()
        if self._writer is not None:
            self._send()  # what is queued goes before the end
            self._writer.write_eof()
        if self._supervisor is not None:
            await self._supervisor

    def _send(self) -> None:
        """Write every frame queued since the last call at once: the sessions that reach
        DATA in one turn of the loop cost one write (and one wake-up of the store process)."""
        frames, self._outgoing = self._outgoing, []
        if frames and self._writer is not None:  # else their answers have failed already
            self._writer.write(b"".join(frames))

    async def _spawn(self) -> tuple[asyncio.StreamReader, subprocess.Popen[bytes]]:
        """Start a store process and hand it the settings; nothing is left behind when that
        fails."""
        ours, theirs = socket.socketpair()
        process = None
        try:
            with theirs:
                # Our own interpreter and module; no input of anyone else's.
                process = subprocess.Popen(  # noqa: S603
                    [sys.executable, "-m", "mailin.store_process", str(theirs.fileno())],
                    pass_fds=[theirs.fileno()])
            reader, writer = await asyncio.open_connection(sock=ours)
        except BaseException:
            ours.close()
            if process is not None:
                process.kill()
                await asyncio.to_thread(process.wait)
            raise
        writer.write(_frame(self.settings))
        self.process, self._writer = process, writer
        return reader, process

    async def _supervise(self, reader: asyncio.StreamReader,
                         process: subprocess.Popen[bytes]) -> None:
        """Serve the store process until it exits; then, unless closing, start another after
        RESTART_PAUSE (and again after each failure to start one)."""
        while True:
            await self._serve(reader, process)
            if self._closing.is_set():
                return
            log.error("the store process exited; starting another",
                      extra={"exit_code": process.returncode, "pause": RESTART_PAUSE})
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), RESTART_PAUSE)
                    return
                try:
                    reader, process = await self._spawn()
                    metrics.SMTP_STORE_RESTARTS.inc()
                    break
                except Exception:
                    log.exception("starting a store process failed; trying again",
                                  extra={"pause": RESTART_PAUSE})
            if self._closing.is_set() and self._writer is not None:
                self._writer.write_eof()  # closed while it started: let it exit at once

    async def _serve(self, reader: asyncio.StreamReader, process: subprocess.Popen[bytes]
                     ) -> None:
        """Hand out the answers until the store process closes its end; then fail whatever
        still waits on it, and reap it."""
        try:
            while True:
                length = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))[0]
                seq, email_ids, error = pickle.loads(  # noqa: S301 (our child, our socket)
                    await reader.readexactly(length))
                answer = self._waiting.get(seq)
                if answer is None or answer.done():
                    continue  # its session went away
                if error is None:
                    answer.set_result(email_ids)
                else:
                    answer.set_exception(StoreFailed.of(*error))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # it exited
        except Exception:
            log.exception("an answer of the store process could not be read")
            process.kill()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(StoreProcessGone("the store process exited"))
        await asyncio.to_thread(process.wait)


def _read_frame(stream: BinaryIO) -> Any:
    """The next frame's value; raise EOFError at the end of the stream."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    length = _LENGTH.unpack(head)[0]
    body = stream.read(length)
    if len(body) < length:
        raise EOFError
    return pickle.loads(body)  # noqa: S301 (written by our SMTP process on a private socket)


def serve(sock: socket.socket) -> None:
    """The store process: read the settings, then store every message received with a
    `Committer` and answer it, until the other end closes; then store what is queued and
    return."""
    import tasks
    from burnbox.logs import configure_logging
    from mailin.committer import Committer
    from models.mail.ingest.store import Accepted
    from models.runtime import Runtime

    stream = sock.makefile("rb")
    try:
        settings: Settings = _read_frame(stream)
    except (EOFError, OSError):
        return  # the SMTP process went away before it said anything
    configure_logging(settings)
    runtime = Runtime.from_settings(settings)
    tasks.setup_broker(runtime)
    committer = Committer.of(runtime).start()
    tune_collector()
    answers: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    def answer(seq: int, stored: Future[list[uuid.UUID]]) -> None:
        try:
            answers.put(_frame((seq, stored.result(), None)))
        except Exception as exc:
            answers.put(_frame((seq, None, (f"{type(exc).__name__}: {exc}", disk_full(exc)))))

    sender = threading.Thread(target=_send_answers, args=(sock, answers),
                              name="mailin-answer")
    sender.start()
    try:
        while True:
            try:
                seq, fields = _read_frame(stream)
            except (EOFError, OSError):  # the end, or a reset when the SMTP process died
                break
            committer.submit(Accepted(**_message_fields(fields))).add_done_callback(
                lambda stored, seq=seq: answer(seq, stored))
    finally:
        committer.stop()
        answers.put(None)
        sender.join()
        runtime.db.dispose()


def _send_answers(sock: socket.socket, answers: queue.SimpleQueue[bytes | None]) -> None:
    """Send the answers as they come, all that are waiting in one write (a batch's answers
    arrive together), until None."""
    while True:
        frames = [answers.get()]
        while True:
            try:
                frames.append(answers.get_nowait())
            except queue.Empty:
                break
        ending = frames[-1] is None
        # OSError: the SMTP process is gone, and nobody waits for these answers.
        with contextlib.suppress(OSError):
            sock.sendall(b"".join(frame for frame in frames if frame is not None))
        if ending:
            return


if __name__ == "__main__":
    # SIGTERM and SIGINT go to the whole process group; the SMTP process decides when we stop.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(socket.socket(fileno=int(sys.argv[1])))
