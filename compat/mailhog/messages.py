"""A stored e-mail as MailHog's message: its raw message read from object storage, its SMTP
envelope from its row (`compat.mailhog.shapes` builds the JSON). Taking the storage and the
hostname as arguments, it serves the request views and the streams, which outlive their
request's context alike."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import orjson

from burnbox.storage import ObjectStorage
from compat.mailhog.shapes import Envelope, message_shape
from models.caching import kept_in
from models.mail import emails
from models.mail.entities import Email

# What a message's shape needs of its row. A list selects these alone: the bodies, headers,
# links and attachments the native list item loads are all in the raw message here (a list of
# 20 read in a third less time without them).
MESSAGE_COLUMNS = (Email.id, Email.raw_key, Email.smtp_helo, Email.envelope_from,
                   Email.envelope_to, Email.to_address, Email.received_at)


class MessageRow(Protocol):
    """An `Email`, or a row of MESSAGE_COLUMNS."""

    id: uuid.UUID
    raw_key: str
    smtp_helo: str
    envelope_from: str
    envelope_to: Sequence[str] | None
    to_address: str
    received_at: datetime


def raw_of(email: MessageRow, storage: ObjectStorage) -> bytes:
    """The e-mail's message exactly as received (NotFound when its object is gone)."""
    with emails.open_object(storage, email.raw_key) as stored:
        return stored.read()


def envelope_of(email: MessageRow) -> Envelope:
    """The SMTP session of a stored message: its envelope recipients when its inbox's capture
    credentials delivered it, else the inbox address it was delivered to."""
    return Envelope(helo=email.smtp_helo, sender=email.envelope_from,
                    recipients=email.envelope_to or [email.to_address],
                    received_at=email.received_at)


def stored_message(email: MessageRow, storage: ObjectStorage, hostname: str) -> dict[str, Any]:
    """A stored e-mail as MailHog's API shows a message."""
    return message_shape(email.id, envelope_of(email), raw_of(email, storage), hostname)


# The shaped messages a process keeps: a client polls the same list until its mail comes, and
# each poll read and parsed every message again. Large messages are shaped each time.
SHAPED_BUDGET = 32 * 1024 * 1024
SHAPED_LARGEST = 256 * 1024


class ShapedMessages:
    """The JSON of the messages this process shaped lately, by e-mail id, within
    `budget` bytes (the least recently used go first; a JSON larger than `largest` is not
    kept). A stored message never changes, so an entry is never stale, and none is checked
    against a revision as `models.caching` does; a deleted message is never asked for again,
    since every list and look-up comes from the database first."""

    KEY = "compat.mailhog.shaped"

    def __init__(self, budget: int = SHAPED_BUDGET, largest: int = SHAPED_LARGEST) -> None:
        self.budget, self.largest = budget, largest
        self._lock = threading.Lock()
        self._entries: OrderedDict[uuid.UUID, bytes] = OrderedDict()
        self._weight = 0

    @classmethod
    def of(cls, caches: dict[str, Any]) -> ShapedMessages:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, cls)

    def json_of(self, email: MessageRow, storage: ObjectStorage, hostname: str) -> bytes:
        """`stored_message(email, ...)` as JSON: kept, or shaped now (and kept)."""
        with self._lock:
            found = self._entries.get(email.id)
            if found is not None:
                self._entries.move_to_end(email.id)
                return found
        shaped = orjson.dumps(stored_message(email, storage, hostname))
        if len(shaped) <= self.largest:
            with self._lock:
                if email.id not in self._entries:
                    self._entries[email.id] = shaped
                    self._weight += len(shaped)
                while self._weight > self.budget:
                    _, dropped = self._entries.popitem(last=False)
                    self._weight -= len(dropped)
        return shaped
