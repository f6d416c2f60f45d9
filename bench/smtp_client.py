"""A lean SMTP load generator: many sessions driven by one thread over non-blocking sockets,
one command at a time per session (no pipelining), and nothing else.

Why not smtplib: on a machine with few cores, the load generator takes CPU from the server it
measures. smtplib in a thread per connection cost some 0.25 ms of CPU per 2 KB message here,
about two thirds of what the bare aiosmtpd server itself spends; this client holds the same
conversation (EHLO once, then MAIL, RCPT, DATA and the data per message, each reply read
before the next command, as smtplib does) for a fraction of that, so that the servers' own
costs decide the figures. For a trusted local server only.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


class SMTPError(Exception):
    """The server broke the conversation (an unexpected reply, or it closed)."""


def prepare(message: bytes) -> bytes:
    """The message as DATA sends it: CRLF line ends, leading dots doubled, then the lone dot
    that ends it."""
    data = message.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if data.startswith(b"."):
        data = b"." + data
    data = data.replace(b"\r\n.", b"\r\n..")
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"


@dataclass
class Outcome:
    """What one session did: its time span (perf_counter seconds), the duration of each
    accepted message (MAIL to the reply to its data), and how many messages were refused."""

    began: float = 0.0
    ended: float = 0.0
    latencies: list[float] = field(default_factory=list)
    refused: int = 0


@dataclass
class _Session:
    """One connection's conversation: what it waits for, and what comes next."""

    sock: socket.socket
    messages: list[tuple[str, bytes]]  # (recipient, prepared data), sent in order
    sender: str
    outcome: Outcome = field(default_factory=Outcome)
    expect: str = "greeting"
    inbox: bytes = b""
    outbox: bytes = b""
    writing: bool = False  # waiting until the socket takes the rest of `outbox`
    sent_at: float = 0.0


def run(host: str, port: int, sender: str, plans: Sequence[Sequence[tuple[str, bytes]]],
        ready: Callable[[], object], timeout: float, name: str = "bench.example"
        ) -> list[Outcome]:
    """One session per plan (a list of (recipient, `prepare`d data)): connect and say EHLO on
    every one, call `ready()` (a barrier shared with other load generators), then send every
    plan's messages, all sessions at once; each session's Outcome, in order. Raise SMTPError
    or OSError when a server misbehaves, closes, or says nothing for `timeout` seconds."""
    with _Driver(timeout) as driver:
        sessions = [driver.connect(host, port, plan, sender) for plan in plans]
        driver.drive(lambda session: session.expect != "ready",
                     lambda session, code: driver.greet(session, code, name))
        ready()
        for session in sessions:
            session.outcome.began = time.perf_counter()
            driver.next_message(session)
        driver.drive(lambda session: session.expect != "done", driver.converse)
        return [session.outcome for session in sessions]


class _Driver:
    """The sessions of one load generator, on one selector."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.selector = selectors.DefaultSelector()

    def __enter__(self) -> _Driver:
        return self

    def __exit__(self, *_: object) -> None:
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()

    def connect(self, host: str, port: int, plan: Sequence[tuple[str, bytes]], sender: str
                ) -> _Session:
        """Open a session; its greeting is read by `drive`."""
        sock = socket.create_connection((host, port), timeout=self.timeout)
        sock.setblocking(False)
        session = _Session(sock, list(plan), sender)
        self.selector.register(sock, selectors.EVENT_READ, session)
        return session

    def drive(self, busy: Callable[[_Session], bool],
              on_reply: Callable[[_Session, int], None]) -> None:
        """Run the sessions until none is `busy`, handing each complete reply's code to
        `on_reply` and writing what the sessions queue."""
        while any(busy(key.data) for key in self.selector.get_map().values()):
            events = self.selector.select(self.timeout)
            if not events:
                raise SMTPError(f"no reply within {self.timeout} s")
            for key, mask in events:
                session: _Session = key.data
                if mask & selectors.EVENT_WRITE:
                    self._flush(session)
                if mask & selectors.EVENT_READ:
                    data = session.sock.recv(65536)
                    if not data:
                        raise SMTPError("the server closed the connection")
                    session.inbox += data
                    while (code := _reply(session)) is not None:
                        on_reply(session, code)

    def greet(self, session: _Session, code: int, name: str) -> None:
        """The greeting, then EHLO's reply."""
        if session.expect == "greeting":
            _expect(code, 220)
            self._send(session, f"EHLO {name}\r\n".encode(), "ehlo")
        else:
            _expect(code, 250)
            session.expect = "ready"

    def next_message(self, session: _Session) -> None:
        """Start the session's next message, or end the session when none is left."""
        if not session.messages:
            session.outcome.ended = time.perf_counter()
            session.expect = "done"
            return
        session.sent_at = time.perf_counter()
        self._send(session, f"MAIL FROM:<{session.sender}>\r\n".encode(), "mail")

    def converse(self, session: _Session, code: int) -> None:
        """Answer one reply of a message's conversation."""
        recipient, data = session.messages[0]
        if session.expect == "mail":
            _expect(code, 250)
            self._send(session, f"RCPT TO:<{recipient}>\r\n".encode(), "rcpt")
        elif session.expect == "rcpt":
            if code == 250:
                self._send(session, b"DATA\r\n", "data")
            else:
                self._send(session, b"RSET\r\n", "rset")
        elif session.expect == "data":
            _expect(code, 354)
            self._send(session, data, "stored")
        else:
            if session.expect == "rset":
                _expect(code, 250)
                session.outcome.refused += 1
            elif code == 250:
                session.outcome.latencies.append(time.perf_counter() - session.sent_at)
            else:
                session.outcome.refused += 1
            session.messages.pop(0)
            self.next_message(session)

    def _send(self, session: _Session, data: bytes, expect: str) -> None:
        session.expect = expect
        session.outbox += data
        self._flush(session)

    def _flush(self, session: _Session) -> None:
        """Write what the socket takes now; wait until it can take the rest."""
        if session.outbox:
            session.outbox = session.outbox[session.sock.send(session.outbox):]
        if bool(session.outbox) != session.writing:
            session.writing = bool(session.outbox)
            self.selector.modify(session.sock, selectors.EVENT_READ | (
                selectors.EVENT_WRITE if session.writing else 0), session)


def _reply(session: _Session) -> int | None:
    """The code of the next complete (possibly multi-line) reply in the session's input,
    taken out of it; None until one is complete."""
    end = 0
    while (newline := session.inbox.find(b"\n", end)) >= 0:
        line = session.inbox[end:newline + 1]
        if len(line) < 4 or not line[:3].isdigit():
            raise SMTPError(f"unexpected reply {line!r}")
        end = newline + 1
        if line[3:4] != b"-":
            session.inbox = session.inbox[end:]
            return int(line[:3])
    return None


def _expect(code: int, wanted: int) -> None:
    if code != wanted:
        raise SMTPError(f"the server answered {code}, not {wanted}")
