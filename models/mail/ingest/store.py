"""SMTP ingest, the domain side: recipient routing and durably storing accepted mail.

`lookup_recipient` answers RCPT: one indexed look-up of the lower-case full address (the unique
index on `inboxes.full_address`) and, for an address no inbox has, one of its domain (the
unique index on `domains.domain_name`), so the refusal can say which of the two is unknown;
mailin caches the answers briefly and checks the expiry each time it uses one.

DATA is stored in three steps, and only after all of them does mailin answer 250: what was
acknowledged is stored, since the sender forgets a message once it has its 250.

1. `accept_message` parses the message once (`models.mail.ingest.parse`, which never raises) and
   names its objects (the raw message and each attachment); nothing is written yet.
2. `store_objects` writes the objects of any number of accepted messages durably with one
   `put_many` (one flush to disk for all of them on the filesystem), before any transaction
   opens, so an SQLite write lock is never held across file writes.
3. `commit_messages` stores the same messages in ONE transaction: it locks the rows of the
   recipients that are still live inboxes (in primary-key order) and bumps their counters,
   inserts one e-mail per live recipient with its attachment rows, adds the analytics
   counters, records one `email.received` per e-mail, and commits. On PostgreSQL the round
   trips do not grow with the batch: the locking SELECT, one COPY each for the e-mails, their
   attachments and the events (`models.db.insert_rows`), the counters at once in a pipeline
   (`models.db.pipelined`), and the COMMIT; a batch of at most `PIPELINED_EMAILS` that no tag
   needs reading for (a test suite's message, one at a time) sends the e-mails, attachments,
   events and counters as INSERTs in one pipeline instead, one round trip. A mail-ingesting
   process's hand-offs (`models.handoffs`: `ingest_recorded`, `mail_stored`) add the webhook
   deliveries of the events, written in the same transaction (one query for the teams'
   webhooks, and one INSERT when some subscribe: two round trips more), and, after the commit,
   the live push of the new e-mails.

Steps 2 and 3 batch: mailin's committer hands them whatever arrived while the previous batch
was being stored (group commit), so the flush, the statements and the commit's fsync are paid
once per batch, not once per message.

A message none of whose recipients is live any more, or whose transaction failed, keeps
nothing: its objects are deleted again (`discard_message`). `store_messages` does steps 2 and 3
for a batch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Row, bindparam, exists, select
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from burnbox.storage import ObjectStorage
from burnbox.timeutil import isoformat, utcnow
from models.db import Database, after_commit, insert_rows, pipelined
from models.domains.domains import Domain
from models.events import EMAIL_RECEIVED, NewEvent, record_events
from models.mail.caches import INBOX_REVISIONS
from models.mail.counters import Received, count_received, sender_domain
from models.mail.emails import new_summary_item
from models.mail.entities import (
    MAX_ADDRESS,
    MAX_CONTENT_TYPE,
    MAX_FILENAME,
    MAX_HOST,
    MAX_IP,
    MAX_KEY,
    MAX_SUBJECT,
    SPAM_ENGINE_PENDING,
    Attachment,
    Email,
    object_key,
)
from models.mail.inboxes import Inbox, creator_ref
from models.mail.ingest.catchall import CatchAll, catch_all_route, open_catch_all_inboxes
from models.mail.ingest.parse import ParsedAttachment, ParsedMessage, parse_message
from models.mail.ingest.tagging import arrival_names, tag_arrivals
from models.mail.tag_entities import TagRule

log = logging.getLogger(__name__)

MIB = 1024 * 1024

@dataclass(frozen=True)
class Recorded:
    """An event mail ingest recorded, with its id and when."""

    id: uuid.UUID
    event: NewEvent
    at: datetime


@dataclass(frozen=True)
class Route:
    """A recipient that is an inbox: where it goes and until when it accepts mail."""

    inbox_id: uuid.UUID
    full_address: str
    expires_at: datetime


@dataclass(frozen=True)
class Accepted:
    """A parsed message, its objects named, waiting to be stored and made e-mails."""

    parsed: ParsedMessage
    raw: bytes
    keys: tuple[str, ...]  # the raw message first, then the attachments in order
    mail_from: str
    recipients: tuple[str, ...]  # normalised addresses
    received_at: datetime
    # The SMTP session's connecting IP and HELO name, kept for the authentication checks.
    peer_ip: str = ""
    helo: str = ""
    # The envelope recipients as the client named them, kept with the e-mail when the session
    # logged in with an inbox's capture credentials (`recipients` is then that inbox alone).
    envelope_to: tuple[str, ...] | None = None
    # Whether a spam engine is configured: the e-mails are then stored waiting for its answer
    # (models.mail.checks.spam_engine), so no reader ever sees "no engine" before the worker.
    spam_engine: bool = False

    @property
    def size(self) -> int:
        """The raw message's size in bytes."""
        return len(self.raw)

    def objects(self) -> list[tuple[str, bytes]]:
        """The (key, data) objects to store: the raw message, then each attachment."""
        return list(zip(self.keys, (self.raw, *(part.content for part in
                                                self.parsed.attachments)), strict=True))


