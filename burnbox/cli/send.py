"""`burnbox send`: a test message over real SMTP to Burnbox's own SMTP server, so the whole
path is exercised as a sender's mail takes it (RCPT check, DATA, stored before the reply, then
the fan-out: WebSockets, webhooks, `burnbox inboxes follow`)."""

from __future__ import annotations

import click

from burnbox.cli.errors import fail, reason
from burnbox.cli.ready import load

# A wildcard bind address is not one to connect to: use the loopback address instead.
WILDCARDS = {"", "0.0.0.0", "::"}  # noqa: S104 (compared with, never bound)


@click.command("send")
@click.argument("address")
@click.option("--from", "sender", default="burnbox-test@sender.localhost", show_default=True)
@click.option("--subject", default="Burnbox test message", show_default=True)
@click.option("--text", "body", default="This is a test message sent by `burnbox send`.",
              help="the text body")
@click.option("--smtp-host", default=None, help="SMTP server (default: smtp.host)")
@click.option("--smtp-port", type=int, default=None, help="SMTP port (default: smtp.port)")
def send(address: str, sender: str, subject: str, body: str, smtp_host: str | None,
         smtp_port: int | None) -> None:
    """Send a test message to ADDRESS over SMTP (to this Burnbox's SMTP server by default)."""
    import smtplib

    from burnbox.mailer import build_message

    settings = load()
    host = smtp_host or settings.smtp.host
    host = "127.0.0.1" if host in WILDCARDS else host
    port = smtp_port or settings.smtp.port
    message = build_message(sender, address, subject, body)
    try:
        with smtplib.SMTP(host, port, timeout=30) as smtp:
            smtp.ehlo("burnbox-send.localhost")
            for code, reply in (smtp.mail(sender), smtp.rcpt(address)):
                if code >= 300:
                    raise smtplib.SMTPResponseException(code, reply)
            code, reply = smtp.data(message.as_bytes())
    except smtplib.SMTPResponseException as exc:
        fail(f"the SMTP server refused the message to {address}: {exc.smtp_code} "
             f"{_text(exc.smtp_error)}")
    except (OSError, smtplib.SMTPException) as exc:
        fail(f"cannot reach the SMTP server at {host}:{port}: {reason(exc)} "
             "(is `burnbox serve` or `burnbox mailin` running?)")
    click.echo(f"sent {subject!r} to {address} ({message['Message-ID']}): {code} {_text(reply)}")


def _text(reply: bytes | str) -> str:
    return reply.decode(errors="replace") if isinstance(reply, bytes) else reply
