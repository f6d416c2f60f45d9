"""Mailpit's attachment thumbnails (`GET .../part/<PartID>/thumb`): a 180x120 JPEG, as its
clients expect (mailpit-api documents the type as always `image/jpeg`).

Made on request from Burnbox's own thumbnail of the part (a WebP of at most 240 pixels a
side, models.mail.ingest.thumbnails), never from the attachment itself: the image was decoded
once, with its limits, by the worker, and this step only crops or pads a small picture. An
image at least 180x120 is scaled to cover that box and cropped to its centre; a smaller one
is centred on white, unscaled. A part with no thumbnail (not an image, or not made yet) gets
a blank white image, as Mailpit answers for a part that is no image.
"""

from __future__ import annotations

import io
from functools import cache

from PIL import Image, ImageOps

SIZE = (180, 120)
MIME_TYPE = "image/jpeg"


def mailpit_thumbnail(thumbnail: bytes | None) -> bytes:
    """The JPEG Mailpit's thumb route answers, from the part's stored thumbnail (None: blank)."""
    if thumbnail is None:
        return _blank()
    with Image.open(io.BytesIO(thumbnail)) as image:
        picture = image.convert("RGB")
    if picture.width >= SIZE[0] and picture.height >= SIZE[1]:
        return _jpeg(ImageOps.fit(picture, SIZE))
    canvas = Image.new("RGB", SIZE, "white")
    canvas.paste(picture, ((SIZE[0] - picture.width) // 2, (SIZE[1] - picture.height) // 2))
    return _jpeg(canvas)


@cache
def _blank() -> bytes:
    return _jpeg(Image.new("RGB", SIZE, "white"))


def _jpeg(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()
