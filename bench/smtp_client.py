"""A lean SMTP client for load generation: one blocking socket, one command at a time (no
pipelining), and nothing else.

Why not smtplib: on a machine with few cores, the load generator takes CPU from the server it
measures. smtplib costs some 0.25 ms of CPU per 2 KB message here (about two thirds of what
the bare aiosmtpd server itself spends); this client does the same conversation in a fraction
of that, so the servers' own costs decide the figures. It speaks plain SMTP to a trusted local
server: EHLO, then MAIL, RCPT, DATA and the data per message, reading each reply before the
next command, as smtplib does.
"""

from __future__ import annotations

import socket


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


class Client:
    """One SMTP session to host:port, greeted and EHLO'd on construction."""

    def __init__(self, host: str, port: int, timeout: float, name: str = "bench.example"
                 ) -> None:
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._replies = self._sock.makefile("rb")
        self._expect(self._reply(), 220)
        self._expect(self.command(f"EHLO {name}".encode()), 250)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def command(self, line: bytes) -> int:
        """Send one command line and return its reply code."""
        self._sock.sendall(line + b"\r\n")
        return self._reply()

    def send(self, sender: str, recipient: str, prepared: bytes) -> bool:
        """One message to one recipient (`prepared` by `prepare`): True when the server
        answered 250 to its data; False when it refused the recipient or the message (the
        transaction is reset)."""
        self._expect(self.command(f"MAIL FROM:<{sender}>".encode()), 250)
        if self.command(f"RCPT TO:<{recipient}>".encode()) != 250:
            self._expect(self.command(b"RSET"), 250)
            return False
        self._expect(self.command(b"DATA"), 354)
        self._sock.sendall(prepared)
        return self._reply() == 250

    def close(self) -> None:
        """QUIT (when the server still listens) and close."""
        try:
            self.command(b"QUIT")
        except (OSError, SMTPError):
            pass
        finally:
            self._replies.close()
            self._sock.close()

    def _reply(self) -> int:
        """Read one (possibly multi-line) reply; its code."""
        while True:
            line = self._replies.readline(1024)
            if len(line) < 4 or not line[:3].isdigit():
                raise SMTPError(f"unexpected reply {line!r}")
            if line[3:4] != b"-":
                return int(line[:3])

    @staticmethod
    def _expect(code: int, wanted: int) -> None:
        if code != wanted:
            raise SMTPError(f"the server answered {code}, not {wanted}")