def lookup_route(session: Session, address: str) -> Route | None:
    """The inbox behind a normalised address, lapsed or not (the caller checks `expires_at`
    when it uses the answer); None when no inbox has it."""
    row = session.execute(select(Inbox.id, Inbox.full_address, Inbox.expires_at)
                          .where(Inbox.full_address == address)).first()
    return None if row is None else Route(row.id, row.full_address, row.expires_at)


# Why a recipient that is not a live inbox is refused (also the label of the refusal metric).
UNKNOWN_DOMAIN = "unknown_domain"  # no org has registered the address's domain here
UNKNOWN_INBOX = "unknown_inbox"  # the domain is served here, but no inbox has the address
EXPIRED_INBOX = "expired_inbox"  # the inbox exists and has lapsed (the cleanup removes it)


def lookup_recipient(session: Session, settings: Settings, address: str
                     ) -> Route | CatchAll | str:
    """The inbox behind a normalised address, lapsed or not (the caller checks `expires_at`);
    when it has no live one and its domain is caught, a CatchAll or why the catch-all refuses
    it (models/mail/ingest/catchall.py); else why there is none: UNKNOWN_DOMAIN when no domain of
    that name is registered here, else UNKNOWN_INBOX."""
    route = lookup_route(session, address)
    now = utcnow()
    if route is not None and route.expires_at > now:
        return route
    caught = catch_all_route(session, settings, address, now)
    if caught is not None:
        return caught
    if route is not None:
        return route
    domain = address.rpartition("@")[2]
    served = session.scalar(select(Domain.id).where(Domain.domain_name == domain))
    return UNKNOWN_INBOX if served is not None else UNKNOWN_DOMAIN


@dataclass(frozen=True)
class AttachmentPolicy:
    """Which attachments of received mail are kept: none when `enabled` is false, else those
    of at most `max_bytes` (the platform's `attachments_enabled` / `max_attachment_size_mb`)."""

    enabled: bool = True
    max_bytes: int = 25 * MIB

    @classmethod
    def of(cls, settings: Settings) -> AttachmentPolicy:
        """The policy of the (live) `defaults.*` settings."""
        d = settings.defaults
        return cls(enabled=d.attachments_enabled, max_bytes=d.max_attachment_size_mb * MIB)

    def apply(self, parsed: ParsedMessage) -> ParsedMessage:
        """The message with the attachments this policy refuses left out, their names added to
        `dropped_attachments` (as the parser does for executables). The message itself is kept:
        refusing it (552) would lose its text for an inbox that wants it, while the raw message,
        which the SMTP size limit already bounds, still carries every part intact."""
        kept: list[ParsedAttachment] = []
        left_out: list[str] = []
        for part in parsed.attachments:
            if self.enabled and len(part.content) <= self.max_bytes:
                kept.append(part)
            else:
                left_out.append(part.filename)
        if not left_out:
            return parsed
        log.info("attachments left out by the platform's limits",
                 extra={"attachments": left_out, "attachments_enabled": self.enabled,
                        "max_bytes": self.max_bytes})
        return dataclasses.replace(parsed, attachments=tuple(kept),
                                   dropped_attachments=(*parsed.dropped_attachments, *left_out))


