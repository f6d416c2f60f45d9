"""Audit export jobs: an export of an org's trail written to object storage by a worker, for
trails too large to download in one request, with an expiring download.

`request_export` records the job (`pending`); the worker's `export_audit` actor claims it
(`claim_export`: `running`), streams the matching entries
(`models.platform.audit_log.stream_entries`, the same filters and CSV/JSON as the streamed
export) into a spooled temporary file and stores it in blocks (`write_export`,
`ObjectStorage.put_file`), so neither the worker's memory nor the database transaction grows
with the trail. It then marks the job `done` (`finish_export`), valid for `audit.export_ttl`,
and records the `audit.export_ready` event in the same transaction: the fan-out turns it into a
notification of the user who asked (pushed on `/ws/notifications`) carrying the download path.
A failure marks the job `failed` with the error; asking again starts a new job.

The worker holds a running job for `LEASE`, longer than the export actor may run
(`TIME_LIMIT`, after which it is stopped and the job marked failed). A job still `running`
after its lease was left by a worker that died: the message redelivered, or the cleanup's
re-enqueue (`stale_jobs`), claims it again and runs it from the start.

Every job has an `expires_at` (the request's time plus the TTL while it runs, the end's time
plus the TTL once done); the cleanup deletes the jobs past it, and their files.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String, and_, or_, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.storage import ObjectStorage
from burnbox.timeutil import isoformat
from models.db import Base, UUIDKey
from models.errors import NotFound
from models.events import record_event
from models.pagination import Page, paginate
from models.platform import audit_formats
from models.platform.audit import AuditEntry, Origin, record_audit
from models.platform.audit_log import AuditFilter, stream_entries

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
EXPORT_READY = "audit.export_ready"
MAX_ERROR = 300
# The file is built in memory up to this size, then on disk: small exports never touch it.
SPOOL_BYTES = 8 * 1024 * 1024
TIME_LIMIT = timedelta(minutes=30)  # a million entries take about a minute
LEASE = TIME_LIMIT + timedelta(minutes=1)


class AuditExport(UUIDKey, Base):
    """One export job of an org's audit trail."""

    __tablename__ = "audit_exports"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"))
    # Who asked: the one notified. Their deletion takes the job with it.
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    format: Mapped[str] = mapped_column(String(8))
    filters: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16))
    storage_key: Mapped[str | None] = mapped_column(String(255))
    entries: Mapped[int | None] = mapped_column(BigInteger)
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(String(MAX_ERROR))
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    expires_at: Mapped[datetime]
    lease_until: Mapped[datetime | None]  # while running: when a dead worker's claim ends

    __table_args__ = (Index("ix_audit_exports_org_id_created_at", "org_id", "created_at"),
                      Index("ix_audit_exports_expires_at", "expires_at"))


def filters_json(where: AuditFilter) -> dict[str, Any]:
    """The filters that are set, as JSON (ids and instants as strings)."""
    values = {name: getattr(where, name) for name in AuditFilter.__dataclass_fields__}
    return {name: isoformat(value) if isinstance(value, datetime) else str(value)
            for name, value in values.items() if value is not None}


def filters_from_json(stored: dict[str, Any]) -> AuditFilter:
    """The AuditFilter `filters_json` stored."""
    values: dict[str, Any] = dict(stored)
    if "actor_id" in values:
        values["actor_id"] = uuid.UUID(values["actor_id"])
    for name in ("date_from", "date_to"):
        if name in values:
            values[name] = datetime.fromisoformat(values[name])
    return AuditFilter(**values)


def request_export(session: Session, org_id: uuid.UUID, user_id: uuid.UUID, origin: Origin,
                   format_: str, where: AuditFilter, now: datetime, ttl: timedelta
                   ) -> AuditExport:
    """Record a pending export job of the org's entries matching `where`, asked for by
    `user_id`, and audit the request (`org.audit_export`: who took a copy of the trail is
    itself worth keeping). Flushed; the caller, which checked `org.audit.export`, commits and
    then has a worker run it."""
    export = AuditExport(id=uuid.uuid4(), org_id=org_id, user_id=user_id, format=format_,
                         filters=filters_json(where), status=PENDING, created_at=now,
                         expires_at=now + ttl)
    session.add(export)
    record_audit(session, "org.audit_export", actor_id=user_id, org_id=org_id,
                 resource_type="audit_export", resource_id=export.id, ip=origin.ip,
                 user_agent=origin.user_agent, channel=origin.channel,
                 after={"format": format_, "filters": export.filters},
                 resource_name=f"{format_} export")
    session.flush()
    return export


def get_export(session: Session, org_id: uuid.UUID, export_id: uuid.UUID) -> AuditExport:
    """The org's export job `export_id`; NotFound for another org's or an unknown one."""
    export = session.get(AuditExport, export_id)
    if export is None or export.org_id != org_id:
        raise NotFound("export not found")
    return export


def list_exports(session: Session, org_id: uuid.UUID, page: int, per_page: int
                 ) -> Page[AuditExport]:
    """The org's export jobs, newest first (those past `expires_at` are gone: the cleanup
    deletes them)."""
    query = (select(AuditExport).where(AuditExport.org_id == org_id)
             .order_by(AuditExport.created_at.desc(), AuditExport.id.desc()))
    return paginate(session, query, page, per_page)


