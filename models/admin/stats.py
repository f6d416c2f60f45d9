"""Platform-wide figures for system administrators: `GET /admin/stats` and the `admin.stats`
stream push exactly what `platform_stats` returns, so the two never differ."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, select, union_all
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.apikeys.keys import ApiKey
from models.delivery.webhooks import Webhook
from models.domains.domains import Domain
from models.identity.sessions import UserSession
from models.identity.users import User
from models.mail.counters import MailCounter
from models.mail.entities import Attachment, Email
from models.mail.inboxes import Inbox
from models.tenancy.teams import Team


def _count(session: Session, entity: Any, *criteria: Any) -> int:
    """How many rows of `entity` meet `criteria`."""
    return session.scalar(select(func.count()).select_from(entity).where(*criteria)) or 0


def storage_used_bytes(session: Session, org_id: uuid.UUID | None = None) -> int:
    """Bytes held in object storage: each raw message and each attachment once (the rows of
    one message delivered to several inboxes share their objects); with `org_id`, the objects
    of that org's e-mails only."""
    emails = select(Email.raw_key.label("key"), func.max(Email.size_bytes).label("size"))
    attachments = (select(Attachment.storage_key.label("key"),
                          func.max(Attachment.size_bytes).label("size"))
                   .join(Email, Email.id == Attachment.email_id))
    if org_id is not None:
        emails = emails.join(Inbox, Inbox.id == Email.inbox_id).where(Inbox.org_id == org_id)
        attachments = (attachments.join(Inbox, Inbox.id == Email.inbox_id)
                       .where(Inbox.org_id == org_id))
    objects = union_all(emails.group_by(Email.raw_key),
                        attachments.group_by(Attachment.storage_key)).subquery()
    return int(session.scalar(select(func.coalesce(func.sum(objects.c.size), 0))) or 0)


def platform_stats(session: Session) -> dict[str, int]:
    """The ten figures of `GET /admin/stats` (docs/admin.md). `total_emails` counts every e-mail
    ever received (from the append-only counters, so it survives inbox cleanup);
    `active_inboxes` the inboxes not expired, `total_inboxes` every inbox still stored (expired
    ones until the cleanup takes them); `total_sessions` the active sessions; `total_api_keys`
    the keys not revoked (disabled and expired ones until the cleanup removes them)."""
    now = utcnow()
    return {
        "total_emails": int(session.scalar(select(func.coalesce(func.sum(MailCounter.emails), 0)))
                            or 0),
        "active_inboxes": _count(session, Inbox, Inbox.expires_at > now),
        "total_domains": _count(session, Domain),
        "total_users": _count(session, User),
        "total_teams": _count(session, Team),
        "storage_used_bytes": storage_used_bytes(session),
        "total_inboxes": _count(session, Inbox),
        "total_sessions": _count(session, UserSession, UserSession.revoked_at.is_(None),
                                 UserSession.expires_at > now),
        "total_webhooks": _count(session, Webhook),
        "total_api_keys": _count(session, ApiKey, ApiKey.revoked_at.is_(None)),
    }