def accept_message(raw: bytes, *, mail_from: str, recipients: Sequence[str],
                   policy: AttachmentPolicy | None = None, peer_ip: str = "",
                   helo: str = "", envelope_to: Sequence[str] | None = None,
                   spam_engine: bool = False) -> Accepted:
    """Parse the message, keep the attachments `policy` allows (by default the built-in
    limits: enabled, 25 MiB), and name its objects (`models.mail.entities.object_key`);
    nothing is written yet (`store_objects`). `peer_ip` and `helo` are the SMTP session's, kept
    with the e-mails for their authentication results (computed later, off the SMTP path).
    `envelope_to`: the recipients a client logged in with capture credentials named, kept
    with the e-mail (`recipients` is then its inbox's address). `spam_engine`: whether one is
    configured (`checks.spam_engine`), the e-mails then wait for its answer."""
    received_at = utcnow()
    parsed = (policy or AttachmentPolicy()).apply(parse_message(raw))
    message_id = uuid.uuid4()
    keys = tuple(object_key(message_id, received_at, n)
                 for n in range(len(parsed.attachments) + 1))
    return Accepted(parsed=parsed, raw=raw, keys=keys, mail_from=mail_from,
                    recipients=tuple(sorted(set(recipients))), received_at=received_at,
                    peer_ip=peer_ip[:MAX_IP], helo=helo[:MAX_HOST],
                    envelope_to=None if envelope_to is None else tuple(envelope_to),
                    spam_engine=spam_engine)


def store_objects(storage: ObjectStorage, messages: Sequence[Accepted]) -> None:
    """Write the objects of every message durably, all at once; raise with none of them kept
    when storage fails."""
    storage.put_many([item for message in messages for item in message.objects()])


def discard_message(storage: ObjectStorage, message: Accepted) -> None:
    """Delete the objects of an accepted message that was not stored."""
    for key in message.keys:
        try:
            storage.delete(key)
        except Exception:
            # An orphan object is harmless; the message's fate is already decided.
            log.exception("could not delete an object of a message that was not stored",
                          extra={"key": key})


def store_messages(db: Database, storage: ObjectStorage, messages: Sequence[Accepted]
                   ) -> list[list[uuid.UUID]]:
    """Steps 2 and 3 for a batch: write the objects, then commit the rows; return each
    message's new e-mail ids, in order. A message with no live recipient left keeps nothing
    (its objects are deleted). Raise whatever made the batch fail, with nothing kept. The
    process's ingest hand-offs run as in `commit_messages`."""
    store_objects(storage, messages)
    try:
        results = commit_messages(db, messages)
    except BaseException:
        for message in messages:
            discard_message(storage, message)
        raise
    for message, email_ids in zip(messages, results, strict=True):
        if not email_ids:
            discard_message(storage, message)
    return results


def commit_messages(db: Database, messages: Sequence[Accepted]) -> list[list[uuid.UUID]]:
    """Store the accepted messages in one transaction and commit; return each message's new
    e-mail ids, in order (empty for a message none of whose recipients is live: the caller
    discards its objects). Raise when the transaction fails: then nothing was stored. Before
    the commit, the process's `ingest_recorded` hand-off gets the events recorded; once it has
    committed, its `mail_stored` hand-off gets the list item and the team id of every e-mail
    stored (models.handoffs)."""
    # The exception to "actions never commit": ingest must know whether the rows committed
    # (the objects written before them are deleted when not, and the SMTP 250 waits for it),
    # so it takes the Database and opens the unit of work of mailin's committer itself.
    with db.transaction() as session:
        live: dict[str, Any] = _live_inboxes(session, messages, utcnow())
        missing = {address for message in messages
                   for address in message.recipients} - live.keys()
        if missing:  # recipients at a catch-all domain, and those deleted or lapsed since RCPT
            live.update(open_catch_all_inboxes(session, db.settings, missing))
        stored, received, recorded = _insert(session, messages, live)
        handoffs = db.handoffs
        if handoffs.ingest_recorded is not None and recorded:
            handoffs.ingest_recorded(session, recorded)
        if handoffs.mail_stored is not None and received:
            after_commit(session, partial(handoffs.mail_stored, received))
        return stored


