"""Reading the audit trail: one org's entries, or the platform's (org-less) ones, filtered,
newest first; paginated for the list, streamed for the export.

Filters (all optional, combined with AND): actor id, actor e-mail (case-insensitive, exact),
action, resource type, resource name (case-insensitive substring), severity, category, and a
date range (`date_from` inclusive, `date_to` exclusive). The view refuses unknown severities
and categories (`SEVERITIES`, `CATEGORIES` of `models.platform.audit`) and malformed values.

Entries are ordered by (created_at, id) descending: the id breaks ties between entries of one
instant, so pages neither repeat nor skip one. Every equality filter has an index ending in
created_at (see `AuditEntry.__table_args__`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, delete, func, select
from sqlalchemy.orm import Session

from models.pagination import Page, paginate
from models.platform.audit import AuditEntry

# Rows fetched per round trip while streaming an export: the memory an export holds at once.
EXPORT_BATCH = 1000
# How far the list counts: an exact total of a large trail read every matching index entry
# (350-420 ms for a few hundred thousand), while the page itself reads 20.
COUNT_CAP = 10_000


@dataclass(frozen=True)
class AuditFilter:
    """The filters of a list or an export (None: not filtered on)."""

    actor_id: uuid.UUID | None = None
    actor_email: str | None = None
    action: str | None = None
    resource_type: str | None = None
    resource_name: str | None = None
    severity: str | None = None
    category: str | None = None
    date_from: datetime | None = None
    date_to: datetime | None = None


def _escape_like(text: str) -> str:
    """`text` as a literal inside a LIKE pattern (escape character backslash)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _query(org_id: uuid.UUID | None, where: AuditFilter) -> Select[Any]:
    """The entries of org `org_id` (None: the platform's) matching `where`, newest first."""
    query = select(AuditEntry).where(
        AuditEntry.org_id.is_(None) if org_id is None else AuditEntry.org_id == org_id)
    for column, value in ((AuditEntry.actor_id, where.actor_id),
                          (AuditEntry.action, where.action),
                          (AuditEntry.resource_type, where.resource_type),
                          (AuditEntry.severity, where.severity),
                          (AuditEntry.category, where.category)):
        if value is not None:
            query = query.where(column == value)
    if where.actor_email is not None:
        query = query.where(func.lower(AuditEntry.actor_email) == where.actor_email.lower())
    if where.resource_name is not None:
        pattern = f"%{_escape_like(where.resource_name.lower())}%"
        query = query.where(func.lower(AuditEntry.resource_name).like(pattern, escape="\\"))
    if where.date_from is not None:
        query = query.where(AuditEntry.created_at >= where.date_from)
    if where.date_to is not None:
        query = query.where(AuditEntry.created_at < where.date_to)
    return query.order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc())


def list_entries(session: Session, org_id: uuid.UUID | None, where: AuditFilter, page: int,
                 per_page: int) -> Page[AuditEntry]:
    """One page of the org's (None: the platform's) entries matching `where`, newest first;
    `total` is exact up to COUNT_CAP entries (or to this page's end, if further), beyond
    it the page says `total_capped`."""
    return paginate(session, _query(org_id, where), page, per_page, count_cap=COUNT_CAP)


def stream_entries(session: Session, org_id: uuid.UUID | None,
                   where: AuditFilter) -> Iterator[AuditEntry]:
    """Every matching entry, newest first, read through a server-side cursor EXPORT_BATCH rows
    at a time: memory stays flat whatever the count. Each batch is expunged once yielded, so
    the session's identity map does not grow with the export either."""
    result = session.execute(_query(org_id, where),
                             execution_options={"yield_per": EXPORT_BATCH})
    for batch in result.scalars().partitions():
        yield from batch
        for entry in batch:
            session.expunge(entry)


def purge_entries_before(session: Session, cutoff: datetime, limit: int) -> int:
    """Delete up to `limit` entries created before `cutoff` (oldest first; flushed, not
    committed) and return how many went. The retention cleanup calls it until it returns less
    than `limit`, one transaction per batch, so no single transaction holds a million rows."""
    oldest = (select(AuditEntry.id).where(AuditEntry.created_at < cutoff)
              .order_by(AuditEntry.created_at).limit(limit))
    ids = list(session.scalars(oldest))
    if ids:
        session.execute(delete(AuditEntry).where(AuditEntry.id.in_(ids)),
                        execution_options={"synchronize_session": False})
    return len(ids)
