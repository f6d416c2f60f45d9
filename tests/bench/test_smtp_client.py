"""The benchmark's load generator against a real aiosmtpd server: several sessions on one
thread, every message received byte for byte (dot-stuffing undone), a refused recipient or
message counted as refused with the session going on, and a server that goes away reported."""

import socket
import threading

import pytest
from aiosmtpd.controller import Controller

from bench.smtp_client import SMTPError, prepare, run
from tests.processes import free_port

KNOWN = "known@bench.example"


class Recorder:
    def __init__(self):
        self.received = []

    async def handle_RCPT(self, server, session, envelope, address, options):
        if address != KNOWN:
            return "550 5.1.1 Mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if b"refuse me" in envelope.content:
            return "554 5.6.0 Refused"
        self.received.append((envelope.mail_from, envelope.rcpt_tos, envelope.content))
        return "250 OK"


@pytest.fixture
def server():
    recorder = Recorder()
    controller = Controller(recorder, hostname="127.0.0.1", port=free_port(),
                            decode_data=False)
    controller.start()
    yield controller, recorder
    controller.stop()


def test_sessions_deliver_byte_for_byte_and_count_refusals(server):
    controller, recorder = server
    dots = b"Subject: dots\r\n\r\n.leading dot\r\n..two dots\r\n.\r\nend"
    big = b"Subject: big\r\n\r\n" + b"x" * 70 + b"\r\n" * 10_000  # more than a socket takes
    plan = [(KNOWN, prepare(dots)), ("unknown@bench.example", prepare(dots)),
            (KNOWN, prepare(b"Subject: x\r\n\r\nrefuse me")),
            (KNOWN, prepare(b"Subject: bare LF\nbody")), (KNOWN, prepare(big))]
    ready = threading.Event()
    outcomes = run("127.0.0.1", controller.port, "a@sender.example", [plan, plan[:1]],
                   ready.set, timeout=10)
    assert ready.is_set()
    assert [(len(o.latencies), o.refused) for o in outcomes] == [(3, 2), (1, 0)]
    assert all(o.began <= o.ended for o in outcomes)
    contents = [content for _, _, content in recorder.received]
    assert sorted(contents) == sorted([dots + b"\r\n", dots + b"\r\n",
                                       b"Subject: bare LF\r\nbody\r\n", big])
    assert {(sender, tuple(to)) for sender, to, _ in recorder.received} == {
        ("a@sender.example", (KNOWN,))}


def test_no_server_is_reported():
    with pytest.raises(OSError):
        run("127.0.0.1", free_port(), "a@sender.example", [[(KNOWN, prepare(b"x"))]],
            lambda: None, timeout=5)


def test_a_server_that_says_something_else_is_reported():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        connection, _ = listener.accept()
        connection.sendall(b"hello there\r\n")
        connection.recv(100)
        connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with pytest.raises(SMTPError, match="unexpected reply"):
        run("127.0.0.1", port, "a@sender.example", [[(KNOWN, prepare(b"x"))]],
            lambda: None, timeout=5)
    listener.close()
