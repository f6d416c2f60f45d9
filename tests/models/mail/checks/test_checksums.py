"""The attachments' checksums (models.mail.checks.checksums): the digests are hashlib's, read in
blocks, and stored on every row of a shared object."""

from __future__ import annotations

import hashlib
import io
import os

from sqlalchemy import select

from models.mail.checks.checksums import (
    BLOCK,
    checksums_of,
    digest,
    pending_objects,
    record_checksums,
)
from models.mail.entities import Attachment
from tests.factories.mail import deliver, message
from tests.web.test_emails import inbox

__all__ = ["inbox"]


def test_the_digests_are_hashlibs_across_block_boundaries():
    for size in (0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7):
        data = os.urandom(size)
        assert digest(io.BytesIO(data)) == {"md5": hashlib.md5(data).hexdigest(),
                                            "sha1": hashlib.sha1(data).hexdigest(),
                                            "sha256": hashlib.sha256(data).hexdigest()}


def test_the_checksums_are_stored_on_the_rows_of_the_object_once(runtime, inbox):
    data = os.urandom(5000)
    raw = message(inbox.full_address, attachments=(("a.bin", "application/octet-stream", data),))
    [email_id] = deliver(runtime.db, runtime.storage, raw, recipients=[inbox.full_address])
    with runtime.db.transaction() as session:
        [key] = pending_objects(session, [email_id])
        with runtime.storage.open(key) as stream:
            record_checksums(session, key, digest(stream))
    with runtime.db.session() as session:
        assert pending_objects(session, [email_id]) == []
        [row] = session.scalars(select(Attachment).where(Attachment.email_id == email_id))
        assert checksums_of(row) == {"md5": hashlib.md5(data).hexdigest(),
                                     "sha1": hashlib.sha1(data).hexdigest(),
                                     "sha256": hashlib.sha256(data).hexdigest()}
