"""Notifications in the worker: the fan-out handler that creates them for the users an event
concerns and, once committed, pushes each to its user's `/ws/notifications` stream through the
key-value store's pub/sub (a client never hears of a notification it cannot read back)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from models.db import after_commit
from models.delivery import notifications
from models.delivery.realtime import publish_all, user_channel
from models.events import Event
from tasks.broker import runtime


def notify_users(db: Session, events: Sequence[Event]) -> None:
    """Create the events' notifications (once per user and event) and push them, all in one
    round trip, after commit."""
    messages = [(user_channel(n.user_id), n.type, notifications.as_message_data(n))
                for n in notifications.notify(db, events)]
    if messages:
        after_commit(db, lambda: publish_all(runtime().store, messages))
