"""The fan-out table: for each event name, the handlers the dispatcher runs, in this order.

Every handler receives the dispatching message's session and a run of events of its name (one
or more: a dispatch handles a chunk of events in one transaction, and a handler does for all
of them at once what it can, in as few statements as it can), writes in that session (the
dispatcher commits it, with the events marked dispatched), and must be idempotent: an event
can be dispatched twice after a crash. Actors it sends wait for that commit by themselves;
anything else that must not leave before the rows it is about (a live push) goes through
`models.db.after_commit`. An event name missing here is dispatched with no handler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlalchemy.orm import Session

from models.domains.domains import CHECK_REQUESTED
from models.events import EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED, Event
from models.mail.entities import OBJECTS_DISCARDED
from models.platform.audit_exports import EXPORT_READY
from tasks.authentication import send_authentication
from tasks.checksums import send_checksums
from tasks.cleanup import discard_objects
from tasks.dns import send_requested_check
from tasks.notifications import notify_users
from tasks.publishers import push_email
from tasks.release import send_release_rules
from tasks.spam_engine import send_spam_engine
from tasks.thumbnails import send_thumbnails
from tasks.webhooks import fan_out_webhooks

Handler = Callable[[Session, Sequence[Event]], None]
FanOut = Mapping[str, tuple[Handler, ...]]

FAN_OUT: FanOut = {
    EMAIL_RECEIVED: (push_email, fan_out_webhooks, notify_users, send_authentication,
                     send_spam_engine, send_checksums, send_thumbnails, send_release_rules),
    INBOX_CREATED: (fan_out_webhooks, notify_users),
    INBOX_EXPIRED: (fan_out_webhooks, notify_users),
    CHECK_REQUESTED: (send_requested_check,),
    OBJECTS_DISCARDED: (discard_objects,),
    EXPORT_READY: (notify_users,),
}
