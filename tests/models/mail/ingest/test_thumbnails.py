"""Thumbnails of image attachments: a WebP within MAX_SIDE of any image Pillow reads, never
enlarged; nothing for what is no image, a truncated one, or one that declares more pixels
than the bound (a decompression bomb), before it is decoded."""

import io
import struct
import zlib

import pytest
from PIL import Image

from models.mail.ingest.thumbnails import MAX_PIXELS, MAX_SIDE, make_thumbnail, thumbnail_key_of


def _image(format_: str, size=(800, 400), mode="RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, (200, 30, 30, 128) if mode == "RGBA" else (200, 30, 30)).save(
        out, format_)
    return out.getvalue()


def _read(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


@pytest.mark.parametrize("format_", ["PNG", "JPEG", "GIF", "WEBP", "BMP"])
def test_an_image_becomes_a_webp_within_the_bound(format_):
    thumbnail = make_thumbnail(_image(format_))
    image = _read(thumbnail)
    assert image.format == "WEBP"
    assert image.size == (MAX_SIDE, MAX_SIDE // 2)  # the aspect ratio kept


def test_transparency_is_kept_and_small_images_are_not_enlarged():
    image = _read(make_thumbnail(_image("PNG", (40, 20), "RGBA")))
    assert image.size == (40, 20) and image.mode == "RGBA"


def _png_declaring(width: int, height: int) -> bytes:
    """A PNG header declaring width x height, with a tiny (wrong) body: never decodable."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("data", [
    b"", b"not an image at all", _image("PNG")[:100], _image("JPEG")[:200],
    _png_declaring(MAX_PIXELS // 1000 + 1, 1000), _png_declaring(100_000, 100_000),
    b"%PDF-1.4\n" * 10,
], ids=["empty", "text", "truncated png", "truncated jpeg", "over the pixel bound",
        "a bomb", "a pdf"])
def test_what_is_no_readable_image_gets_none(data):
    assert make_thumbnail(data) is None


def test_the_thumbnail_is_stored_beside_its_attachment():
    assert thumbnail_key_of("mail/2026/12/02/ab/x.1") == "mail/2026/12/02/ab/x.1.thumb.webp"
