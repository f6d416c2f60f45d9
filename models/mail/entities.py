"""Stored mail: the e-mail and attachment rows, and the storage objects behind them.

Every message accepted over SMTP is written once to object storage (the raw message and each
attachment, under `mail/<yyyy>/<mm>/<dd>/`, see `object_key`) and then gets one e-mail row per
recipient inbox. Rows of one message share its objects, so an object may only go when no row
points at it any more.

Objects are never deleted inside the transaction that removes their rows: a rollback would leave
rows pointing at nothing. Instead the removing action records an `storage.objects_discarded`
event (outbox) in its transaction; after commit the worker deletes the objects that no row
references any more (`unreferenced_keys`). A crash in between loses nothing: the event is swept
and dispatched again, and deleting twice is harmless.

Rows also go by database cascades (a domain, team or org deleted takes its inboxes, their
e-mails and attachments). Those deletes hand over the keys first with `discard_objects_of`,
which takes the inboxes as a query, not a list: the database picks the keys and, past one read
of `KEYS_PER_EVENT`, they stream back `KEYS_PER_EVENT` at a time, so an org with millions of
e-mails never has more than one event's worth of keys in memory (see
`models.mail.inboxes.discard_before_cascade`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    Float,
    ForeignKey,
    Index,
    Select,
    String,
    Text,
    bindparam,
    false,
    select,
    union,
    union_all,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, Session, mapped_column, relationship

from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey
from models.events import record_event

if TYPE_CHECKING:
    from models.mail.inboxes import Inbox

OBJECTS_DISCARDED = "storage.objects_discarded"
# Keys per discard event: bounds the event row (a key is about 70 characters).
KEYS_PER_EVENT = 1000
MAX_ADDRESS = 320
# Characters that no SMTP address holds (RFC 5321 allows none of them, quoted or not): C0
# controls, DEL, C1 controls, and surrogates (what undecodable bytes become).
_NOT_IN_AN_ADDRESS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
MAX_SUBJECT = 998  # RFC 5322 line limit: a longer subject is truncated, never refused
MAX_SNIPPET = 200
MAX_FILENAME = 255
MAX_CONTENT_TYPE = 255
MAX_KEY = 255
MAX_IP = 45  # the longest textual IPv6 address (an IPv4-mapped one)
MAX_HOST = 255
MAX_VERDICT = 16
# The verdicts of the authentication checks (models.mail.checks.authentication), as the
# `auth_*` columns hold them and the search syntax filters on them.
PASS, FAIL, SOFTFAIL, NEUTRAL, NONE, TEMPERROR, PERMERROR = (
    "pass", "fail", "softfail", "neutral", "none", "temperror", "permerror")
RESULTS = (PASS, FAIL, SOFTFAIL, NEUTRAL, NONE, TEMPERROR, PERMERROR)
# `auth_results.status`: not computed yet, computed, or never to be (mail stored before the
# checks existed, which kept no SMTP session facts).
PENDING, DONE, UNAVAILABLE = "pending", "done", "unavailable"
# The `spam_engine` column of an e-mail stored while a spam engine is configured: waiting for
# the worker's verdict (models.mail.checks.spam_engine writes the rest).
SPAM_ENGINE_PENDING: dict[str, Any] = {"status": PENDING}
CODES_TYPE = JSON().with_variant(JSONB(), "postgresql")
# The parser's bound (models.mail.ingest.parse.MAX_ID_CHARS): never truncated here.
MAX_CONTENT_ID = 998



def may_be_address(text: str) -> bool:
    """False when `text` cannot be an address: longer than MAX_ADDRESS, or holding a character
    no address holds. What passes is safe to compare with an address column whatever the
    backend: PostgreSQL refuses a NUL in text (a 500 or a 451 where the answer is "no such
    address"), and a surrogate cannot be encoded at all."""
    return len(text) <= MAX_ADDRESS and _NOT_IN_AN_ADDRESS.search(text) is None

class Email(UUIDKey, Base):
    """One message as delivered to one inbox."""

    __tablename__ = "emails"

    inbox_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("inboxes.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(String(MAX_KEY), default="")
    from_address: Mapped[str] = mapped_column(String(MAX_ADDRESS), default="")
    # The inbox address the message was delivered to (the envelope recipient): To and Cc
    # headers may name anyone, and Bcc recipients appear in neither.
    to_address: Mapped[str] = mapped_column(String(MAX_ADDRESS))
    cc: Mapped[list[str]] = mapped_column(default=list)
    subject: Mapped[str] = mapped_column(Text, default="")
    snippet: Mapped[str] = mapped_column(String(MAX_SNIPPET), default="")
    body_text: Mapped[str] = mapped_column(Text, default="")
    body_html: Mapped[str] = mapped_column(Text, default="")
    headers: Mapped[list[Any]] = mapped_column(JSON, default=list)
    spam_score: Mapped[float] = mapped_column(Float, default=0.0)
    # The spam signals that made the score (models.mail.checks.spam.SPAM_WEIGHTS names), found
    # with it at ingest; None for mail stored before they were kept.
    spam_signals: Mapped[list[str] | None] = mapped_column(JSON)
    # The last link check (models.mail.checks.link_check), None until one ran. Deferred: only its
    # own endpoint reads it, and list queries load Email rows.
    link_check: Mapped[dict[str, Any] | None] = mapped_column(JSON, deferred=True)
    # Found at ingest (models.mail.ingest.extract): [{"href", "text"}...] and one-time codes. Codes
    # are JSONB on PostgreSQL so `code:` searches are a containment test (`@>`).
    links: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    codes: Mapped[list[str]] = mapped_column(CODES_TYPE, default=list, server_default="[]")
    # The names of its tags in key order, a copy of its links to them
    # (models.mail.tag_entities), written by the statements that change those.
    tags: Mapped[list[str]] = mapped_column(JSON, default=list, server_default="[]")
    size_bytes: Mapped[int]
    has_attachments: Mapped[bool] = mapped_column(default=False)
    is_read: Mapped[bool] = mapped_column(default=False)
    # The raw message in object storage, shared by the rows of one message.
    raw_key: Mapped[str] = mapped_column(String(MAX_KEY), index=True)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The SMTP session's facts that authentication needs (models.mail.checks.authentication): the
    # connecting IP, the HELO name and the envelope MAIL FROM ("" when unknown).
    smtp_peer_ip: Mapped[str] = mapped_column(String(MAX_IP), default="", server_default="")
    smtp_helo: Mapped[str] = mapped_column(String(MAX_HOST), default="", server_default="")
    envelope_from: Mapped[str] = mapped_column(String(MAX_ADDRESS), default="",
                                               server_default="")
    # The envelope recipients (RCPT TO) of a message an SMTP client sent with the inbox's
    # capture credentials (models.mail.smtp_credentials), stored once in that inbox whoever it
    # named; None for mail delivered to the inbox's own address.
    envelope_to: Mapped[list[str] | None] = mapped_column(JSON)
    # The authentication results once computed (None: pending), and the verdicts the search
    # syntax filters on (`spf:`, `dkim:`, `dmarc:`), None while pending.
    auth_results: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    auth_spf: Mapped[str | None] = mapped_column(String(MAX_VERDICT))
    auth_dkim: Mapped[str | None] = mapped_column(String(MAX_VERDICT))
    auth_dmarc: Mapped[str | None] = mapped_column(String(MAX_VERDICT))
    # What the configured spam engine said (models.mail.checks.spam_engine): None when no
    # engine was configured when it arrived, {"status": "pending"} until it answers.
    spam_engine: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    attachments: Mapped[list[Attachment]] = relationship(
        order_by="Attachment.position", lazy="selectin", cascade="all, delete-orphan",
        passive_deletes=True)
    inbox: Mapped[Inbox] = relationship()

    __table_args__ = (Index("ix_emails_inbox_id_received_at", "inbox_id", "received_at"),)

    @property
    def expires_at(self) -> datetime:
        """When the e-mail goes: with its inbox."""
        return self.inbox.expires_at


class Attachment(UUIDKey, Base):
    """One attachment of an e-mail; its bytes live in object storage under `storage_key`."""

    __tablename__ = "attachments"

    email_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("emails.id", ondelete="CASCADE"),
                                                index=True)
    position: Mapped[int] = mapped_column(default=0)
    filename: Mapped[str] = mapped_column(String(MAX_FILENAME), default="")
    content_type: Mapped[str] = mapped_column(String(MAX_CONTENT_TYPE),
                                              default="application/octet-stream")
    size_bytes: Mapped[int]
    storage_key: Mapped[str] = mapped_column(String(MAX_KEY), index=True)
    # The part's Content-ID without angle brackets: the HTML body refers to it as `cid:<id>`.
    content_id: Mapped[str | None] = mapped_column(String(MAX_CONTENT_ID))
    # True for a part the HTML body can show in place (a Content-ID, and not marked
    # `Content-Disposition: attachment`), as the parser decides.
    inline: Mapped[bool] = mapped_column(default=False, server_default=false())
    # Checksums of the bytes (hex), computed by the worker after the e-mail is stored
    # (models.mail.checks.checksums); None until then.
    md5: Mapped[str | None] = mapped_column(String(32))
    sha1: Mapped[str | None] = mapped_column(String(40))
    sha256: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # An image's thumbnail in object storage (models.mail.ingest.thumbnails), made by the
    # worker after the message is stored; None before, and for parts that are no image it
    # can read. Indexed, as every object key is: deleting mail asks which keys no row still
    # references (`unreferenced_keys`), and without it each deletion read the whole table.
    thumbnail_key: Mapped[str | None] = mapped_column(String(MAX_KEY), index=True)


def object_key(message_id: uuid.UUID, received_at: datetime, position: int) -> str:
    """The storage key of one object of an accepted message: its raw message (position 0,
    `mail/<yyyy>/<mm>/<dd>/<xx>/<message uuid>.eml`, where xx is the uuid's first two hex
    digits) or its n-th attachment (`<message uuid>.<n>`, beside it). Dated folders let
    operators find and age objects; 256 per day keep a busy day's folder listable (a million
    messages make ~4 000 entries each, not a million in one); and no folder per message, so
    writing a message seldom creates a folder at all."""
    name = f"{message_id}.eml" if position == 0 else f"{message_id}.{position}"
    # The date's fields by hand: strftime (`{received_at:%Y/%m/%d}`) cost twice as much, on
    # every message mailin accepts.
    return (f"mail/{received_at.year:04}/{received_at.month:02}/{received_at.day:02}/"
            f"{message_id.hex[:2]}/{name}")


def object_keys(session: Session, email_ids: Sequence[uuid.UUID]) -> list[str]:
    """The storage keys (raw messages and attachments) of the e-mails `email_ids`, without
    repeats. (The e-mails of whole inboxes: `discard_objects_of`.)"""
    if not email_ids:
        return []
    raw = select(Email.raw_key.label("key")).where(Email.id.in_(email_ids))
    parts = select(Attachment.storage_key.label("key")).where(Attachment.email_id.in_(email_ids))
    thumbnails = (select(Attachment.thumbnail_key.label("key"))
                  .where(Attachment.email_id.in_(email_ids), Attachment.thumbnail_key.is_not(None)))
    return list(dict.fromkeys(session.scalars(union_all(raw, parts, thumbnails))))


def discard_after_commit(session: Session, keys: Sequence[str]) -> None:
    """Ask the worker to delete `keys` once this transaction has committed (see the module
    docstring); keys still referenced by then are kept."""
    for start in range(0, len(keys), KEYS_PER_EVENT):
        record_event(session, OBJECTS_DISCARDED, {"keys": list(keys[start:start + KEYS_PER_EVENT])})


def discard_objects_of(session: Session, inbox_ids: Select[tuple[uuid.UUID]]) -> int:
    """Record discard events (as `discard_after_commit`) for every object of the e-mails of the
    inboxes `inbox_ids` selects, before a delete removes those rows; return how many keys.

    The database removes repeats (UNION: the copies of one message share its objects). Up to
    `KEYS_PER_EVENT` keys come back in one plain read and become one event. More are read again
    in batches of `KEYS_PER_EVENT` (a server-side cursor on PostgreSQL); each batch becomes one
    event, flushed before the next batch is read, so memory holds one batch whatever the number
    of e-mails."""
    raw = select(Email.raw_key).where(Email.inbox_id.in_(inbox_ids))
    parts = (select(Attachment.storage_key).join(Email, Email.id == Attachment.email_id)
             .where(Email.inbox_id.in_(inbox_ids)))
    thumbnails = (select(Attachment.thumbnail_key).join(Email, Email.id == Attachment.email_id)
                  .where(Email.inbox_id.in_(inbox_ids), Attachment.thumbnail_key.is_not(None)))
    keys = union(raw, parts, thumbnails)
    # A test suite deletes an inbox of a message or two: a server-side cursor would cost it a
    # DECLARE, a FETCH for each batch, an empty FETCH and a CLOSE, four round trips where one
    # plain read does. One key past a batch says the inbox is large; only then is it streamed,
    # from the start, by the read that is the authority.
    few = session.scalars(keys.limit(KEYS_PER_EVENT + 1)).all()
    if len(few) <= KEYS_PER_EVENT:
        discard_after_commit(session, few)
        return len(few)
    result = session.execute(keys, execution_options={"yield_per": KEYS_PER_EVENT})
    total = 0
    for batch in result.scalars().partitions():
        discard_after_commit(session, batch)
        session.flush()  # the event row is written; the session keeps no strong reference
        total += len(batch)
    return total


_KEYS = bindparam("keys", expanding=True)
# The keys of `_KEYS` some row still references, in one round trip (each column by its index),
# built once: three statements built per deleted inbox were a tenth of the worker's CPU under
# a test suite's loop, which deletes an inbox per test.
_KEYS_IN_USE = union_all(select(Email.raw_key).where(Email.raw_key.in_(_KEYS)),
                         select(Attachment.storage_key).where(Attachment.storage_key.in_(_KEYS)),
                         select(Attachment.thumbnail_key)
                         .where(Attachment.thumbnail_key.in_(_KEYS)))


def unreferenced_keys(session: Session, keys: Iterable[str]) -> list[str]:
    """The keys among `keys` that no e-mail or attachment row references."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return []
    used = set(session.scalars(_KEYS_IN_USE, {"keys": wanted}))
    return [key for key in wanted if key not in used]
