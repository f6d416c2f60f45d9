"""The MD5, SHA-1 and SHA-256 of every attachment, as its metadata shows them.

Computed by the worker after the e-mail is stored (`tasks.checksums`), not at ingest: hashing
is CPU spent on every byte of every attachment (three digests of a 36 KiB attachment took about
1 ms on the shared development machine under load, in the order of the whole ingest of a small
message), and the SMTP path must not slow down for a value few readers ask
for. Not computed when read either: the detail would then fetch every attachment from object
storage and write from a read. The checksums are stored on the attachment rows once, for
every copy of an attachment that several inboxes share (they name one object); until then
the metadata shows `checksums: null`, usually for well under a second.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import IO

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from models.mail.entities import Attachment

BLOCK = 64 * 1024
ALGORITHMS = ("md5", "sha1", "sha256")


def pending_objects(session: Session, email_ids: Sequence[uuid.UUID]) -> list[str]:
    """The storage keys of the attachments of the e-mails `email_ids` that have no checksums
    yet, each once (deleted e-mails have no attachments left to list)."""
    return list(session.scalars(
        select(Attachment.storage_key).where(Attachment.email_id.in_(email_ids),
                                             Attachment.sha256.is_(None))
        .distinct().order_by(Attachment.storage_key)))


def digest(stream: IO[bytes]) -> dict[str, str]:
    """The hex MD5, SHA-1 and SHA-256 of everything `stream` holds, read in blocks (a large
    attachment never sits in memory whole)."""
    hashes = {name: hashlib.new(name, usedforsecurity=False) for name in ALGORITHMS}
    while block := stream.read(BLOCK):
        for one in hashes.values():
            one.update(block)
    return {name: one.hexdigest() for name, one in hashes.items()}


def record_checksums(session: Session, storage_key: str, checksums: dict[str, str]) -> None:
    """Store `checksums` (of `digest`) on every attachment row of the object `storage_key`."""
    session.execute(update(Attachment).where(Attachment.storage_key == storage_key)
                    .values(**checksums).execution_options(synchronize_session=False))


def checksums_of(attachment: Attachment) -> dict[str, str] | None:
    """The attachment's {md5, sha1, sha256}, None until computed."""
    if attachment.sha256 is None:
        return None
    return {"md5": attachment.md5 or "", "sha1": attachment.sha1 or "",
            "sha256": attachment.sha256}
