"""The checksums of new attachments, in the worker (models.mail.checks.checksums), off the
SMTP path.

The fan-out of `email.received` (tasks.fanout) sends one `checksum_attachments` message per
dispatched run of events that has e-mails with attachments, once that dispatch has committed;
the actor lists the attachment objects still without checksums, reads each from object storage
in blocks with no transaction open, and stores its digests on every row that names it. Running
twice is harmless: objects already done are not listed again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from models.db import end_read_only_transaction
from models.events import Event
from models.mail.checks.checksums import digest, pending_objects, record_checksums
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="checksums", max_retries=3, min_backoff=1_000, max_backoff=30_000)
def checksum_attachments(email_ids: list[str]) -> None:
    """Compute and store the checksums of the attachments of the e-mails `email_ids` that
    have none yet."""
    rt, db = runtime(), session()
    keys = pending_objects(db, [uuid.UUID(value) for value in email_ids])
    # No transaction stays open while object storage answers (S3 is a network service):
    # every object is read before the first checksum is written.
    end_read_only_transaction(db)
    digests = []
    for key in keys:
        try:
            with rt.storage.open(key) as stream:
                digests.append((key, digest(stream)))
        except FileNotFoundError:  # the object went with its e-mails (deleted, expired)
            log.info("no attachment object to checksum", extra={"key": key})
    for key, checksums in digests:
        record_checksums(db, key, checksums)


def send_checksums(_session: Session, events: Sequence[Event]) -> None:
    """Ask for the checksums of the attachments of the new e-mails of a run of
    `email.received` events that have any (sent once the dispatch commits)."""
    email_ids = [event.data["email_id"] for event in events if event.data.get("has_attachments")]
    if email_ids:
        checksum_attachments.send(email_ids)
