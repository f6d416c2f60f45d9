"""Audit export jobs in the worker (`models.platform.audit_exports`): write the file to object
storage, then the `audit.export_ready` event notifies the user who asked."""

from __future__ import annotations

import logging
import uuid

from burnbox.timeutil import utcnow
from models.platform.audit_exports import (
    TIME_LIMIT,
    claim_export,
    fail_export,
    finish_export,
    write_export,
)
from tasks.broker import actor, commit_step, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="exports", max_retries=0,
       time_limit=int(TIME_LIMIT.total_seconds() * 1000),  # shorter than the job's lease
       commits_in_steps="the claim is committed before the long part, and a failure is "
                        "recorded before it propagates")
def export_audit(export_id: str) -> None:
    """Run the export job `export_id` once: a no-op unless it is pending, or left running by a
    worker that died (its lease ended). A failure has marked the job failed when it propagates
    (no retry: the user asks again); the finished job is committed when the actor returns (a
    commit that fails leaves the job running, and the cleanup's stale-export step sends it
    again once its lease ends)."""
    rt, db, now, job_id = runtime(), session(), utcnow(), uuid.UUID(export_id)
    export = claim_export(db, job_id, now)
    commit_step(db)
    if export is None:
        return
    try:
        written = write_export(db, rt.storage, export)
    except Exception as exc:
        db.rollback()
        # The id as sent, not read from `export`: the rollback expired it, and a job deleted
        # meanwhile (its org or user gone) would raise reading it, hiding the real failure.
        fail_export(db, job_id, exc, now)
        commit_step(db)
        raise
    finish_export(db, export, written, now, rt.settings.audit.export_ttl)
    log.info("audit export written", extra={"export_id": export_id, "entries": written.entries,
                                            "bytes": written.size_bytes})
