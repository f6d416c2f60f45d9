"""The audit trail: who did what to which resource, from where, with before/after snapshots.

One table holds org events and platform events alike: `org_id` is NULL for platform events
(register, login, setup...), which a NOT NULL org_id would silently drop. Entries keep the
ids of actors and orgs without foreign keys, so deleting a user or an org keeps its history;
for the same reason the actor's e-mail and display name are copied into the entry when it is
written (a join at read time would lose them with the user).

Every entry has a `category` (the area it belongs to) and a `severity` (info, warning,
critical), both derived from the action name by `category_of` and `severity_of`, so a module
that adds an action gets them without touching this one. Reading and exporting the trail is
`models.platform.audit_log`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Uuid, column, select, table
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


# Severities, lowest first.
INFO = "info"
WARNING = "warning"
CRITICAL = "critical"
SEVERITIES = (INFO, WARNING, CRITICAL)

# Categories, and the action prefixes that fall in each (the longest matching prefix wins, so
# `org.member_` beats `org.`).
CATEGORIES = ("auth", "org", "member", "team", "domain", "inbox", "email", "webhook", "apikey",
              "admin")
_CATEGORY_PREFIXES = {
    "auth.": "auth", "session.": "auth",
    "org.": "org", "org.member_": "member", "org.invite_": "member", "team.member_": "member",
    "team.": "team",
    "domain.": "domain", "domain_assignment.": "domain",
    "inbox.": "inbox", "email.": "email", "webhook.": "webhook", "apikey.": "apikey",
    "admin.": "admin", "setup.": "admin", "platform.": "admin", "role.": "admin", "sso.": "admin",
}
# Actions whose entries are critical or warning; every other action is info.
_CRITICAL = frozenset({
    "auth.password_change", "auth.password_reset", "auth.account_delete", "auth.session_revoke",
    "admin.user_delete", "admin.user_sessions_revoke", "admin.user_migrate_auth",
    "sso.update", "sso.provider_create", "sso.provider_update", "sso.provider_delete",
    "sso.mapping_create", "sso.mapping_update", "sso.mapping_delete",
    "platform.settings_update", "org.member_role",
    "role.create", "role.update", "role.delete", "org.delete",
    "admin.role_created", "admin.role_updated", "admin.role_deleted", "admin.platform_updated",
    "admin.mailer_config_updated", "admin.storage_config_updated",
})
_WARNING = frozenset({
    "org.member_deactivate", "org.member_remove", "team.member_remove", "org.invite_create",
    "team.delete", "domain.delete", "webhook.delete", "inbox.delete", "email.delete",
    "domain_assignment.delete", "apikey.revoke", "inbox.smtp_credentials_revoke",
    "admin.user_update", "org.update", "email.release", "email.release_failed",
    "org.release_recipients_update", "team.release_recipients_update",
    "email.release_rule_create", "email.release_rule_update", "email.release_rule_delete",
    "org.settings_update", "auth.sso_unlink",
})
MAX_RESOURCE_NAME = 255
MAX_ACTOR_EMAIL = 254
MAX_ACTOR_NAME = 200
# The users table as the trail reads it: a table clause, not the identity entity, since this
# context is the lowest and imports no other (see models/platform/__init__.py).
_users = table("users", column("id", Uuid()), column("email"), column("display_name"))
# Keys of a before/after snapshot that name the resource, in order of preference.
_NAME_KEYS = ("name", "domain_name", "address", "email", "slug", "url")


def category_of(action: str) -> str:
    """The category of `action`: the one of its longest known prefix ("admin" if none)."""
    prefixes = [prefix for prefix in _CATEGORY_PREFIXES if action.startswith(prefix)]
    return _CATEGORY_PREFIXES[max(prefixes, key=len)] if prefixes else "admin"


def severity_of(action: str) -> str:
    """The severity of `action`: critical, warning or info."""
    if action in _CRITICAL:
        return CRITICAL
    return WARNING if action in _WARNING else INFO


def _resource_name(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str | None:
    """The resource's name as the snapshots tell it (the new one when it changed)."""
    for snapshot in (after, before):
        for key in _NAME_KEYS:
            value = (snapshot or {}).get(key)
            if isinstance(value, str) and value:
                return value[:MAX_RESOURCE_NAME]
    return None


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
    actor_email: Mapped[str | None] = mapped_column(String(MAX_ACTOR_EMAIL))
    actor_display_name: Mapped[str | None] = mapped_column(String(MAX_ACTOR_NAME))
    resource_name: Mapped[str | None] = mapped_column(String(MAX_RESOURCE_NAME))
    severity: Mapped[str] = mapped_column(String(8), default=INFO, server_default=INFO)
    category: Mapped[str] = mapped_column(String(16), default="admin", server_default="admin")

    # One index per equality filter of the list, each ending in created_at: a filtered page
    # newest-first is then an index range scan, not a sort of every matching entry (over a
    # million entries the sort alone would exceed the 50 ms target). Platform entries
    # (org_id NULL) use the same indexes.
    __table_args__ = (
        Index("ix_audit_log_org_id_created_at", "org_id", "created_at"),
        Index("ix_audit_log_created_at", "created_at"),
        Index("ix_audit_log_org_id_action_created_at", "org_id", "action", "created_at"),
        Index("ix_audit_log_org_id_actor_id_created_at", "org_id", "actor_id", "created_at"),
        Index("ix_audit_log_org_id_resource_type_created_at", "org_id", "resource_type",
              "created_at"),
        Index("ix_audit_log_org_id_severity_created_at", "org_id", "severity", "created_at"),
        Index("ix_audit_log_org_id_category_created_at", "org_id", "category", "created_at"),
    )


def record_audit(session: Session, action: str, *, actor_id: uuid.UUID | None,
                 org_id: uuid.UUID | None = None, resource_type: str,
                 resource_id: uuid.UUID | str | None, ip: str | None, user_agent: str | None,
                 before: dict[str, Any] | None = None,
                 after: dict[str, Any] | None = None, channel: str = API,
                 resource_name: str | None = None) -> AuditEntry:
    """Add an audit entry to the session's transaction (it commits, or not, with the change it
    describes). `org_id` None marks a platform event; `channel` is the face (API or CLI).
    The actor's e-mail and display name are copied from their user row; `resource_name`
    defaults to the name the snapshots give; severity and category follow the action."""
    actor = None if actor_id is None else session.execute(
        select(_users.c.email, _users.c.display_name).where(_users.c.id == actor_id)).first()
    entry = AuditEntry(
        id=uuid.uuid4(), created_at=utcnow(), action=action, actor_id=actor_id, org_id=org_id,
        resource_type=resource_type,
        resource_id=None if resource_id is None else str(resource_id),
        resource_name=(resource_name[:MAX_RESOURCE_NAME] if resource_name
                       else _resource_name(before, after)),
        ip=ip, user_agent=(user_agent or None) and user_agent[:512],
        channel=channel, before=before, after=after,
        actor_email=actor.email if actor else None,
        actor_display_name=actor.display_name if actor else None,
        severity=severity_of(action), category=category_of(action),
    )
    session.add(entry)
    return entry
