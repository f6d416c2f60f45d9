"""Outgoing mail: the `send_mail` actor delivers one plain-text message through the relay in force
(the mailer.* settings, or the group an administrator stored, models.system_config), or
writes it to the log when no relay is configured (mailer.host empty, the embedded default), so a
newcomer can still follow a verification link.

Actions return the messages (see `models.identity.account_mail`) and the view sends them with
`send_mails` inside its transaction: like every actor, `send_mail` then waits for the commit, so
a rolled-back change mails nothing. Transient failures (network errors, 4xx replies, a dropped
connection) are retried with backoff; permanent ones (5xx replies, refused login) are not, since
sending again cannot help.
"""

from __future__ import annotations

import logging
import smtplib
from collections.abc import Iterable

from burnbox import mailer
from models.identity.account_mail import OutgoingMail
from models.system_config import mailer_config
from tasks.broker import actor, runtime

log = logging.getLogger(__name__)

MAX_RETRIES = 8


class TransientMailError(RuntimeError):
    """Delivery failed for a reason that may pass (retried)."""


def _is_transient(exc: BaseException) -> bool:
    # Order matters: every SMTPException is also an OSError.
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(400 <= code < 500 for code, _ in exc.recipients.values())
    if isinstance(exc, smtplib.SMTPResponseException):
        return 400 <= exc.smtp_code < 500
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        return True
    if isinstance(exc, smtplib.SMTPException):
        return False  # e.g. STARTTLS required but not offered: a configuration error
    return isinstance(exc, OSError)  # refused, reset, timed out, unreachable


def _retry_when(retries: int, exc: BaseException) -> bool:
    return isinstance(exc, TransientMailError) and retries < MAX_RETRIES


@actor(queue_name="mail", min_backoff=5_000, max_backoff=600_000, retry_when=_retry_when)
def send_mail(to: str, subject: str, text: str) -> None:
    """Deliver one message to `to`. Raise TransientMailError (retried) or the permanent SMTP
    error (not retried)."""
    # The relay in force: the settings, or what an administrator stored (PUT
    # /admin/config/mailer), read per message so a change applies without a restart.
    # A session of its own, closed before the relay is contacted: nothing is held open while
    # the relay answers (and the actor can be called directly, outside a worker).
    with runtime().db.session() as db:
        config = mailer_config(db, runtime().settings)
    if not config.host:
        log.info("mail (no mailer configured, logged instead of sent)",
                 extra={"to": to, "subject": subject, "body": text})
        return
    relay = mailer.Relay.from_settings(config)
    message = mailer.build_message(relay.from_address, to, subject, text)
    try:
        mailer.send(relay, message)
    except (OSError, smtplib.SMTPException) as exc:
        if _is_transient(exc):
            raise TransientMailError(f"sending to {to} failed, will retry: {exc}") from exc
        raise
    log.info("mail sent", extra={"to": to, "subject": subject})


def send_mails(mails: Iterable[OutgoingMail]) -> None:
    """Send each message an action produced to `send_mail` (after the commit of the current
    unit of work, when it wrote)."""
    for mail in mails:
        send_mail.send(mail.to, mail.subject, mail.text)
