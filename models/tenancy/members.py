"""Org members: add, list, search, change roles, deactivate.

Rules kept here: roles come from the database (`models.tenancy.rbac`); nobody hands out a role above
their own; changing someone else's role or deactivating them needs a strictly higher rank (anyone
may lower their own role or leave); an org always keeps at least one owner. Deactivation removes the
membership (the audit log keeps the record) and every team membership in the org, through the
team leave hooks, so whatever a member held in a team (API keys) goes with them instead of
outliving their access.
Actions flush but do not commit: the caller commits.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.errors import Conflict, NotFound, ValidationFailed
from models.identity.users import User, find_by_email, normalise_email
from models.pagination import Page, paginate
from models.search import contains
from models.tenancy.access import OrgAccess, audit, check_grant, check_removal, check_role_change
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.rbac import ORG_SCOPE, OWNER, RoleGrant
from models.tenancy.roster import (
    MemberView,
    as_audit,
    ensure_not_last_holder,
    flush_or_conflict,
    member_view,
    member_views,
)
from models.tenancy.teams import Team, TeamMember, drop_team_member

MAX_QUERY = 200
OrgLeaveHook = Callable[[Session, uuid.UUID, uuid.UUID], None]
_org_leave_hooks: list[OrgLeaveHook] = []


def on_member_leaving_org(hook: OrgLeaveHook) -> OrgLeaveHook:
    """Call `hook(session, org_id, user_id)` when a member is deactivated, after their team
    memberships went (through the team leave hooks) and before the org membership goes: for
    what they held in the org outside any team membership (an admin's API keys in a team they
    reach through their org role)."""
    if hook not in _org_leave_hooks:
        _org_leave_hooks.append(hook)
    return hook


def org_role(org: OrgAccess, name: str) -> RoleGrant:
    """The org role called `name`; ValidationFailed when there is none."""
    role = org.grants.role(ORG_SCOPE, name)
    if role is None:
        raise ValidationFailed("unknown org role", details={"role": [f"no org role {name!r}"]})
    return role


def _rank_of(org: OrgAccess, role_name: str) -> int:
    role = org.grants.role(ORG_SCOPE, role_name)
    return role.rank if role else 0


def list_members(session: Session, org_id: uuid.UUID, page: int,
                 per_page: int) -> Page[MemberView]:
    """The org's members, oldest first."""
    query = (select(OrgMember).where(OrgMember.org_id == org_id)
             .order_by(OrgMember.created_at, OrgMember.user_id))
    found = paginate(session, query, page, per_page)
    return dataclasses.replace(found, data=member_views(session, found.data))


def search_members(session: Session, org_id: uuid.UUID, text: str, page: int,
                   per_page: int) -> Page[MemberView]:
    """The org's members whose e-mail or display name contains `text` (any case), by e-mail."""
    needle = text.strip().lower()
    if not 1 <= len(needle) <= MAX_QUERY:
        raise ValidationFailed("invalid search", details={"q": [f"must be 1-{MAX_QUERY} "
                                                                "characters"]})
    query = (select(OrgMember).join(User, User.id == OrgMember.user_id)
             .where(OrgMember.org_id == org_id,
                    or_(contains(func.lower(User.email), needle),
                        contains(func.lower(User.display_name), needle)))
             .order_by(User.email, OrgMember.user_id))
    found = paginate(session, query, page, per_page)
    return dataclasses.replace(found, data=member_views(session, found.data))


def get_member(session: Session, org_id: uuid.UUID, user_id: uuid.UUID) -> OrgMember:
    """The membership of `user_id` in the org; NotFound when they are not a member."""
    member = session.get(OrgMember, (org_id, user_id))
    if member is None:
        raise NotFound("member not found")
    return member


def add_member(session: Session, org: OrgAccess, *, user_id: uuid.UUID | None = None,
               email: str | None = None, role: str) -> MemberView:
    """Make an existing user a member with an org role no higher than the caller's. Raise
    NotFound (no such user), ValidationFailed (unknown role, no user given), Forbidden (role too
    high), Conflict (already a member)."""
    granted = org_role(org, role)
    check_grant(org.rank, granted.rank)
    user = find_user(session, user_id=user_id, email=email)
    if user is None:
        raise NotFound("no user with this id or e-mail address; invite them instead")
    view = member_view(session, join_org(session, org.org.id, user, granted.name))
    audit(session, org.caller, "org.member_add", org_id=org.org.id, resource_type="org_member",
          resource_id=user.id, after=as_audit(view))
    return view


def find_user(session: Session, *, user_id: uuid.UUID | None, email: str | None) -> User | None:
    """The user with this id, else with this address; None when there is none."""
    if user_id is not None:
        return session.get(User, user_id)
    if not email:
        raise ValidationFailed("give user_id or email", details={"user_id": ["or email"]})
    return find_by_email(session, normalise_email(email))


def join_org(session: Session, org_id: uuid.UUID, user: User, role: str) -> OrgMember:
    """Add `user` to the org with `role`, unchecked and unaudited (the caller does both).
    Raise Conflict when they are a member already."""
    if session.get(OrgMember, (org_id, user.id)) is not None:
        raise Conflict("already a member of this org")
    member = OrgMember(org_id=org_id, user_id=user.id, role=role, created_at=utcnow())
    flush_or_conflict(session, "already a member of this org", member)
    return member


def _ensure_not_last_owner(session: Session, member: OrgMember) -> None:
    ensure_not_last_holder(session, member, OWNER, group_key=Org.id,
                           member_group_key=OrgMember.org_id, group_name="an org")


def change_member_role(session: Session, org: OrgAccess, user_id: uuid.UUID,
                       role: str) -> MemberView:
    """Give a member another org role, under the rank rules; the last owner stays owner."""
    member = get_member(session, org.org.id, user_id)
    granted = org_role(org, role)
    check_role_change(actor_rank=org.rank, current_rank=_rank_of(org, member.role),
                      new_rank=granted.rank, is_self=user_id == org.caller.user_id)
    if granted.name == member.role:
        return member_view(session, member)
    _ensure_not_last_owner(session, member)
    before = member.role
    member.role = granted.name
    session.flush()
    audit(session, org.caller, "org.member_role", org_id=org.org.id, resource_type="org_member",
          resource_id=user_id, before={"role": before}, after={"role": granted.name})
    return member_view(session, member)


def deactivate_member(session: Session, org: OrgAccess, user_id: uuid.UUID) -> None:
    """Remove a member from the org and from every team of it (running the team leave hooks).
    A member may deactivate themselves (leave); others need a strictly higher rank; the last
    owner cannot go. Teams left without a lead stay reachable by the org's owners and admins."""
    member = get_member(session, org.org.id, user_id)
    check_removal(actor_rank=org.rank, target_rank=_rank_of(org, member.role),
                  is_self=user_id == org.caller.user_id)
    _ensure_not_last_owner(session, member)
    view = member_view(session, member)
    team_rows = session.scalars(
        select(TeamMember).join(Team, Team.id == TeamMember.team_id)
        .where(Team.org_id == org.org.id, TeamMember.user_id == user_id))
    teams = []
    for team_member in list(team_rows):
        teams.append(str(team_member.team_id))
        drop_team_member(session, team_member)
    for hook in list(_org_leave_hooks):
        hook(session, org.org.id, user_id)
    session.delete(member)
    session.flush()
    audit(session, org.caller, "org.member_deactivate", org_id=org.org.id,
          resource_type="org_member", resource_id=user_id,
          before={**as_audit(view), "team_ids": teams})
