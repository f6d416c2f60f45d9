"""Append-only counters: how much mail arrived per org, team, domain, sender domain, day and hour
(UTC), and how many inboxes were created per org, team, domain, day and hour (UTC).

Ingest upserts them in the same transaction as the e-mails, so a committed e-mail is always
counted once. Nothing ever decrements or deletes them (the org's deletion aside): analytics read
these rows, never the live e-mail rows, so they survive the cleanup of expired inboxes (figures
counted from live rows would drop to zero as inboxes expire). Teams and domains are referenced
without foreign keys for the same reason.

Hot rows: every message for one team from one sender domain in one hour would update the same
row, and so would every inbox a team creates on one domain in one hour; PostgreSQL holds a row
lock until commit (which waits for the WAL fsync), so concurrent ingest, or a test suite's
parallel creations, would queue behind it. Each key is therefore spread over `SHARDS` rows:
every thread writes its own shard, and readers sum the shards.
"""

from __future__ import annotations

import functools
import itertools
import secrets
import threading
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, SmallInteger, String, bindparam
from sqlalchemy.orm import Mapped, Session, mapped_column

from models.db import Base, conflict_insert

SHARDS = 16
MAX_SENDER_DOMAIN = 253


class MailCounter(Base):
    """Messages and bytes received for one key in one hour, in one shard."""

    __tablename__ = "mail_counters"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              primary_key=True)
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    domain_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    # The domain of the From address ("" when there is none).
    sender_domain: Mapped[str] = mapped_column(String(MAX_SENDER_DOMAIN), primary_key=True)
    day: Mapped[date] = mapped_column(primary_key=True)
    hour: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    emails: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)

    __table_args__ = (Index("ix_mail_counters_team_id_day", "team_id", "day"),
                      Index("ix_mail_counters_org_id_day", "org_id", "day"))


class InboxCounter(Base):
    """Inboxes created for one key in one hour, in one shard. Creations on one domain run side by
    side unless a per-domain cap or an alias needs the domain's lock (`create_inbox`), so one
    row per key would be the queue they wait in."""

    __tablename__ = "inbox_counters"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              primary_key=True)
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    domain_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    day: Mapped[date] = mapped_column(primary_key=True)
    hour: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    shard: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    inboxes: Mapped[int] = mapped_column(BigInteger, default=0)

    __table_args__ = (Index("ix_inbox_counters_team_id_day", "team_id", "day"),
                      Index("ix_inbox_counters_org_id_day", "org_id", "day"))


@dataclass(frozen=True)
class Received:
    """One delivered e-mail, as the counters see it."""

    org_id: uuid.UUID
    team_id: uuid.UUID
    domain_id: uuid.UUID
    sender_domain: str
    received_at: datetime
    size_bytes: int


_thread = threading.local()
_shards = itertools.count(secrets.randbelow(SHARDS))


def _shard() -> int:
    """This thread's shard: threads of one process never share one, processes start at random
    offsets."""
    shard = getattr(_thread, "shard", None)
    if shard is None:
        shard = _thread.shard = next(_shards) % SHARDS
    return shard


def sender_domain(address: str) -> str:
    """The lower-case domain of an address ("" when it has none)."""
    _, at, domain = address.rpartition("@")
    return domain.strip().strip(">").lower()[:MAX_SENDER_DOMAIN] if at else ""


_KEY = ("org_id", "team_id", "domain_id", "sender_domain", "day", "hour", "shard")


_INBOX_KEY = ("org_id", "team_id", "domain_id", "day", "hour", "shard")


@functools.cache
def _upsert(dialect: str, table: Any, key: tuple[str, ...], sums: tuple[str, ...]) -> Any:
    """The upsert adding `sums` to the row of `key` in `table`, for a dialect (PostgreSQL and
    SQLite spell it alike), built once: the hot path only binds values."""
    insert = conflict_insert(dialect)
    statement = insert(table).values({name: bindparam(name) for name in (*key, *sums)})
    return statement.on_conflict_do_update(
        index_elements=list(key),
        set_={name: table.c[name] + statement.excluded[name] for name in sums})


def count_received(session: Session, items: Sequence[Received]) -> None:
    """Add the e-mails to their counters (one upsert per key, keys in a fixed order so two
    transactions never lock the same rows in opposite orders). The caller commits."""
    totals: dict[tuple[uuid.UUID, uuid.UUID, uuid.UUID, str, date, int], list[int]] = \
        defaultdict(lambda: [0, 0])
    for item in items:
        key = (item.org_id, item.team_id, item.domain_id, item.sender_domain,
               item.received_at.date(), item.received_at.hour)
        totals[key][0] += 1
        totals[key][1] += item.size_bytes
    statement = _upsert(session.get_bind().dialect.name, MailCounter.__table__, _KEY,
                        ("emails", "bytes"))
    shard = _shard()
    for key in sorted(totals, key=str):
        emails, size = totals[key]
        session.execute(statement, {**dict(zip(_KEY, (*key, shard), strict=True)),
                                    "emails": emails, "bytes": size})


def count_created(session: Session, org_id: uuid.UUID, team_id: uuid.UUID, domain_id: uuid.UUID,
                  created_at: datetime) -> None:
    """Count one inbox created at `created_at` (UTC), in this thread's shard. The caller
    commits, with the inbox: the upsert's row lock lasts until then, so it is best sent last."""
    statement = _upsert(session.get_bind().dialect.name, InboxCounter.__table__, _INBOX_KEY,
                        ("inboxes",))
    session.execute(statement, {"org_id": org_id, "team_id": team_id, "domain_id": domain_id,
                                "day": created_at.date(), "hour": created_at.hour,
                                "shard": _shard(), "inboxes": 1})
