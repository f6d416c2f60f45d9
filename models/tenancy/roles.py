"""Custom roles, managed by system administrators (POST/PATCH/DELETE /admin/roles).

A custom role is a row of `roles` like the built-in ones, so it takes effect through the same
permission check (models.tenancy.rbac) with no code change: an org role in org membership, a
team role in team membership, its permissions in API-key scopes as for any team role. The five
built-in roles cannot be changed or deleted here: code and migrations refer to them by name.

Every write ends in `roles_changed`, the one place that learns of a change to roles or grants,
so a per-process grants cache has one place to be invalidated. Each write is audited (org-less,
with before/after).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from burnbox.kv import KeyValueStore
from models.errors import Conflict, NotFound, ValidationFailed
from models.platform.audit import Origin, record_audit
from models.tenancy.invites import Invite
from models.tenancy.orgs import OrgMember
from models.tenancy.rbac import (
    ORG_SCOPE,
    TEAM_SCOPE,
    Permission,
    Role,
    RolePermission,
    invalidate_grants,
    role_label,
)
from models.tenancy.teams import TeamMember

ROLE_CREATED = "admin.role_created"
ROLE_UPDATED = "admin.role_updated"
ROLE_DELETED = "admin.role_deleted"
SCOPES = (ORG_SCOPE, TEAM_SCOPE)
# Lower-case, starting with a letter: role names are stored in memberships and invites and
# compared exactly, so "Auditor" and "auditor" must not both exist.
NAME = re.compile(r"[a-z][a-z0-9_]{1,31}")
MAX_RANK = 100


@dataclass(frozen=True)
class RoleDraft:
    """The fields of a role an administrator gives (None: not given, on update)."""

    label: str | None = None
    description: str | None = None
    rank: int | None = None
    permissions: list[str] | None = None
    grants_all_teams: bool | None = None


def role_snapshot(session: Session, role: Role) -> dict[str, Any]:
    """The role as the API shows it (and as the audit records before/after)."""
    keys = session.scalars(select(RolePermission.permission_key)
                           .where(RolePermission.role_id == role.id)
                           .order_by(RolePermission.permission_key))
    return {"id": str(role.id), "scope": role.scope, "name": role.name,
            "label": role_label(role), "description": role.description, "rank": role.rank,
            "is_builtin": role.is_builtin, "grants_all_teams": role.grants_all_teams,
            "permissions": list(keys)}


def roles_changed(session: Session, store: KeyValueStore) -> None:
    """Make a change to roles or grants visible to the permission checks of this transaction
    (flush), and to every process's grants cache once it commits (a new grants revision), so
    that it takes effect on the next request everywhere. Every role write calls it last."""
    session.flush()
    invalidate_grants(session, store)


def _checked_permissions(session: Session, scope: str, keys: Iterable[str]) -> list[str]:
    """`keys` sorted and deduplicated; ValidationFailed naming every key that is unknown or of
    the other scope (an org role cannot hold team permissions, nor the reverse)."""
    wanted = sorted(set(keys))
    known = set(session.scalars(select(Permission.key).where(Permission.scope == scope)))
    unknown = [key for key in wanted if key not in known]
    if unknown:
        raise ValidationFailed(f"unknown {scope} permission: {', '.join(unknown)}",
                               details={"permissions": [f"unknown {scope} permission: {key}"
                                                        for key in unknown]})
    return wanted


def _check_rank(rank: int) -> None:
    if not 1 <= rank <= MAX_RANK:
        raise ValidationFailed(f"rank must be between 1 and {MAX_RANK}",
                               details={"rank": [f"must be between 1 and {MAX_RANK}"]})


def _set_permissions(session: Session, role: Role, keys: list[str]) -> None:
    session.execute(delete(RolePermission).where(RolePermission.role_id == role.id))
    session.add_all(RolePermission(role_id=role.id, permission_key=key) for key in keys)


def create_role(session: Session, *, scope: str, name: str, draft: RoleDraft,
                actor_id: uuid.UUID, origin: Origin, store: KeyValueStore) -> Role:
    """Create a custom role. Raise ValidationFailed for an unknown scope, a malformed name or
    rank, or a permission that is unknown or of the other scope (nothing is written then);
    Conflict when the scope already has a role of that name. The caller commits."""
    if scope not in SCOPES:
        raise ValidationFailed("scope must be org or team", details={"scope": ["org or team"]})
    if NAME.fullmatch(name) is None:
        raise ValidationFailed("name must be 2-32 characters of a-z, 0-9 and _, starting with a "
                               "letter", details={"name": ["a-z, 0-9 and _, 2-32 characters"]})
    rank = 1 if draft.rank is None else draft.rank
    _check_rank(rank)
    keys = _checked_permissions(session, scope, draft.permissions or [])
    if draft.grants_all_teams and scope != ORG_SCOPE:
        raise ValidationFailed("only an org role can grant every team",
                               details={"grants_all_teams": ["org roles only"]})
    taken = session.scalar(select(func.count()).select_from(Role)
                           .where(Role.scope == scope, Role.name == name))
    if taken:
        raise Conflict(f"an {scope} role named {name} already exists")
    role = Role(id=uuid.uuid4(), scope=scope, name=name, label=draft.label or None,
                description=draft.description or "", rank=rank, is_builtin=False,
                grants_all_teams=bool(draft.grants_all_teams))
    session.add(role)
    session.flush()
    _set_permissions(session, role, keys)
    session.flush()
    record_audit(session, ROLE_CREATED, actor_id=actor_id, resource_type="role",
                 resource_id=role.id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, after=role_snapshot(session, role))
    roles_changed(session, store)
    return role


def _custom_role(session: Session, role_id: uuid.UUID, doing: str) -> Role:
    """The role `role_id`, locked; NotFound when missing, Conflict when built in."""
    role = session.scalars(select(Role).where(Role.id == role_id).with_for_update()).first()
    if role is None:
        raise NotFound("role not found")
    if role.is_builtin:
        raise Conflict(f"built-in roles cannot be {doing}")
    return role


def update_role(session: Session, role_id: uuid.UUID, draft: RoleDraft, *,
                actor_id: uuid.UUID, origin: Origin, store: KeyValueStore) -> Role:
    """Change a custom role's label, description, rank or grants_all_teams, and replace its
    permission set when `draft.permissions` is given. Raise NotFound, Conflict for a built-in
    role, ValidationFailed as `create_role` does. The caller commits."""
    role = _custom_role(session, role_id, "changed")
    before = role_snapshot(session, role)
    if draft.rank is not None:
        _check_rank(draft.rank)
        role.rank = draft.rank
    if draft.grants_all_teams is not None:
        if draft.grants_all_teams and role.scope != ORG_SCOPE:
            raise ValidationFailed("only an org role can grant every team",
                                   details={"grants_all_teams": ["org roles only"]})
        role.grants_all_teams = draft.grants_all_teams
    if draft.permissions is not None:
        _set_permissions(session, role, _checked_permissions(session, role.scope,
                                                             draft.permissions))
    if draft.label is not None:
        role.label = draft.label or None
    if draft.description is not None:
        role.description = draft.description
    session.flush()
    after = role_snapshot(session, role)
    if after != before:
        record_audit(session, ROLE_UPDATED, actor_id=actor_id, resource_type="role",
                     resource_id=role.id, ip=origin.ip, user_agent=origin.user_agent,
                     channel=origin.channel, before=before, after=after)
    roles_changed(session, store)
    return role


def holders(session: Session, role: Role) -> int:
    """Memberships and pending invitations that name the role."""
    if role.scope == ORG_SCOPE:
        members = session.scalar(select(func.count()).select_from(OrgMember)
                                 .where(OrgMember.role == role.name)) or 0
        invited = session.scalar(select(func.count()).select_from(Invite)
                                 .where(Invite.role == role.name)) or 0
        return members + invited
    members = session.scalar(select(func.count()).select_from(TeamMember)
                             .where(TeamMember.role == role.name)) or 0
    # Team roles of invitations sit in a JSON list; invitations are few and short-lived.
    invited = sum(1 for assignments in session.scalars(select(Invite.team_assignments))
                  for item in assignments or [] if item.get("role") == role.name)
    return members + invited


def delete_role(session: Session, role_id: uuid.UUID, *, actor_id: uuid.UUID,
                origin: Origin, store: KeyValueStore) -> None:
    """Delete a custom role. Raise NotFound; Conflict for a built-in role, or while a member
    or a pending invitation holds it (deleting it would leave them a role that grants
    nothing). The caller commits."""
    role = _custom_role(session, role_id, "deleted")
    held = holders(session, role)
    if held:
        raise Conflict(f"the role is held by {held} member(s) or invitation(s); change their "
                       "role first", details={"holders": held})
    before = role_snapshot(session, role)
    session.delete(role)
    session.flush()
    record_audit(session, ROLE_DELETED, actor_id=actor_id, resource_type="role",
                 resource_id=role_id, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel, before=before)
    roles_changed(session, store)
