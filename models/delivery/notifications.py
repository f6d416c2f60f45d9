"""Notifications: what a user is told about events that concern them, kept until they delete it.

The fan-out creates them for the events in `TITLES`: `email.received`, `inbox.created` and
`inbox.expired` concern the inbox's creator, `audit.export_ready` the user who asked for the
export (the event data's `created_by` in both cases), and each of them notifies that user when
their preferences say so (`models.delivery.notification_preferences`: by default the expiry
and the export do, new mail and a new inbox do not). Each (event, user)
gets at most one notification, so a fan-out that runs twice adds nothing. A notification is
`{id, type, title, data, is_read, read_at, created_at}`: `type` is the event name and `data` the
event's data as webhooks receive it (for an event no webhook receives, as recorded). Users see
and change only their own.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Index,
    Row,
    String,
    UniqueConstraint,
    bindparam,
    delete,
    func,
    select,
    union_all,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey, conflict_insert
from models.delivery.notification_preferences import DEFAULTS, NotificationPreference
from models.delivery.webhooks import webhook_data
from models.errors import NotFound
from models.events import EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED, WEBHOOK_EVENTS, Event
from models.identity.users import User
from models.pagination import Page, paginate
from models.platform.audit_exports import EXPORT_READY

MAX_TITLE = 300

# The events users are notified of, with the title each notification gets.
TITLES = {
    EMAIL_RECEIVED: "New e-mail for {address}: {subject}",
    INBOX_CREATED: "Inbox {address} created",
    INBOX_EXPIRED: "Inbox {address} expired",
    EXPORT_READY: "Audit export ready: {entries} entries ({format})",
}


class Notification(UUIDKey, Base):
    """One event told to one user."""

    __tablename__ = "notifications"

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    event_id: Mapped[uuid.UUID]
    type: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(String(MAX_TITLE))
    data: Mapped[dict[str, Any]]
    is_read: Mapped[bool] = mapped_column(default=False)
    read_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (
        UniqueConstraint("event_id", "user_id"),
        Index("ix_notifications_user_id_created_at", "user_id", "created_at"),
    )


class _Blank(dict[str, Any]):
    """Format values for a title: a missing or empty field reads as "(none)"."""

    def __missing__(self, key: str) -> str:
        return "(none)"


def recipients(event: Event) -> list[uuid.UUID]:
    """Who is notified of `event`: the inbox's creator, when the event names one."""
    if event.name not in TITLES:
        return []
    try:
        return [uuid.UUID(str(event.data["created_by"]))]
    except (KeyError, ValueError, TypeError):  # created by nobody (the demo) or not recorded
        return []


_NOTIFICATIONS = Notification.__table__
_CREATED = ("id", "user_id", "event_id", "type", "title", "data", "is_read", "created_at")
# A wanted row's column that is not stored: whether its event notifies a user who never chose.
BY_DEFAULT = "by_default"
# Notifications one statement creates at most; more take several (a statement is built and
# kept for each row count up to this).
NOTIFY_ROWS = 16


@functools.cache
def _notify_statement(dialect: str, count: int) -> Any:
    """`notify`'s statement for `dialect` and `count` notifications, every value a bound
    parameter (`<column>_<n>`): built once, where building it per e-mail (and keying it for
    SQLAlchemy's statement cache) cost the fan-out more CPU than running it."""
    typed = {name: _NOTIFICATIONS.c[name].type for name in _CREATED}
    typed[BY_DEFAULT] = Boolean()
    # A UNION ALL of one-row SELECTs, not VALUES: SQLite names no VALUES columns.
    rows = union_all(*(select(*(bindparam(f"{name}_{n}", type_=typed[name]).label(name)
                                for name in (*_CREATED, BY_DEFAULT)))
                       for n in range(count))).subquery("wanted")
    # The user's choice for the event, if they made one (models.delivery
    # .notification_preferences); the event's default otherwise.
    chosen = (select(NotificationPreference.enabled)
              .where(NotificationPreference.user_id == rows.c.user_id,
                     NotificationPreference.event == rows.c.type)
              .scalar_subquery())
    # The join in WHERE, not ON: SQLite would read ON CONFLICT as the join's ON.
    found = (select(*(User.id if name == "user_id" else rows.c[name] for name in _CREATED))
             .select_from(rows)
             .where(User.id == rows.c.user_id, func.coalesce(chosen, rows.c[BY_DEFAULT]))
             .with_for_update(read=True, key_share=True, of=User))
    return (conflict_insert(dialect)(_NOTIFICATIONS)
            .from_select(list(_CREATED), found)
            .on_conflict_do_nothing(index_elements=["event_id", "user_id"])
            .returning(*_NOTIFICATIONS.c))