# The most e-mails of a batch whose writes go in one pipeline, as INSERTs (`_insert`).
PIPELINED_EMAILS = 4
_inboxes = Inbox.__table__.c
_tag_rules = TagRule.__table__.c
# Built once: the hot path only binds values (Core statements on the tables, no ORM unit of
# work). The SELECT locks the recipients that are still live, in primary-key order, so two
# transactions never wait on each other's rows in opposite orders.
_LIVE_INBOXES = (
    select(_inboxes.id, _inboxes.full_address, _inboxes.org_id, _inboxes.team_id,
           _inboxes.domain_id, _inboxes.created_by,
           # In the same round trip: whether new mail of the team runs its tag rules. Of the
           # table, not the entity: an ORM attribute anywhere makes the whole statement ORM's,
           # and each execution then built ORM row processors (5 % of a commit's calls).
           exists(select(_tag_rules.id).where(_tag_rules.team_id == _inboxes.team_id))
           .label("has_tag_rules"))
    .where(_inboxes.full_address.in_(bindparam("addresses", expanding=True)),
           _inboxes.expires_at > bindparam("now"))
    .order_by(_inboxes.id).with_for_update())
_COUNT_EMAILS = (
    Inbox.__table__.update().where(_inboxes.id == bindparam("inbox"))
    .values(email_count=_inboxes.email_count + bindparam("emails"),
            unread_count=_inboxes.unread_count + bindparam("emails")))


def _live_inboxes(session: Session, messages: Sequence[Accepted], now: datetime
                  ) -> dict[str, Row[Any]]:
    """The recipients of the messages that are still live inboxes, by address, their rows
    locked until commit."""
    addresses = sorted({address for message in messages for address in message.recipients})
    return {row.full_address: row for row in
            session.execute(_LIVE_INBOXES, {"addresses": addresses, "now": now})}


