"""Outgoing SMTP: build a plain-text message and hand it to a relay.

Used by the `send_mail` actor (the configured relay) and by the setup/admin connectivity tests
(a relay typed by the user, reached at an address checked by `burnbox.netguard`).
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr

from burnbox.outbound_guard import SMTP, check_outbound
from burnbox.settings import MailerSettings

TIMEOUT_SECONDS = 15.0


@dataclass(frozen=True)
class Relay:
    """Where and how to submit mail."""

    host: str
    port: int
    username: str = ""
    password: str = ""
    starttls: bool = True
    from_address: str = "Burnbox <no-reply@localhost>"
    # TLS from the first byte (SMTPS, usually port 465) instead of STARTTLS.
    implicit_tls: bool = False

    @classmethod
    def from_settings(cls, mailer: MailerSettings) -> Relay:
        """The relay of the mailer.* settings."""
        return cls(host=mailer.host, port=mailer.port, username=mailer.username,
                   password=mailer.password, starttls=mailer.starttls,
                   from_address=mailer.from_address)


class _PinnedSMTP(smtplib.SMTP):
    """An SMTP client that opens its socket to one given address while STARTTLS still verifies
    the certificate against the host name."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self._address = address
        super().__init__(host, port, timeout=timeout)

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        return socket.create_connection((self._address, port), timeout)


def connect(relay: Relay, *, address: str | None = None,
            timeout: float = TIMEOUT_SECONDS) -> smtplib.SMTP:
    """An SMTP connection to the relay, past STARTTLS and login when configured.

    `address`, when given, is the already-checked IP to connect to instead of resolving
    relay.host again (not with `relay.implicit_tls`: ValueError). Raise OSError or
    smtplib.SMTPException on failure."""
    check_outbound(SMTP, relay.host)
    if relay.implicit_tls and address is not None:
        raise ValueError("a pinned address is for STARTTLS or plain relays only")
    if relay.implicit_tls:
        client: smtplib.SMTP = smtplib.SMTP_SSL(relay.host, relay.port, timeout=timeout,
                                                context=ssl.create_default_context())
    elif address is None:
        client = smtplib.SMTP(relay.host, relay.port, timeout=timeout)
    else:
        client = _PinnedSMTP(relay.host, relay.port, address, timeout)
    try:
        client.ehlo()
        if relay.starttls and not relay.implicit_tls:
            client.starttls(context=ssl.create_default_context())
            client.ehlo()
        if relay.username:
            client.login(relay.username, relay.password)
    except BaseException:
        client.close()
        raise
    return client


def build_message(from_address: str, to: str, subject: str, text: str) -> EmailMessage:
    """A plain-text UTF-8 message with Date and Message-ID."""
    message = EmailMessage()
    message["From"] = from_address
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    domain = parseaddr(from_address)[1].rpartition("@")[2] or "localhost"
    message["Message-ID"] = make_msgid(domain=domain)
    message.set_content(text)
    return message


def send(relay: Relay, message: EmailMessage) -> None:
    """Submit `message` through the relay; raise OSError or smtplib.SMTPException on failure."""
    with connect(relay) as client:
        client.send_message(message)
