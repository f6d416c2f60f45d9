"""A stored e-mail as MailHog's message (compat.mailhog.messages): read from real object
storage, and the process's kept JSON of shaped messages within its bounds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
import pytest

from burnbox.storage import FilesystemStorage
from compat.mailhog.messages import ShapedMessages, stored_message
from models.errors import NotFound


@dataclass(frozen=True)
class Row:
    """A row as a list selects it (MESSAGE_COLUMNS)."""

    id: uuid.UUID
    raw_key: str
    smtp_helo: str = "app.example"
    envelope_from: str = "app@shop.example"
    envelope_to: list[str] | None = None
    to_address: str = "qa@burnbox.test"
    received_at: datetime = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def storage(tmp_path) -> FilesystemStorage:
    return FilesystemStorage(tmp_path / "objects")


def stored(storage: FilesystemStorage, body: bytes = b"hello") -> Row:
    row = Row(uuid.uuid4(), f"raw/{uuid.uuid4()}.eml")
    storage.put(row.raw_key, b"Subject: Hi\r\n\r\n" + body)
    return row


def test_a_kept_message_is_the_json_of_the_shaped_one_and_is_not_read_again(storage):
    cache = ShapedMessages()
    row = stored(storage)
    first = cache.json_of(row, storage, "mx.test")
    assert orjson.loads(first) == orjson.loads(orjson.dumps(stored_message(row, storage,
                                                                           "mx.test")))
    storage.delete(row.raw_key)
    assert cache.json_of(row, storage, "mx.test") == first


def test_the_capture_credentials_recipients_are_the_envelope_of_their_mail(storage):
    row = Row(uuid.uuid4(), "raw/x.eml", envelope_to=["a@x.example", "b@y.example"])
    storage.put(row.raw_key, b"Subject: Hi\r\n\r\nbody")
    shape = stored_message(row, storage, "mx.test")
    assert shape["Raw"]["To"] == ["a@x.example", "b@y.example"]
    assert [path["Domain"] for path in shape["To"]] == ["x.example", "y.example"]


def test_the_budget_drops_the_least_recently_used_and_large_ones_are_never_kept(storage):
    rows = [stored(storage) for _ in range(3)]
    size = len(ShapedMessages().json_of(rows[0], storage, "mx.test"))
    cache = ShapedMessages(budget=2 * size, largest=size)
    for row in rows[:2]:
        cache.json_of(row, storage, "mx.test")
    cache.json_of(rows[0], storage, "mx.test")  # used again: rows[1] is now the oldest
    cache.json_of(rows[2], storage, "mx.test")
    storage.delete(rows[1].raw_key)
    storage.delete(rows[0].raw_key)
    assert cache.json_of(rows[0], storage, "mx.test")  # still kept
    with pytest.raises(NotFound):
        cache.json_of(rows[1], storage, "mx.test")  # dropped, and its object is gone
    large = stored(storage, b"x" * (2 * size))
    cache.json_of(large, storage, "mx.test")
    storage.delete(large.raw_key)
    with pytest.raises(NotFound):
        cache.json_of(large, storage, "mx.test")
