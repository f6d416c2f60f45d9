"""Org members: add, list, search, change roles, deactivate.

Rules kept here: roles come from the database (`models.tenancy.rbac`); nobody hands out a role above
their own; changing someone else's role or deactivating them needs a strictly higher rank (anyone
may lower their own role or leave); an org always keeps at least one owner. Deactivation removes the
membership (the audit log keeps the record) and every team membership in the org, with whatever
the member held there (API keys), so nothing outlives their access: that action is
`models.lifecycle.memberships.deactivate_member`, which calls `removable_member` and
`remove_org_membership` here. Actions flush but do not commit: the caller commits.
"""

from __future__ import annotations

import dataclasses
import uuid

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.errors import Conflict, NotFound, ValidationFailed
from models.identity.users import User, find_by_email, normalise_email
from models.pagination import Page, paginate
from models.search import contains
from models.tenancy.access import OrgAccess, audit, check_grant, check_removal, check_role_change
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.rbac import ORG_SCOPE, OWNER
from models.tenancy.roster import (
    MemberView,
    as_audit,
    ensure_not_last_holder,
    flush_or_conflict,
    member_view,
    member_views,
)

MAX_QUERY = 200


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
    granted = org.grants.named_role(ORG_SCOPE, role)
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
    granted = org.grants.named_role(ORG_SCOPE, role)
    check_role_change(actor_rank=org.rank,
                      current_rank=org.grants.rank_of(ORG_SCOPE, member.role),
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


def removable_member(session: Session, org: OrgAccess, user_id: uuid.UUID) -> OrgMember:
    """The membership of `user_id`, once the caller may deactivate it: a member may deactivate
    themselves (leave); others need a strictly higher rank; the last owner cannot go. Raise
    NotFound, Forbidden or Conflict."""
    member = get_member(session, org.org.id, user_id)
    check_removal(actor_rank=org.rank,
                  target_rank=org.grants.rank_of(ORG_SCOPE, member.role),
                  is_self=user_id == org.caller.user_id)
    _ensure_not_last_owner(session, member)
    return member


def remove_org_membership(session: Session, org: OrgAccess, member: OrgMember,
                          team_ids: list[str]) -> None:
    """The tenancy part of a deactivation (checked by `removable_member`, after the member's
    `team_ids` memberships went): delete the row and audit it. The whole action is
    `models.lifecycle.memberships.deactivate_member`."""
    view = member_view(session, member)
    session.delete(member)
    session.flush()
    audit(session, org.caller, "org.member_deactivate", org_id=org.org.id,
          resource_type="org_member", resource_id=view.user_id,
          before={**as_audit(view), "team_ids": team_ids})
