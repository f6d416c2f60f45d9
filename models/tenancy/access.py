"""Who may do what in an org: the caller, their resolved access to one org, the rank rules, and
the audit helper every tenancy action uses.

Isolation: an org the caller is not a member of does not exist for them (NotFound, never a hint
that it exists); inside their own org a missing permission is Forbidden. System administrators
are not implicitly members of any org: they reach an org's resources only through endpoints that
are declared for system administrators (team transfer), where membership is not asked.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.errors import Forbidden, NotFound
from models.platform.audit import Origin, record_audit
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.rbac import ORG_SCOPE, Grants, RoleGrant

# The caller's user id in statements built once per process with the caller bound at each
# execution (`{CALLER_ID: caller.user_id}`): building a statement and computing its cache key
# costs SQLAlchemy more than running it (docs/performance.md).
CALLER_ID = "caller_id"


@dataclass(frozen=True)
class Caller:
    """The user acting, whether they hold system-admin rights for this request (read from the
    user row, never from a token; never through an API key), and where the request came from."""

    user_id: uuid.UUID
    is_system_admin: bool
    origin: Origin


@dataclass(frozen=True)
class OrgAccess:
    """The caller's standing in one org: their org role (None for a system administrator acting
    outside membership), the org permissions it grants, and the grants of every role (read once
    per request) for the actions that hand out roles."""

    caller: Caller
    org: Org
    role: RoleGrant | None
    permissions: frozenset[str]
    grants: Grants

    @property
    def rank(self) -> int:
        """The caller's org rank (0 without a role)."""
        return self.role.rank if self.role else 0

    @property
    def reaches_all_teams(self) -> bool:
        """True when the org role acts with every team permission in every team of the org."""
        return bool(self.role and self.role.grants_all_teams)


def resolve_org_access(session: Session, grants: Grants, caller: Caller, org_id: uuid.UUID, *,
                       as_system_admin: bool = False) -> OrgAccess:
    """The caller's access to `org_id`. Raise NotFound when the org does not exist or the caller
    is not a member of it, unless `as_system_admin` lets a system administrator in."""
    row = session.execute(
        select(Org, OrgMember.role).outerjoin(
            OrgMember, (OrgMember.org_id == Org.id) & (OrgMember.user_id == caller.user_id))
        .where(Org.id == org_id)).one_or_none()
    if row is None:
        raise NotFound("org not found")
    return org_access_of(grants, caller, row[0], row[1], as_system_admin=as_system_admin)


def org_access_of(grants: Grants, caller: Caller, org: Org, role_name: str | None, *,
                  as_system_admin: bool = False) -> OrgAccess:
    """The caller's access to `org`, where their org role is `role_name` (None: not a member);
    NotFound for a non-member, unless `as_system_admin` lets a system administrator in."""
    if role_name is None and not (as_system_admin and caller.is_system_admin):
        raise NotFound("org not found")
    role = grants.role(ORG_SCOPE, role_name) if role_name else None
    return OrgAccess(caller=caller, org=org, role=role,
                     permissions=role.permissions if role else frozenset(), grants=grants)


def demand(permissions: frozenset[str], permission: str) -> None:
    """Raise Forbidden unless `permission` is among `permissions`."""
    if permission not in permissions:
        raise Forbidden(f"missing permission {permission}")


def check_grant(actor_rank: int, new_rank: int) -> None:
    """Raise Forbidden when the actor would hand out a role above their own."""
    if new_rank > actor_rank:
        raise Forbidden("you cannot grant a role above your own")


def check_role_change(*, actor_rank: int, current_rank: int, new_rank: int,
                      is_self: bool) -> None:
    """Raise Forbidden unless the actor may move a member from `current_rank` to `new_rank`:
    anyone may lower their own role; changing someone else's needs a strictly higher rank than
    theirs, and never grants more than the actor's own."""
    if is_self:
        if new_rank > current_rank:
            raise Forbidden("you cannot raise your own role")
        return
    check_removal(actor_rank=actor_rank, target_rank=current_rank, is_self=False)
    check_grant(actor_rank, new_rank)


def check_removal(*, actor_rank: int, target_rank: int, is_self: bool) -> None:
    """Raise Forbidden unless the actor may remove a member of `target_rank` (anyone may remove
    themselves; removing someone else needs a strictly higher rank)."""
    if not is_self and actor_rank <= target_rank:
        raise Forbidden("this needs a role above the member's")


def audit(session: Session, caller: Caller, action: str, *, org_id: uuid.UUID | None,
          resource_type: str, resource_id: uuid.UUID | str | None,
          before: dict[str, Any] | None = None, after: dict[str, Any] | None = None) -> None:
    """Record an audit entry for a change the caller made (it commits with the change)."""
    record_audit(session, action, actor_id=caller.user_id, org_id=org_id,
                 resource_type=resource_type, resource_id=resource_id, ip=caller.origin.ip,
                 user_agent=caller.origin.user_agent, before=before, after=after,
                 channel=caller.origin.channel)
