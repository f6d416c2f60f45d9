"""The hand-offs of a process: what its commits pass on to the rest of the system.

One object per process (`Database.handoffs`), filled in one place by the process's composition
root (`tasks.wiring.setup_broker`; before that, only `revisions_moved`, which `Runtime` sets, or
the `Database` itself from the settings when opened without a Runtime, so that any process that
writes moves the caches' revisions). The core and mail ingest read it;
none of them imports what it points at, which lives in contexts and faces above them.

When each runs, for one transaction:

1. In the transaction, mail ingest only: `ingest_recorded(session, recorded)` gets the
   `email.received` events the batch recorded and writes what must commit with them (the
   webhook deliveries, `models.delivery.webhooks.deliver_recorded`).
2. After the outermost commit, in this order (`Database._after_commit`):
   `revisions_moved(keys)` (the per-process caches' revisions, first, so that nothing that
   follows is answered from a cache of what changed), `events_committed(ids)` (the outbox's
   events to the fan-out actor), `deliveries_committed({delivery id: webhook id})` (the first
   attempts of the deliveries the transaction created), then the steps the transaction
   registered itself with `models.db.after_commit`, among them, for mail ingest,
   `mail_stored(items)`: the live push of the new e-mails
   (`models.delivery.realtime.push_received`); last, `mail_changed(changes)`: the committed
   changes of stored mail the transaction noted (`models.db.remember_mail_change`: e-mails
   marked read or unread, tagged, deleted, inboxes emptied or marked), all in one call, for
   the streams that announce them (`models.delivery.realtime.publish_mail_changes`).

A face may hold the steps of (2) after `revisions_moved` and run them later, in the same
order (`Database.holding_hand_offs` / `Database.hand_on`): mailin's committer answers its SMTP
sessions between the two.

A hand-off left None is skipped: a process without a broker hands no events (the clock's
sweeps find them). The mail hand-offs are wired wherever the broker is set up, and used only
where mailin's committer calls `commit_messages`; without them, new mail's deliveries and live
push come from the worker's fan-out alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

# What a `MailChange` says happened.
EMAIL_UPDATED = "email.updated"  # read or unread (`is_read`), or its tags (`tags`)
EMAIL_DELETED = "email.deleted"
INBOX_EMPTIED = "inbox.emptied"  # every e-mail of the inbox deleted at once
INBOX_MARKED = "inbox.marked"  # every e-mail of the inbox marked read, or unread, at once


@dataclass(frozen=True)
class MailChange:
    """One committed change of an inbox's stored mail, as a stream of its mail announces it:
    `kind` (above), the inbox and the domain assignment it came through (None for none), the
    e-mail (for EMAIL_UPDATED and EMAIL_DELETED), what changed, and the inbox's counters
    after the change where the change moved them (`counts`: e-mails, unread e-mails)."""

    kind: str
    inbox_id: uuid.UUID
    assignment_id: uuid.UUID | None
    email_id: uuid.UUID | None = None
    is_read: bool | None = None
    tags: list[str] | None = None
    counts: tuple[int, int] | None = None


@dataclass
class HandOffs:
    """Where a commit's results go in this process (see the module docstring for when)."""

    revisions_moved: Callable[[list[str]], None] | None = None
    events_committed: Callable[[list[uuid.UUID]], None] | None = None
    deliveries_committed: Callable[[dict[uuid.UUID, uuid.UUID]], None] | None = None
    # Mail ingest only (`models.mail.ingest.store.commit_messages`): the recorded events are
    # `models.mail.ingest.store.Recorded`; the stored e-mails are (list item, team id) pairs.
    ingest_recorded: Callable[[Session, list[Any]], None] | None = None
    mail_stored: Callable[[list[tuple[dict[str, Any], uuid.UUID]]], None] | None = None
    mail_changed: Callable[[list[MailChange]], None] | None = None
