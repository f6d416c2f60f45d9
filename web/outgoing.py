"""Hand the mail an action produced to the `send_mail` actor, after the action committed."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from models.identity.account_mail import OutgoingMail
from tasks.mail import send_mail

log = logging.getLogger(__name__)


def send_after_commit(mails: Iterable[OutgoingMail]) -> None:
    """Enqueue each message. Call only once the action that produced them has committed.

    A broker failure is logged, not raised: the change is already committed, and answering
    with an error would tell the client it failed when it did not."""
    for mail in mails:
        try:
            send_mail.send(mail.to, mail.subject, mail.text)
        except Exception:
            log.exception("enqueueing mail failed", extra={"to": mail.to, "subject": mail.subject})