def notify(session: Session, events: Sequence[Event]) -> list[Row[Any]]:
    """Create the events' notifications that do not exist yet, for the recipients whose
    preferences let the event notify them, and return them as rows with the notification's
    columns, in the order of the events (none the second time: notifications are unique per
    (event, user)).

    One statement for up to `NOTIFY_ROWS` of them, on the fan-out's hot path (one per
    e-mail): an INSERT of the wanted rows joined to their users, which skips a user deleted
    since the event (a notification for them would fail the foreign key, and with it the
    whole fan-out, webhooks included), holds off a deletion until this transaction ends (FOR
    KEY SHARE), and does nothing when the notification exists. It replaced, per e-mail, two
    SELECTs and an ORM flush that cost the fan-out more than the rest of its handlers
    together. The same statement reads each recipient's choice for the event, so an event
    they turned off (new mail, by default) costs no further round trip."""
    wanted = [row for event in events for row in _wanted(event)]
    dialect = session.get_bind().dialect.name
    created: list[Row[Any]] = []
    for start in range(0, len(wanted), NOTIFY_ROWS):
        piece = wanted[start:start + NOTIFY_ROWS]
        created += session.execute(_notify_statement(dialect, len(piece)),
                                   {f"{name}_{n}": value for n, row in enumerate(piece)
                                    for name, value in row.items()}).all()
    place = {(row["event_id"], row["user_id"]): n for n, row in enumerate(wanted)}
    return sorted(created, key=lambda row: place[row.event_id, row.user_id])


def _wanted(event: Event) -> list[dict[str, Any]]:
    """The event's notification rows, one per recipient."""
    users = recipients(event)
    if not users:
        return []
    data = webhook_data(event) if event.name in WEBHOOK_EVENTS else dict(event.data)
    title = TITLES[event.name].format_map(_Blank({k: v for k, v in data.items() if v}))
    now = utcnow()
    return [{"id": uuid.uuid4(), "user_id": user_id, "event_id": event.id, "type": event.name,
             "title": title[:MAX_TITLE], "data": data, "is_read": False, "created_at": now,
             BY_DEFAULT: DEFAULTS[event.name]}
            for user_id in users]


def as_message_data(notification: Notification | Row[Any]) -> dict[str, Any]:
    """The notification as the `/ws/notifications` stream carries it (the REST shape)."""
    return {"id": notification.id, "type": notification.type, "title": notification.title,
            "data": notification.data, "is_read": notification.is_read,
            "read_at": notification.read_at, "created_at": notification.created_at}


def list_notifications(session: Session, user_id: uuid.UUID, page: int, per_page: int, *,
                       unread_only: bool = False) -> Page[Notification]:
    """The user's notifications, newest first (only unread ones when asked)."""
    query = select(Notification).where(Notification.user_id == user_id)
    if unread_only:
        query = query.where(Notification.is_read.is_(False))
    query = query.order_by(Notification.created_at.desc(), Notification.id)
    return paginate(session, query, page, per_page)


def _own(session: Session, user_id: uuid.UUID, notification_id: uuid.UUID) -> Notification:
    notification = session.get(Notification, notification_id)
    if notification is None or notification.user_id != user_id:
        raise NotFound("notification not found")
    return notification


def mark_read(session: Session, user_id: uuid.UUID, notification_id: uuid.UUID
              ) -> Notification:
    """Mark one of the user's notifications read (again: no change); NotFound otherwise."""
    notification = _own(session, user_id, notification_id)
    if not notification.is_read:
        notification.is_read, notification.read_at = True, utcnow()
        session.flush()
    return notification


def mark_all_read(session: Session, user_id: uuid.UUID) -> int:
    """Mark every unread notification of the user read; return how many changed."""
    result = session.execute(update(Notification)
                             .where(Notification.user_id == user_id,
                                    Notification.is_read.is_(False))
                             .values(is_read=True, read_at=utcnow()))
    return result.rowcount or 0


def delete_notification(session: Session, user_id: uuid.UUID, notification_id: uuid.UUID
                        ) -> None:
    """Delete one of the user's notifications; NotFound otherwise."""
    session.delete(_own(session, user_id, notification_id))
    session.flush()


def delete_all(session: Session, user_id: uuid.UUID) -> int:
    """Delete every notification of the user; return how many."""
    result = session.execute(delete(Notification).where(Notification.user_id == user_id))
    return result.rowcount or 0
