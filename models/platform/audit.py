"""The audit trail: who did what to which resource, from where, with before/after snapshots.

One table holds org events and platform events alike: `org_id` is NULL for platform events
(register, login, setup...), which a NOT NULL org_id would silently drop. Entries keep the
ids of actors and orgs without foreign keys, so deleting a user or an org keeps its history.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Index, String
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey

# Actions recorded by the identity code; other modules add their own names.
REGISTER = "auth.register"
REGISTER_EXISTING = "auth.register_existing_email"
LOGIN = "auth.login"
LOGIN_FAILED = "auth.login_failed"
PASSWORD_CHANGE = "auth.password_change"  # noqa: S105 (an action name)
PASSWORD_RESET = "auth.password_reset"  # noqa: S105 (an action name)
EMAIL_VERIFIED = "auth.email_verified"
ACCOUNT_DELETE = "auth.account_delete"
SESSION_REVOKE = "auth.session_revoke"
SETUP_COMPLETE = "setup.complete"
ADMIN_CREATE = "admin.create"

# The face an audited change came through: the HTTP API (web UI included) or the operator's
# `burnbox` command line.
API = "api"
CLI = "cli"


@dataclass(frozen=True)
class Origin:
    """Where a request came from: the resolved client IP and the User-Agent (None from the CLI),
    and the face it came through (`channel`: API or CLI)."""

    ip: str | None = None
    user_agent: str | None = None
    channel: str = API


class AuditEntry(UUIDKey, Base):
    """One audited action."""

    __tablename__ = "audit_log"

    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    action: Mapped[str] = mapped_column(String(64))
    actor_id: Mapped[uuid.UUID | None]
    org_id: Mapped[uuid.UUID | None]
    resource_type: Mapped[str] = mapped_column(String(32))
    resource_id: Mapped[str | None] = mapped_column(String(64))
    ip: Mapped[str | None] = mapped_column(String(45))
    user_agent: Mapped[str | None] = mapped_column(String(512))
    # API or CLI: an operator's command is told apart from a request made with the same
    # account (the CLI acts as a member of the org, see burnbox/cli).
    channel: Mapped[str] = mapped_column(String(8), default=API, server_default=API)
    before: Mapped[dict[str, Any] | None]
    after: Mapped[dict[str, Any] | None]

    __table_args__ = (
        Index("ix_audit_log_org_id_created_at", "org_id", "created_at"),
        Index("ix_audit_log_created_at", "created_at"),
    )


def record_audit(session: Session, action: str, *, actor_id: uuid.UUID | None,
                 org_id: uuid.UUID | None = None, resource_type: str,
                 resource_id: uuid.UUID | str | None, ip: str | None, user_agent: str | None,
                 before: dict[str, Any] | None = None,
                 after: dict[str, Any] | None = None, channel: str = API) -> AuditEntry:
    """Add an audit entry to the session's transaction (it commits, or not, with the change it
    describes). `org_id` None marks a platform event; `channel` is the face (API or CLI)."""
    entry = AuditEntry(
        id=uuid.uuid4(), created_at=utcnow(), action=action, actor_id=actor_id, org_id=org_id,
        resource_type=resource_type,
        resource_id=None if resource_id is None else str(resource_id),
        ip=ip, user_agent=(user_agent or None) and user_agent[:512],
        channel=channel, before=before, after=after,
    )
    session.add(entry)
    return entry
