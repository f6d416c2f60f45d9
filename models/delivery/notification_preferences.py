"""Which events notify a user: a choice per event, each with a default for those who never chose.

The defaults are what a person testing mail expects: an inbox of theirs that expired and an
audit export they asked for notify them (both happen later, away from the page they were on);
new mail and a new inbox do not. New mail arrives by the dozen in a test run and is already
shown live on the inbox's page, so a notification per e-mail only ran the badge up (35 after 35
test mails); an inbox is created by the person themselves. A user turns any of them on or off
(`PATCH /api/v1/notifications/preferences`); only their choices are stored, so a user who never
chose follows the defaults, present and future. The fan-out reads the choices in the statement
that creates the notifications (`models.delivery.notifications.notify`), so what is off is
neither stored nor pushed to `/ws/notifications`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import ForeignKey, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, conflict_insert
from models.errors import ValidationFailed
from models.events import EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED
from models.platform.audit_exports import EXPORT_READY

# Every event that can notify, and whether it does for a user who has not chosen.
DEFAULTS: dict[str, bool] = {
    EMAIL_RECEIVED: False,
    INBOX_CREATED: False,
    INBOX_EXPIRED: True,
    EXPORT_READY: True,
}


class NotificationPreference(Base):
    """A user's choice for one event (rows exist only for events the user chose)."""

    __tablename__ = "notification_preferences"

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"),
                                               primary_key=True)
    event: Mapped[str] = mapped_column(String(64), primary_key=True)
    enabled: Mapped[bool]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


def preferences(session: Session, user_id: uuid.UUID) -> dict[str, bool]:
    """Whether each event of DEFAULTS notifies the user: their choice, else the default."""
    chosen = {event: enabled for event, enabled in session.execute(
        select(NotificationPreference.event, NotificationPreference.enabled)
        .where(NotificationPreference.user_id == user_id))}
    return {event: chosen.get(event, default) for event, default in DEFAULTS.items()}


def set_preferences(session: Session, user_id: uuid.UUID, changes: Mapping[str, bool]
                    ) -> dict[str, bool]:
    """Store the user's choices in `changes` (event -> notify or not; events left out keep
    theirs) and return every preference as `preferences` does. Raise ValidationFailed, naming
    it, for an event that cannot notify."""
    unknown = sorted(set(changes) - set(DEFAULTS))
    if unknown:
        raise ValidationFailed(f"events that cannot notify: {', '.join(unknown)}",
                               details={event: ["not an event that notifies"]
                                        for event in unknown})
    if changes:
        now = utcnow()
        dialect = session.get_bind().dialect.name
        statement = conflict_insert(dialect)(NotificationPreference).values(
            [{"user_id": user_id, "event": event, "enabled": enabled, "updated_at": now}
             for event, enabled in changes.items()])
        session.execute(statement.on_conflict_do_update(
            index_elements=["user_id", "event"],
            set_={"enabled": statement.excluded.enabled,
                  "updated_at": statement.excluded.updated_at}))
    return preferences(session, user_id)
