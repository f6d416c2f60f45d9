"""Platform-wide figures for system administrators (the `admin.stats` stream)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, union_all
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.domains.domains import Domain
from models.identity.users import User
from models.mail.counters import MailCounter
from models.mail.inboxes import Inbox
from models.mail.messages import Attachment, Email
from models.tenancy.teams import Team


def _count(session: Session, entity: Any, *criteria: Any) -> int:
    """How many rows of `entity` meet `criteria`."""
    return session.scalar(select(func.count()).select_from(entity).where(*criteria)) or 0


def storage_used_bytes(session: Session) -> int:
    """Bytes held in object storage: each raw message and each attachment once (the rows of
    one message delivered to several inboxes share their objects)."""
    objects = union_all(
        select(Email.raw_key.label("key"), func.max(Email.size_bytes).label("size"))
        .group_by(Email.raw_key),
        select(Attachment.storage_key.label("key"), func.max(Attachment.size_bytes).label("size"))
        .group_by(Attachment.storage_key)).subquery()
    return int(session.scalar(select(func.coalesce(func.sum(objects.c.size), 0))) or 0)


def platform_stats(session: Session) -> dict[str, int]:
    """The six `admin.stats` figures. `total_emails` counts every e-mail ever received (from
    the append-only counters, so it survives inbox cleanup); `active_inboxes` those not expired."""
    return {
        "total_emails": int(session.scalar(select(func.coalesce(func.sum(MailCounter.emails), 0)))
                            or 0),
        "active_inboxes": _count(session, Inbox, Inbox.expires_at > utcnow()),
        "total_domains": _count(session, Domain),
        "total_users": _count(session, User),
        "total_teams": _count(session, Team),
        "storage_used_bytes": storage_used_bytes(session),
    }
