"""Audit export jobs in the worker (`models.platform.audit_exports`): write the file to object
storage, then the `audit.export_ready` event notifies the user who asked."""

from __future__ import annotations

import logging
import uuid

from burnbox.timeutil import utcnow
from models.platform.audit_exports import TIME_LIMIT, run_export
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="exports", max_retries=0,
       time_limit=int(TIME_LIMIT.total_seconds() * 1000))  # shorter than the job's lease
def export_audit(export_id: str) -> None:
    """Run the export job `export_id` once: a no-op unless it is pending, or left running by a
    worker that died (its lease ended). A failure has marked the job failed when it propagates
    (no retry: the user asks again)."""
    rt = runtime()
    done = run_export(session(), rt.storage, uuid.UUID(export_id), utcnow(),
                      rt.settings.audit.export_ttl)
    if done is not None:
        log.info("audit export written", extra={"export_id": export_id,
                                                "entries": done.entries,
                                                "bytes": done.size_bytes})
