"""The cleanup worker: one periodic job (`clock.cleanup_interval`) that runs every cleanup step.

A step takes the message's database session, removes what has lapsed and returns how many
rows it removed; each step is committed on its own (the actor commits in steps), so one failing
step neither undoes nor blocks the others. The first failure is raised once every step has run
(the next tick runs them all again; each step is idempotent). Steps: expired API keys
(`models.apikeys.keys`), lapsed invites (`models.tenancy.invites`), lapsed inboxes
(`models.mail.inboxes`: batches of `clock.cleanup_batch_size`, each committed with its
`inbox.expired` events), and audit entries older than `audit.retention` when it is set
(batches of the same size), audit export jobs past their `expires_at` with their files, and
export jobs left running by a worker that died (sent to the worker again;
`models.platform.audit_exports`).

Stored objects of removed mail (raw messages, attachments) are deleted by `discard_objects`
once the removal has committed (the `storage.objects_discarded` event, see `models.mail.entities`;
its handler in `tasks.fanout`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sqlalchemy.orm import Session

from burnbox import metrics
from burnbox.timeutil import utcnow
from models.apikeys.keys import delete_expired_keys
from models.events import Event
from models.mail.entities import unreferenced_keys
from models.mail.inboxes import remove_lapsed_inboxes
from models.platform.audit_exports import delete_jobs, expired_jobs, stale_jobs
from models.platform.audit_log import purge_entries_before
from models.tenancy.invites import purge_expired_invites
from tasks.broker import actor, commit_step, runtime, session
from tasks.exports import export_audit

log = logging.getLogger(__name__)

CleanupStep = Callable[[Session], int]


def in_batches(db: Session, batch: Callable[[int], int], batch_size: int) -> int:
    """Call `batch(batch_size)` (which removes up to that many rows) and commit, until a batch
    removes fewer, so memory and lock time stay bounded however many rows lapsed; return how
    many went."""
    total, batch_size = 0, max(1, batch_size)
    while True:
        removed = batch(batch_size)
        commit_step(db)
        db.expunge_all()  # nothing of a finished batch stays in the identity map
        total += removed
        if removed < batch_size:
            return total


def remove_lapsed_inboxes_in_batches(db: Session, batch_size: int) -> int:
    """Remove every lapsed inbox, `batch_size` per transaction (each committed with its
    inbox.expired events); return how many went."""
    return in_batches(db, lambda size: remove_lapsed_inboxes(db, size), batch_size)


def _lapsed_inboxes(db: Session) -> int:
    return remove_lapsed_inboxes_in_batches(db, runtime().settings.clock.cleanup_batch_size)


def _old_audit_entries(db: Session) -> int:
    """Audit entries older than `audit.retention` (none while it is 0: kept forever)."""
    settings = runtime().settings
    if not settings.audit.retention:
        return 0
    cutoff = utcnow() - settings.audit.retention
    return in_batches(db, lambda size: purge_entries_before(db, cutoff, size),
                      settings.clock.cleanup_batch_size)


def _expired_audit_exports(db: Session) -> int:
    """Audit export jobs past their `expires_at`, with their files (deleted first: a job row
    left behind by a failure is retried next time, a file left behind would be orphaned)."""
    storage = runtime().storage

    def batch(size: int) -> int:
        jobs = expired_jobs(db, utcnow(), size)
        for _, key in jobs:
            if key is not None:
                storage.delete(key)
        return delete_jobs(db, [job_id for job_id, _ in jobs])

    return in_batches(db, batch, runtime().settings.clock.cleanup_batch_size)


def _stale_audit_exports(db: Session) -> int:
    """Export jobs left running by a worker that died (their lease ended), sent to the worker
    again in case their message went with it: the claim runs each once however many arrive."""
    stale = stale_jobs(db, utcnow(), runtime().settings.clock.cleanup_batch_size)
    for job_id in stale:
        export_audit.send(str(job_id))
    return len(stale)


# (name, step), run in this order.
STEPS: list[tuple[str, CleanupStep]] = [
    ("expired_api_keys", delete_expired_keys),
    ("expired_invites", purge_expired_invites),
    ("lapsed_inboxes", _lapsed_inboxes),
    ("old_audit_entries", _old_audit_entries),
    ("expired_audit_exports", _expired_audit_exports),
    ("stale_audit_exports", _stale_audit_exports),
]


@actor(queue_name="clock", max_retries=0,
       commits_in_steps="each step, and each batch of a step, is a transaction of its own: "
                        "one failing step neither undoes nor blocks the others, and a batch's "
                        "locks and memory end with it")
def cleanup() -> None:
    """Run every cleanup step, each in its own transaction."""
    db = session()
    failure: Exception | None = None
    for name, step in STEPS:
        try:
            removed = step(db)
            commit_step(db)
        except Exception as exc:
            db.rollback()
            log.exception("cleanup step failed", extra={"step": name})
            failure = failure or exc
            continue
        if removed:
            metrics.CLEANUP_REMOVED.labels(name).inc(removed)
            log.info("cleanup removed rows", extra={"step": name, "count": removed})
    if failure is not None:
        raise failure


def discard_objects(db: Session, events: Sequence[Event]) -> None:
    """Delete the stored objects of removed mail once their removal committed, keeping any
    that a row still uses (another recipient's copy of the same message)."""
    storage = runtime().storage
    for event in events:  # one look-up each: an event carries up to KEYS_PER_EVENT keys
        for key in unreferenced_keys(db, event.data["keys"]):
            storage.delete(key)
