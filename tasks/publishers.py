"""The realtime publishers of the worker: live messages for the web processes' sockets,
published on the key-value store's pub/sub (one subscriber per web process hands them to its
sockets, see `web/sockets.py`):

- `email.received` to the inbox's stream and to its team's channel, with the e-mail list item,
  once the dispatch commits (the team channel wakes requests waiting across a team's inboxes):
  the backup of mailin's own push right after its commit, sent only when that one was not;
- `admin.stats` every `clock.admin_stats_interval`, only while a system admin is connected.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from models.admin.stats import platform_stats
from models.db import after_commit
from models.delivery import realtime as rt
from models.events import Event
from models.mail.emails import summaries_with_team
from tasks.broker import actor, runtime, session


def push_email(db: Session, events: Sequence[Event]) -> None:
    """The backup of mailin's live push: send each new e-mail to its inbox's stream and its
    team's channel (nothing for one deleted meanwhile), all in one round trip once the dispatch
    commits; an e-mail mailin already pushed is not sent again (`rt.push_received`). Those are
    known before any row is read: usually all of them, and then nothing is read."""
    email_ids = rt.not_pushed(runtime().store,
                              [uuid.UUID(event.data["email_id"]) for event in events])
    if not email_ids:
        return
    found = summaries_with_team(db, email_ids)
    received = [found[one] for one in email_ids if one in found]
    if received:
        after_commit(db, lambda: rt.push_received(runtime().store, received))


@actor(queue_name="clock", max_retries=0)
def publish_admin_stats() -> None:
    """Publish `admin.stats` if a system admin holds a stream (else do nothing)."""
    store = runtime().store
    if rt.admin_listening(store):
        rt.publish(store, rt.ADMIN_STATS_CHANNEL, rt.ADMIN_STATS, platform_stats(session()))
