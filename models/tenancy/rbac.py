"""Roles and permissions, stored in the database: the one source of truth for every check.

A permission is a key such as `team.inboxes.create`, scoped to the org or to a team. A role is a
named set of permissions in one scope, with a rank (role changes need a strictly higher rank) and,
for org roles, `grants_all_teams`: its holders act with every team permission in every team of
their org. The five built-in roles and the built-in permissions are seeded by migration 0003
(`team.emails.release` by 0029, granted to team leads only); custom roles (`/admin/roles`)
are rows like any other, so they take effect through the same check with no code change; ranks
hard-coded beside them would make edits to roles do nothing.
API-key scopes are the team-scoped permission keys.

Memberships name their role (`org_members.role`, `team_members.role`); `load_grants` reads every
role with its permissions in three queries. Requests do not pay them: `GrantsCache` keeps the
grants per process and reloads them only when the grants revision in the key-value store (Redis,
or the process's memory store in the embedded mode) changes. Every write to roles or their
permissions must call `invalidate_grants(session, store)`: once the write commits, it sets a new
revision, and every process reloads on its next request (see docs/performance.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.kv import KeyValueStore
from models.caching import (
    GRANTS_REVISION_KEY,
    REVISION_MAX_AGE,
    RevisionedCache,
    Revisions,
    kept_in,
    new_revisions,
)
from models.db import Base, Timestamps, UUIDKey, after_commit
from models.errors import ValidationFailed

ORG_SCOPE = "org"
TEAM_SCOPE = "team"

# Built-in role names (the rows are seeded; these names are what code refers to).
OWNER = "owner"
ADMIN = "admin"
MEMBER = "member"
LEAD = "lead"

# The built-in permission keys and what each allows (descriptions are stored with them).
ORG_PERMISSIONS: Mapping[str, str] = {
    "org.view": "view the org and its teams",
    "org.settings.view": "view org settings",
    "org.settings.manage": "rename the org and edit its settings",
    "org.delete": "delete the org",
    "org.members.view": "view and search org members",
    "org.members.invite": "invite people, list and revoke invites",
    "org.members.add": "add existing users as org members",
    "org.members.remove": "deactivate org members",
    "org.members.role": "change org members' roles",
    "org.domains.view": "view the org's domains",
    "org.domains.manage": "add, verify, edit and delete domains",
    "org.teams.create": "create teams",
    "org.teams.delete": "delete teams",
    "org.teams.manage": "archive and restore teams",
    "org.audit.view": "view the org audit log",
    "org.audit.export": "export the org audit log",
    "org.analytics.view": "view org analytics",
}
TEAM_PERMISSIONS: Mapping[str, str] = {
    "team.view": "view team info",
    "team.settings.manage": "edit team settings",
    "team.members.view": "view team members",
    "team.members.manage": "add and remove team members",
    "team.members.role": "change team member roles",
    "team.domains.view": "view domain assignments",
    "team.domains.manage": "update domain assignment settings",
    "team.webhooks.view": "view webhooks and delivery logs",
    "team.webhooks.manage": "create, edit, delete webhooks",
    "team.apikeys.view": "view API keys",
    "team.apikeys.manage": "create, revoke, rotate API keys",
    "team.inboxes.view": "view team inboxes",
    "team.inboxes.create": "create inboxes",
    "team.inboxes.manage": "manage inboxes",
    "team.emails.view": "view emails and mark them read",
    "team.emails.manage": "delete emails",
    "team.emails.release": "send emails on to real mailboxes within the allowed recipients",
    "team.analytics.view": "view team analytics",
}


class Permission(Base):
    """One permission key, in the org or the team scope."""

    __tablename__ = "permissions"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    scope: Mapped[str] = mapped_column(String(8))
    description: Mapped[str] = mapped_column(String(200))


class Role(UUIDKey, Timestamps, Base):
    """A named set of permissions in one scope; built-in roles cannot be changed or removed."""

    __tablename__ = "roles"

    scope: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(32))
    # The name for people; NULL (the built-in roles) derives it from the name.
    label: Mapped[str | None] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(200))
    rank: Mapped[int]
    is_builtin: Mapped[bool] = mapped_column(default=False)
    grants_all_teams: Mapped[bool] = mapped_column(default=False)

    __table_args__ = (UniqueConstraint("scope", "name"),)


class RolePermission(Base):
    """One grant: `role_id` holds `permission_key`."""

    __tablename__ = "role_permissions"

    role_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("roles.id", ondelete="CASCADE"),
                                               primary_key=True)
    permission_key: Mapped[str] = mapped_column(
        ForeignKey("permissions.key", ondelete="CASCADE"), primary_key=True, index=True)


@dataclass(frozen=True)
class RoleGrant:
    """A role as the permission check sees it."""

    id: uuid.UUID
    scope: str
    name: str
    description: str
    rank: int
    is_builtin: bool
    grants_all_teams: bool
    permissions: frozenset[str]
    label: str


def role_label(role: Role) -> str:
    """The role's name for people: its label, else derived ("team_admin" -> "Team admin")."""
    return role.label or role.name.replace("_", " ").capitalize()