def _insert(session: Session, messages: Sequence[Accepted], live: dict[str, Any]
            ) -> tuple[list[list[uuid.UUID]], list[tuple[dict[str, Any], uuid.UUID]],
                       list[Recorded]]:
    """Write the e-mails of the messages for their `live` recipients, with everything that
    goes with them; read nothing back (the statements may be pipelined). Return each message's
    new e-mail ids, each new e-mail's list item with its team id, and the events recorded."""
    emails: list[dict[str, Any]] = []
    attachments: list[dict[str, Any]] = []
    received: list[Received] = []
    events: list[NewEvent] = []
    stored: list[list[uuid.UUID]] = []
    summaries: list[tuple[dict[str, Any], uuid.UUID]] = []
    teams: dict[uuid.UUID, uuid.UUID] = {}
    ruled: set[uuid.UUID] = set()
    for message in messages:
        shared = _email_values(message)
        ids = []
        for address in message.recipients:
            inbox = live.get(address)
            if inbox is None:
                continue  # deleted or lapsed since RCPT
            email_id = uuid.uuid4()
            ids.append(email_id)
            email = {**shared, "id": email_id, "inbox_id": inbox.id,
                     "to_address": inbox.full_address}
            emails.append(email)
            summaries.append((new_summary_item(email), inbox.team_id))
            attachments += [{
                "id": uuid.uuid4(), "email_id": email_id, "position": n,
                "filename": part.filename[:MAX_FILENAME],
                "content_type": part.content_type[:MAX_CONTENT_TYPE],
                "size_bytes": part.size, "storage_key": key,
                "content_id": part.content_id, "inline": part.inline,
                "created_at": message.received_at,
            } for n, (part, key) in enumerate(zip(message.parsed.attachments, message.keys[1:],
                                                  strict=True), 1)]
            received.append(Received(org_id=inbox.org_id, team_id=inbox.team_id,
                                     domain_id=inbox.domain_id,
                                     sender_domain=sender_domain(shared["from_address"]),
                                     received_at=message.received_at, size_bytes=message.size))
            events.append(NewEvent(EMAIL_RECEIVED, {
                "email_id": str(email_id), "inbox_id": str(inbox.id),
                "address": inbox.full_address, "from": shared["from_address"],
                "to": inbox.full_address, "subject": shared["subject"],
                "size_bytes": message.size, "has_attachments": shared["has_attachments"],
                "received_at": isoformat(message.received_at),
                "created_by": creator_ref(inbox.created_by), "tags": [],
            }, org_id=inbox.org_id, team_id=inbox.team_id))
            teams[email_id] = inbox.team_id
            # An inbox a catch-all has just made carries no flag: its team's rules are read.
            if getattr(inbox, "has_tag_rules", True):
                ruled.add(inbox.team_id)
        stored.append(ids)
    if not emails:
        return stored, summaries, []
    per_inbox = Counter(email["inbox_id"] for email in emails)
    # Each statement names the inboxes it writes: only their cached reads are read again.
    naming = INBOX_REVISIONS.naming(per_inbox)
    # Tagging reads (the team's tags, its rules): without it nothing here reads, and a batch
    # of a few e-mails (a test suite's, one at a time) sends all its writes in one pipeline,
    # one round trip where the e-mails' and the events' COPYs and the counts took five. A
    # bigger batch goes by COPY, cheaper per row.
    untagged = not ruled and not any(arrival_names(email) for email in emails)
    together = untagged and len(emails) <= PIPELINED_EMAILS
    with pipelined(session) if together else contextlib.nullcontext():
        insert_rows(session, Email.__table__, emails, naming)
        insert_rows(session, Attachment.__table__, attachments, naming)
        if not untagged:
            # Tagged before the events are recorded: their payloads carry the tags.
            tagged = tag_arrivals(session, emails, teams, ruled, naming)
            for email, (summary, _), event in zip(emails, summaries, events, strict=True):
                names = tagged.get(email["id"])
                if names:
                    summary["tags"] = event.data["tags"] = names
        recorded_at = utcnow()
        event_ids = record_events(session, events, at=recorded_at)
        with pipelined(session):
            session.execute(_COUNT_EMAILS, [{"inbox": inbox_id, "emails": count}
                                            for inbox_id, count in sorted(per_inbox.items())],
                            execution_options=naming)
            count_received(session, received)
    return stored, summaries, [Recorded(event_id, event, recorded_at)
                               for event_id, event in zip(event_ids, events, strict=True)]


def _email_values(message: Accepted) -> dict[str, Any]:
    """The columns every copy of the message shares. Mail the parser could not read has its
    placeholder subject, and its raw bytes are stored all the same."""
    parsed = message.parsed
    return {
        "message_id": parsed.message_id[:MAX_KEY],
        "from_address": (parsed.from_address or message.mail_from)[:MAX_ADDRESS],
        "cc": list(parsed.cc_addresses),
        "subject": parsed.subject[:MAX_SUBJECT],
        "snippet": parsed.snippet,
        "body_text": parsed.body_text,
        "body_html": parsed.body_html,
        "headers": [list(pair) for pair in parsed.headers],
        "spam_score": parsed.spam_score,
        "spam_signals": list(parsed.spam_signals),
        "links": [{"href": link.href, "text": link.text} for link in parsed.links],
        "codes": list(parsed.codes),
        "tags": [],
        "size_bytes": message.size,
        "has_attachments": bool(parsed.attachments),
        "is_read": False,
        "raw_key": message.keys[0],
        "received_at": message.received_at,
        "smtp_peer_ip": message.peer_ip,
        "smtp_helo": message.helo,
        "envelope_from": message.mail_from[:MAX_ADDRESS],
        "envelope_to": None if message.envelope_to is None else list(message.envelope_to),
        "spam_engine": SPAM_ENGINE_PENDING if message.spam_engine else None,
    }
