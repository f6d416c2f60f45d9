"""Live messages for the web processes' sockets, published on the key-value store's pub/sub
(one subscriber per web process fans them out, see `web/realtime.py`):

- `email.received` to the inbox's stream, with the e-mail list item, once the dispatch commits;
- `admin.stats` every `clock.admin_stats_interval`, only while a system admin is connected.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from models.admin.stats import platform_stats
from models.db import after_commit
from models.delivery import realtime as rt
from models.events import EMAIL_RECEIVED, Event
from models.mail.messages import Email
from tasks.broker import actor, runtime, session


def email_item(email: Email) -> dict[str, Any]:
    """The data of an inbox stream's `email.received` message: the e-mail list item."""
    return {"id": email.id, "inbox_id": email.inbox_id, "message_id": email.message_id,
            "from_address": email.from_address, "to_address": email.to_address,
            "subject": email.subject, "snippet": email.snippet,
            "has_attachments": email.has_attachments, "is_read": email.is_read,
            "size_bytes": email.size_bytes, "received_at": email.received_at}


def push_email(db: Session, event: Event) -> None:
    """Send the new e-mail to its inbox's stream (nothing if it was deleted meanwhile)."""
    email = db.get(Email, uuid.UUID(event.data["email_id"]))
    if email is None:
        return
    channel, data = rt.inbox_channel(email.inbox_id), email_item(email)
    after_commit(db, lambda: rt.publish(runtime().store, channel, EMAIL_RECEIVED, data))


@actor(queue_name="clock", max_retries=0)
def publish_admin_stats() -> None:
    """Publish `admin.stats` if a system admin holds a stream (else do nothing)."""
    store = runtime().store
    if rt.admin_listening(store):
        rt.publish(store, rt.ADMIN_STATS_CHANNEL, rt.ADMIN_STATS, platform_stats(session()))