def downloadable(export: AuditExport, now: datetime) -> str:
    """The storage key of a finished, unexpired export; NotFound otherwise (not ready yet,
    failed, or past its `expires_at`)."""
    if export.status != DONE or export.storage_key is None or export.expires_at <= now:
        raise NotFound("export not ready, failed or expired")
    return export.storage_key


def download_path(export: AuditExport) -> str:
    """The API path that downloads the export's file."""
    return f"/api/v1/orgs/{export.org_id}/audit/exports/{export.id}/download"


def _left_running(now: datetime) -> Any:
    """The running jobs whose lease has ended at `now` (their worker died; none before the
    lease existed)."""
    return and_(AuditExport.status == RUNNING,
                or_(AuditExport.lease_until.is_(None), AuditExport.lease_until <= now))


def _claimable(now: datetime) -> Any:
    """The jobs a worker may claim at `now`: pending ones, and those left running."""
    return or_(AuditExport.status == PENDING, _left_running(now))


def claim_export(session: Session, export_id: uuid.UUID, now: datetime) -> AuditExport | None:
    """Lease the job `export_id` to this worker (running until `now + LEASE`), when it is
    pending, or was left running by a worker that died; None when it is not claimable. The
    caller commits the claim before the long part (`write_export`)."""
    claimed = session.execute(update(AuditExport)
                              .where(AuditExport.id == export_id, _claimable(now))
                              .values(status=RUNNING, lease_until=now + LEASE))
    if not claimed.rowcount:
        return None
    return session.scalars(select(AuditExport).where(AuditExport.id == export_id)
                           .execution_options(populate_existing=True)).one()


def stale_jobs(session: Session, now: datetime, limit: int) -> list[uuid.UUID]:
    """Up to `limit` running jobs whose lease has ended at `now`: left by a worker that died."""
    return list(session.scalars(select(AuditExport.id)
                                .where(_left_running(now))
                                .order_by(AuditExport.created_at).limit(limit)))


def _counted(entries: Iterable[AuditEntry], seen: list[int]) -> Iterator[AuditEntry]:
    for entry in entries:
        seen[0] += 1
        yield entry


@dataclass(frozen=True)
class Written:
    """An export file in object storage: its key, how many entries and bytes it holds."""

    key: str
    entries: int
    size_bytes: int


def write_export(session: Session, storage: ObjectStorage, export: AuditExport) -> Written:
    """Write the claimed job's file to storage (the entries read through `session`, the file
    spooled to disk past `SPOOL_BYTES`); writes no row. A failure of the storage or the
    database propagates: the caller marks the job failed (`fail_export`)."""
    key = f"exports/audit/{export.org_id}/{export.id}.{export.format}"
    seen = [0]
    entries = stream_entries(session, export.org_id, filters_from_json(export.filters))
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        for chunk in audit_formats.chunks(export.format, _counted(entries, seen)):
            spool.write(chunk.encode("utf-8"))
        size = spool.tell()
        spool.seek(0)
        storage.put_file(key, spool)
    return Written(key, seen[0], size)


def fail_export(session: Session, export_id: uuid.UUID, error: BaseException,
                now: datetime) -> None:
    """Mark the job failed with `error` (flushed, not committed): the user asks again."""
    session.execute(update(AuditExport).where(AuditExport.id == export_id)
                    .values(status=FAILED, error=str(error)[:MAX_ERROR], finished_at=now,
                            lease_until=None))


def finish_export(session: Session, export: AuditExport, written: Written, now: datetime,
                  ttl: timedelta) -> None:
    """Mark the job done with its file, downloadable until `now + ttl`, and record its
    `audit.export_ready` event (flushed, not committed)."""
    export.status, export.storage_key = DONE, written.key
    export.entries, export.size_bytes = written.entries, written.size_bytes
    export.finished_at, export.expires_at, export.lease_until = now, now + ttl, None
    record_event(session, EXPORT_READY, {
        "export_id": str(export.id), "org_id": str(export.org_id), "format": export.format,
        "entries": written.entries, "size_bytes": written.size_bytes,
        "expires_at": isoformat(export.expires_at), "download_path": download_path(export),
        "created_by": str(export.user_id)}, org_id=export.org_id)


def expired_jobs(session: Session, now: datetime, limit: int
                 ) -> list[tuple[uuid.UUID, str | None]]:
    """Up to `limit` jobs past their `expires_at`, oldest first: (id, storage key or None)."""
    rows = session.execute(select(AuditExport.id, AuditExport.storage_key)
                           .where(AuditExport.expires_at < now)
                           .order_by(AuditExport.expires_at).limit(limit))
    return [(job_id, key) for job_id, key in rows]


def delete_jobs(session: Session, ids: list[uuid.UUID]) -> int:
    """Delete the jobs `ids` (flushed, not committed); how many went."""
    jobs = list(session.scalars(select(AuditExport).where(AuditExport.id.in_(ids))))
    for job in jobs:
        session.delete(job)
    session.flush()
    return len(jobs)
