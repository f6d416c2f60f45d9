"""Every argument of every SMTP command, and the lines of an AUTH exchange, with a NUL, another
control character or bytes that are not UTF-8, over a real socket: each is refused with a
permanent reply (the sender must not retry what can never be taken), nothing is stored, the
server logs no error and the session goes on. On PostgreSQL a NUL in a recipient answered
`451` (its look-up failed), and one in the HELO name or the sender failed the commit at DATA."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import logging
import socket
from types import SimpleNamespace

import pytest
from sqlalchemy import func, select

from mailin.server import MailinThread
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.mail.smtp_credentials import issue_credential
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.factories.tenancy import caller_of

# Bytes no argument may hold: NUL, escape, DEL, a lone CR, a byte that is not UTF-8 (aiosmtpd
# reads it as a surrogate), the UTF-8 of a C1 control.
BAD = {"nul": b"\x00", "escape": b"\x1b", "delete": b"\x7f", "cr": b"\r", "not_utf8": b"\xff",
       "c1": b"\xc2\x85"}


def _b64(data: bytes) -> bytes:
    return base64.b64encode(data)


# Command name: (lines before it, argument templates with {bad} where the bad bytes go, never
# first or last: the server strips white space, CR included, from both ends of an argument).
# Every command the server answers is here (checked against its HELP).
COMMANDS: dict[str, tuple[list[bytes], list[bytes]]] = {
    "HELO": ([], [b"client{bad}.example"]),
    "EHLO": ([], [b"client{bad}.example", b"[127.0.0{bad}.1]"]),
    "MAIL": ([b"EHLO client.example"],
             [b"FROM:<a{bad}b@sender.example>", b"FROM:<ab@sender{bad}.example>",
              b"FROM:<ab@sender.example> BODY=8BIT{bad}MIME",
              b"FROM:<ab@sender.example> SIZE=1{bad}0",
              b"FROM:<ab@sender.example> X{bad}=1", b"FROM:{bad}<ab@sender.example>"]),
    "RCPT": ([b"EHLO client.example", b"MAIL FROM:<ab@sender.example>"],
             [b"TO:<box{bad}@{domain}>", b"TO:<{local}@{domain}{bad}>", b"TO:<{bad}@{domain}>",
              b"TO:<{local}@{domain}> NOTIFY=NE{bad}VER", b"TO:<{local}@{domain}> X{bad}=1"]),
    "AUTH": ([b"EHLO client.example"],
             [b"PLAIN{bad}x", b"PLAIN x{bad}y", b"LOGIN x{bad}y", b"x{bad}y",
              b"PLAIN AGJv{bad}eEBleGFtcGxl"]),
    "DATA": ([b"EHLO client.example", b"MAIL FROM:<ab@sender.example>",
              b"RCPT TO:<{local}@{domain}>"], [b"x{bad}y"]),
    "VRFY": ([b"EHLO client.example"], [b"{local}{bad}@{domain}"]),
    "NOOP": ([], [b"x{bad}y"]),
    "HELP": ([], [b"MA{bad}IL"]),
    "RSET": ([], [b"x{bad}y"]),
    "QUIT": ([], [b"x{bad}y"]),
}


class Session:
    """One SMTP connection read reply by reply."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.socket = socket.create_connection(address, timeout=10)
        self.reader = self.socket.makefile("rb")
        assert self.reply().startswith(b"220")

    def reply(self) -> bytes:
        """The next reply, its continuation lines joined."""
        lines = [self.reader.readline()]
        while lines[-1][3:4] == b"-":
            lines.append(self.reader.readline())
        return b"".join(lines)

    def send(self, line: bytes) -> bytes:
        self.socket.sendall(line + b"\r\n")
        return self.reply()

    def close(self) -> None:
        self.reader.close()
        self.socket.close()


@pytest.fixture
def mail(committed_runtime):
    """A committed inbox with capture credentials, and a server that offers AUTH."""
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world, alias="box")
        secret = issue_credential(session, caller_of(world.users["owner"]),
                                  session.get(Inbox, inbox.id)).secret
    serving = dataclasses.replace(runtime, settings=runtime.settings.replace(
        **{"smtp.auth_without_tls": "true"}), caches={})
    server = MailinThread(serving, host="127.0.0.1", port=0).start_and_wait()
    local, _, domain = inbox.full_address.partition("@")
    yield SimpleNamespace(runtime=runtime, server=server, inbox=inbox, secret=secret,
                          fill={b"{local}": local.encode(), b"{domain}": domain.encode()})
    server.stop()


