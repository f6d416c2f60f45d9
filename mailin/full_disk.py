"""What mailin says about a full disk: `452 4.3.1 Insufficient system storage` to every sender
whose message could not be stored for it (RFC 3463 X.3.1: a temporary refusal, the sender
retries), and one log line when the disk fills up and one when space is back, not one per
message.

Before, a full disk was answered `451 4.3.0` like any failure and logged as "storing a message
failed" with a traceback for every message, which buried the one thing the operator had to
know. Whether an error is a full disk is `burnbox.outages.disk_full` (the filesystem under
object storage, SQLite's file, PostgreSQL's disk).
"""

from __future__ import annotations

import logging

from burnbox import metrics

log = logging.getLogger(__name__)

NO_SPACE = "452 4.3.1 Insufficient system storage, try again later"


class FullDisk:
    """Whether the last store of one SMTP server failed for a full disk; touched only from its
    event loop."""

    def __init__(self) -> None:
        self.full = False

    def failed(self, error: BaseException, recipients: int) -> str:
        """A message could not be stored because a disk is full: the reply, logged at ERROR
        the first time since space was last there."""
        metrics.SMTP_RECIPIENTS_REFUSED.labels("disk_full").inc(recipients)
        if not self.full:
            self.full = True
            log.error("the disk is full: mail is refused with 452 4.3.1 until space is freed "
                      "(%s)", error)
        return NO_SPACE

    def stored(self) -> None:
        """A message was stored: if the disk was full, say that space is back."""
        if self.full:
            self.full = False
            log.info("disk space is back: mail is stored again")
