"""Thumbnails of new mail's image attachments, in the worker
(models.mail.ingest.thumbnails), off the SMTP path.

The fan-out of `email.received` (tasks.fanout) sends one `make_thumbnails` message per
dispatched run of events that has image attachments, once that dispatch has committed; the
actor reads which images still wait; with no transaction open, it reads each object, makes
the thumbnail and writes it; then it records the keys in one transaction. Running twice is
harmless: images done already are skipped, and a thumbnail written for an attachment deleted
meanwhile is deleted again once that transaction has committed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from functools import partial

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.db import after_commit, end_read_only_transaction
from models.events import Event
from models.mail.entities import Attachment
from models.mail.ingest.thumbnails import (
    IMAGE_TYPES,
    make_thumbnail,
    pending_images,
    record_thumbnail,
    thumbnail_key_of,
)
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="thumbnails", max_retries=3, min_backoff=1_000, max_backoff=30_000)
def make_thumbnails(email_ids: list[str]) -> None:
    """Make and store the thumbnails of the image attachments of the e-mails `email_ids` that
    still wait for one (deleted ones are skipped)."""
    rt, db = runtime(), session()
    images = pending_images(db, [uuid.UUID(value) for value in email_ids])
    # No transaction stays open while images are read, decoded and written: every thumbnail
    # is written before the first key is recorded.
    end_read_only_transaction(db)
    made: list[tuple[uuid.UUID, str]] = []
    for image in images:
        try:
            data = rt.storage.get(image.storage_key)
        except FileNotFoundError:  # the object went with its e-mail (deleted, expired)
            continue
        thumbnail = make_thumbnail(data)
        if thumbnail is None:
            log.info("no thumbnail: not an image that can be read",
                     extra={"attachment": str(image.attachment_id)})
            continue
        key = thumbnail_key_of(image.storage_key)
        rt.storage.put(key, thumbnail)
        made.append((image.attachment_id, key))
    for attachment_id, key in made:
        if not record_thumbnail(db, attachment_id, key):
            # Deleted meanwhile: its objects were discarded without this one.
            after_commit(db, partial(rt.storage.delete, key))


def send_thumbnails(session: Session, events: Sequence[Event]) -> None:
    """Ask for the thumbnails of the new e-mails of a run of `email.received` events that have
    image attachments (sent once the dispatch commits)."""
    ids = [uuid.UUID(event.data["email_id"]) for event in events
           if event.data.get("has_attachments")]
    if not ids:
        return
    with_images = session.scalars(
        select(Attachment.email_id).where(Attachment.email_id.in_(ids),
                                          Attachment.content_type.in_(sorted(IMAGE_TYPES)))
        .distinct()).all()
    if with_images:
        make_thumbnails.send(sorted(str(email_id) for email_id in with_images))