def _filled(line: bytes, fill: dict[bytes, bytes], bad: bytes = b"") -> bytes:
    for name, value in {**fill, b"{bad}": bad}.items():
        line = line.replace(name, value)
    return line


def _stored(runtime) -> int:
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(Email))


def _errors(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.levelno >= logging.ERROR or record.exc_info]


def test_the_sweep_covers_every_command_the_server_answers(mail):
    session = Session(mail.server.address)
    try:
        answered = session.send(b"HELP").decode().split(":", 1)[1].split()
    finally:
        session.close()
    assert sorted(answered) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_control_character_in_any_argument_is_a_permanent_refusal(mail, caplog, command):
    before, arguments = COMMANDS[command]
    for argument, bad in itertools.product(arguments, BAD.values()):
        session = Session(mail.server.address)
        try:
            for line in before:
                assert session.send(_filled(line, mail.fill))[:1] in (b"2", b"3")
            line = command.encode() + b" " + _filled(argument, mail.fill, bad)
            reply = session.send(line)
            assert reply.startswith(b"501 5.5.4 "), (line, reply)
            # The session goes on: a clean message is stored.
            assert session.send(b"RSET").startswith(b"250")
            assert session.send(b"EHLO client.example").startswith(b"250")
            assert session.send(b"MAIL FROM:<ab@sender.example>").startswith(b"250")
            assert session.send(_filled(b"RCPT TO:<{local}@{domain}>", mail.fill)).startswith(
                b"250")
            assert session.send(b"DATA").startswith(b"354")
            stored = session.send(message(mail.inbox.full_address) + b".")
            assert stored.startswith(b"250 2.0.0"), stored
        finally:
            session.close()
    assert _stored(mail.runtime) == len(arguments) * len(BAD)
    assert _errors(caplog) == []


def _auth_lines(mail, username: bytes) -> list[tuple[bytes, bytes]]:
    """(line, expected reply start) of the AUTH exchanges that present `username`."""
    secret = mail.secret.encode()
    return [(b"AUTH PLAIN " + _b64(b"\x00" + username + b"\x00" + secret), b"535 5.7.8"),
            (b"AUTH LOGIN " + _b64(username), b"334"), (_b64(secret), b"535 5.7.8"),
            (b"AUTH LOGIN", b"334"), (_b64(username), b"334"), (_b64(secret), b"535 5.7.8")]


@pytest.mark.parametrize("bad", [b"\x01", b"\x1b", b"\xff", b"\x00"])
def test_a_control_character_in_a_username_is_an_invalid_login(mail, caplog, bad):
    username = _filled(b"{local}" + bad + b"@{domain}", mail.fill)
    session = Session(mail.server.address)
    try:
        assert session.send(b"EHLO client.example").startswith(b"250")
        for line, expected in _auth_lines(mail, username):
            if bad == b"\x00" and line.startswith(b"AUTH PLAIN"):
                continue  # PLAIN separates its fields with NUL: no username can hold one
            reply = session.send(line)
            assert reply.startswith(expected), (line, reply)
    finally:
        session.close()
    assert _errors(caplog) == []


def test_a_control_character_in_a_recipient_of_a_logged_in_session_is_refused(mail, caplog):
    session = Session(mail.server.address)
    try:
        assert session.send(b"EHLO client.example").startswith(b"250")
        login = b"\x00" + mail.inbox.full_address.encode() + b"\x00" + mail.secret.encode()
        assert session.send(b"AUTH PLAIN " + _b64(login)).startswith(b"235")
        assert session.send(b"MAIL FROM:<ab@sender.example>").startswith(b"250")
        for bad in BAD.values():
            assert session.send(b"RCPT TO:<anyone" + bad + b"@gmail.com>").startswith(b"501")
        assert session.send(b"RCPT TO:<anyone@gmail.com>").startswith(b"250")
    finally:
        session.close()
    assert _errors(caplog) == []
