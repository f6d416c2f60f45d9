"""The benchmark's lean SMTP client against a real aiosmtpd server: the server receives the
message byte for byte (dot-stuffing undone), and a refused recipient or message is reported as
refused, with the session still usable."""

import pytest
from aiosmtpd.controller import Controller

from bench.smtp_client import Client, prepare
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


def test_messages_arrive_byte_for_byte_and_refusals_are_counted(server):
    controller, recorder = server
    lines = b"Subject: dots\r\n\r\n.leading dot\r\n..two dots\r\n.\r\nend"
    with Client("127.0.0.1", controller.port, timeout=10) as client:
        assert client.send("a@sender.example", KNOWN, prepare(lines))
        assert not client.send("a@sender.example", "unknown@bench.example", prepare(lines))
        assert not client.send("a@sender.example", KNOWN, prepare(b"Subject: x\r\n\r\nrefuse me"))
        assert client.send("a@sender.example", KNOWN, prepare(b"Subject: bare LF\nbody"))
    assert recorder.received == [
        ("a@sender.example", [KNOWN], lines + b"\r\n"),
        ("a@sender.example", [KNOWN], b"Subject: bare LF\r\nbody\r\n"),
    ]