@dataclass(frozen=True)
class Catalogue:
    """Every role and permission of each scope: roles highest rank first, permissions by key."""

    org_roles: list[RoleGrant]
    team_roles: list[RoleGrant]
    org_permissions: list[Permission]
    team_permissions: list[Permission]


@dataclass(frozen=True)
class Grants:
    """Every role with its permissions, and every team-scoped permission key."""

    roles: Mapping[tuple[str, str], RoleGrant]
    team_permissions: frozenset[str]

    def role(self, scope: str, name: str) -> RoleGrant | None:
        """The role called `name` in `scope`, or None (a name no row carries grants nothing)."""
        return self.roles.get((scope, name))

    def named_role(self, scope: str, name: str) -> RoleGrant:
        """The role called `name` in `scope`; ValidationFailed (on `role`) when there is none:
        the role a caller asks to grant."""
        role = self.role(scope, name)
        if role is None:
            raise ValidationFailed(f"unknown {scope} role",
                                   details={"role": [f"no {scope} role {name!r}"]})
        return role

    def rank_of(self, scope: str, name: str) -> int:
        """The rank of the role called `name` in `scope`: 0 for an unknown role (a role a
        member holds that was deleted since ranks below every real one)."""
        role = self.role(scope, name)
        return role.rank if role else 0

    def permissions_of(self, scope: str, name: str | None) -> frozenset[str]:
        """What a holder of the role gets in its own scope (nothing for an unknown role)."""
        role = self.role(scope, name) if name else None
        return role.permissions if role else frozenset()


def load_grants(session: Session) -> Grants:
    """Read every role, its permissions, and the team-scoped permission keys."""
    granted: dict[uuid.UUID, set[str]] = {}
    for role_id, key in session.execute(select(RolePermission.role_id,
                                               RolePermission.permission_key)):
        granted.setdefault(role_id, set()).add(key)
    roles = {
        (role.scope, role.name): RoleGrant(
            id=role.id, scope=role.scope, name=role.name, description=role.description,
            rank=role.rank, is_builtin=role.is_builtin, grants_all_teams=role.grants_all_teams,
            permissions=frozenset(granted.get(role.id, ())), label=role_label(role))
        for role in session.scalars(select(Role))
    }
    team_keys = session.scalars(select(Permission.key).where(Permission.scope == TEAM_SCOPE))
    return Grants(roles=roles, team_permissions=frozenset(team_keys))


# The longest a process keeps grants without reloading: a safety net for an invalidation that
# could not reach the store (Redis down at that moment), not the way changes normally spread.
GRANTS_MAX_AGE = REVISION_MAX_AGE


def invalidate_grants(session: Session, store: KeyValueStore) -> None:
    """Make every process reload the grants once this session's transaction commits: call it
    in the transaction of every write to roles, role_permissions or permissions.

    After the commit, not before: a process reloading between a bump and the commit would read
    the old roles and keep them under the new revision. A rolled-back transaction bumps
    nothing."""
    after_commit(session, lambda: bump_grants_revision(store))


def bump_grants_revision(store: KeyValueStore) -> None:
    """Set a new grants revision now: every process reloads on its next request. For writes
    already committed (or made outside the ORM); `invalidate_grants` is the usual entry."""
    new_revisions(store, [GRANTS_REVISION_KEY])


class GrantsCache:
    """The grants of one process, reloaded when the store's grants revision changes
    (a `models.caching.RevisionedCache` of one entry).

    Each request costs no SQL while the revision stands, and its revision comes in the one
    read of every revision the request makes. With the store unreachable the grants are read
    from the database for the request and nothing is cached: never stale, only slower."""

    KEY = "rbac.grants"

    @classmethod
    def of(cls, caches: dict[str, Any]) -> GrantsCache:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, cls)

    def __init__(self, max_age: float = GRANTS_MAX_AGE) -> None:
        self._cache = RevisionedCache[Grants](GRANTS_REVISION_KEY, max_age=max_age, capacity=1)

    def get(self, session: Session, revisions: Revisions) -> Grants:
        """The current grants: cached, or read with `load_grants` when the revision moved."""
        grants = self._cache.get(revisions, self.KEY, lambda: load_grants(session))
        assert grants is not None  # load_grants never answers None
        return grants


def role_catalogue(session: Session) -> Catalogue:
    """Every role (custom ones too) with its permissions, and every permission."""
    roles = sorted(load_grants(session).roles.values(), key=lambda role: (-role.rank, role.name))
    permissions = list(session.scalars(select(Permission).order_by(Permission.key)))
    return Catalogue(
        org_roles=[role for role in roles if role.scope == ORG_SCOPE],
        team_roles=[role for role in roles if role.scope == TEAM_SCOPE],
        org_permissions=[p for p in permissions if p.scope == ORG_SCOPE],
        team_permissions=[p for p in permissions if p.scope == TEAM_SCOPE])
