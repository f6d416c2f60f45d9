"""Thumbnails of image attachments: made by the worker after the message is stored, never on
the SMTP path, with bounded work, and kept in object storage beside the attachment.

Which parts get one: a part whose stored content type is one of `IMAGE_TYPES` and whose size
is at most `MAX_INPUT_BYTES`. Pillow reads it with decompression-bomb limits
(`MAX_PIXELS`: an image that declares more pixels is refused before it is decoded; JPEGs are
decoded at a reduced scale with `draft`), only its first frame, and writes a WebP of at most
`MAX_SIDE` pixels on its longer side. An image Pillow cannot read, or refuses, gets no
thumbnail: a broken attachment is an outcome, not a failure to retry.

Steps, so no transaction is open while the images are read and written:
`pending_images` (a read) lists what waits; `make_thumbnail` (no database) turns bytes into
the thumbnail; the caller writes it under `thumbnail_key_of`; `record_thumbnail` sets the
column, and says whether the attachment still exists (when not, the caller deletes the
object it wrote: a deleted e-mail's objects were discarded already).
"""

from __future__ import annotations

import io
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from models.mail.entities import Attachment

MAX_SIDE = 240  # pixels, the longer side of a thumbnail
MAX_INPUT_BYTES = 20 * 1024 * 1024  # larger images get no thumbnail
MAX_PIXELS = 24_000_000  # declared width x height beyond which an image is not decoded
THUMBNAIL_TYPE = "image/webp"
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})
_FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP")  # what Pillow may take the bytes for


@dataclass(frozen=True)
class PendingImage:
    """An image attachment without a thumbnail yet."""

    attachment_id: uuid.UUID
    storage_key: str


def pending_images(session: Session, email_ids: Sequence[uuid.UUID]) -> list[PendingImage]:
    """The image attachments of the e-mails `email_ids` that wait for a thumbnail."""
    if not email_ids:
        return []
    rows = session.execute(
        select(Attachment.id, Attachment.storage_key)
        .where(Attachment.email_id.in_(email_ids), Attachment.thumbnail_key.is_(None),
               Attachment.content_type.in_(sorted(IMAGE_TYPES)),
               Attachment.size_bytes <= MAX_INPUT_BYTES)
        .order_by(Attachment.id)).all()
    return [PendingImage(row.id, row.storage_key) for row in rows]


def thumbnail_key_of(storage_key: str) -> str:
    """Where the thumbnail of the object `storage_key` is stored: beside it."""
    return f"{storage_key}.thumb.webp"


def make_thumbnail(data: bytes) -> bytes | None:
    """A WebP of the image `data`, at most MAX_SIDE pixels on its longer side (never enlarged);
    None when it is no image Pillow reads within the bounds above."""
    if len(data) > MAX_INPUT_BYTES:
        return None
    try:
        with warnings.catch_warnings():
            # Pillow only warns between MAX_IMAGE_PIXELS and twice that: refuse those too.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=_FORMATS) as image:
                if image.width * image.height > MAX_PIXELS:
                    return None
                image.draft("RGB", (MAX_SIDE, MAX_SIDE))  # JPEG: decode at a smaller scale
                image.seek(0)
                frame = image.convert("RGBA" if _has_alpha(image) else "RGB")
                frame.thumbnail((MAX_SIDE, MAX_SIDE))
                out = io.BytesIO()
                frame.save(out, "WEBP", quality=80, method=4)
                return out.getvalue()
    except (UnidentifiedImageError, Image.DecompressionBombError,
            Image.DecompressionBombWarning, OSError, ValueError, SyntaxError, EOFError):
        # What Pillow raises for truncated, corrupt or hostile images (SyntaxError: its
        # plugins' word for a malformed header).
        return None


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info


def record_thumbnail(session: Session, attachment_id: uuid.UUID, key: str) -> bool:
    """Set the attachment's thumbnail key; False when the attachment is gone (or has one)."""
    result = session.execute(
        update(Attachment).where(Attachment.id == attachment_id,
                                 Attachment.thumbnail_key.is_(None))
        .values(thumbnail_key=key))
    return bool(result.rowcount)  # type: ignore[attr-defined]
