"""Org invitations: create (one or many), list, revoke, preview, accept, and expiry.

Rules kept here:
- an invite names an e-mail address, an org role, optional team assignments and the way the
  invitee must sign in (`password`, `sso` or `any`); nobody invites above their own role, and
  team assignments need `team.members.manage` in each team (and a team role no higher than the
  inviter's there);
- the token carries 256 random bits and only its SHA-256 hash is stored; the raw token leaves
  only in the invitation mail, which the action returns for the caller to send after commit;
- one pending invite per address and org; invites expire after `invites.ttl` (48 h) and the
  clock's `purge_expired_invites` job deletes lapsed ones;
- accepting needs a signed-in account with the invited address (and, for `password` or `sso`,
  an account that signs in that way: with a password, or SSO-only); it joins the org (an
  existing member keeps their role) and every assigned team that still exists and is not
  archived, marks the address verified (the mail reached its owner), and uses up the invite.
Actions flush but do not commit: the caller commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlalchemy import JSON, ForeignKey, String, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.security import hash_token, new_token
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey
from models.errors import Conflict, DomainError, Forbidden, NotFound, ValidationFailed
from models.identity.account_mail import OutgoingMail
from models.identity.users import MAX_EMAIL_LENGTH, User, normalise_email
from models.pagination import Page, paginate
from models.platform.audit import Origin
from models.tenancy.access import Caller, OrgAccess, audit, check_grant, demand
from models.tenancy.members import add_member, find_user, join_org
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.rbac import ORG_SCOPE, TEAM_SCOPE, load_grants
from models.tenancy.roster import BulkResult, MemberView, Skip, flush_or_conflict, run_bulk
from models.tenancy.teams import Team, TeamMember, team_access

PASSWORD = "password"  # noqa: S105 (an auth method name)
SSO = "sso"
ANY = "any"
AUTH_METHODS = (PASSWORD, SSO, ANY)


class Invite(UUIDKey, Base):
    """A pending invitation to an org (accepted, revoked and lapsed ones are deleted)."""

    __tablename__ = "invites"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              index=True)
    email: Mapped[str] = mapped_column(String(MAX_EMAIL_LENGTH))
    role: Mapped[str] = mapped_column(String(32))
    # [{"team_id": "<uuid>", "role": "<team role>"}], checked when the invite was made.
    team_assignments: Mapped[list[dict[str, str]]] = mapped_column(JSON, default=list)
    auth_method: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    invited_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(index=True)

    __table_args__ = (UniqueConstraint("org_id", "email"),)


@dataclass(frozen=True)
class InviteTeam:
    """A team an invite (still) leads into."""

    team_id: uuid.UUID
    name: str
    role: str


@dataclass(frozen=True)
class InvitePreview:
    """What the holder of an invite token may see before accepting."""

    org_id: uuid.UUID
    org_name: str
    email: str
    role: str
    teams: list[InviteTeam]
    auth_method: str
    invited_by_name: str | None
    expires_at: datetime


@dataclass(frozen=True)
class Invited:
    """One invite made, and its mail to send after commit."""

    invite: Invite
    mails: list[OutgoingMail]


@dataclass(frozen=True)
class BulkInvited:
    """The outcome per address, and the mails of the invites made, to send after commit."""

    result: BulkResult
    mails: list[OutgoingMail]


def invite_mail(settings: Settings, to: str, org_name: str, inviter: str | None,
                token: str) -> OutgoingMail:
    """The invitation message with the link that previews and accepts the invite."""
    base = settings.http.url
    hours = max(1, round(settings.invites.ttl.total_seconds() / 3600))
    who = f"{inviter} invited you" if inviter else "You are invited"
    return OutgoingMail(to=to, subject=f"Join {org_name} on Burnbox", text=(
        f"{who} to join {org_name} on Burnbox.\n\n"
        f"To accept, open:\n\n{base}/invites/{quote(token)}\n\n"
        f"(API clients: GET /api/v1/invites/{quote(token)}/preview, then POST "
        f"/api/v1/invites/{quote(token)}/accept while signed in as {to}.)\n\n"
        f"The invitation expires in {hours} hours. If you did not expect it, ignore this "
        "message.\n"))


def _assignments(session: Session, org: OrgAccess,
                 requested: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Check team assignments against the org, its teams and the inviter's team rights."""
    clean: list[dict[str, str]] = []
    seen: set[uuid.UUID] = set()
    for item in requested:
        team_id = uuid.UUID(str(item["team_id"]))
        team = session.get(Team, team_id)
        if team is None or team.org_id != org.org.id or team_id in seen:
            raise ValidationFailed("invalid team assignment", details={
                "team_assignments": [f"{team_id} is not a team of this org, or is repeated"]})
        if team.is_archived:
            raise ValidationFailed("invalid team assignment", details={
                "team_assignments": [f"team {team.name!r} is archived"]})
        role = org.grants.role(TEAM_SCOPE, str(item["role"]))
        if role is None:
            raise ValidationFailed("invalid team assignment", details={
                "team_assignments": [f"no team role {item['role']!r}"]})
        access = team_access(session, org, team)
        demand(access.permissions, "team.members.manage")
        check_grant(access.rank, role.rank)
        seen.add(team_id)
        clean.append({"team_id": str(team_id), "role": role.name})
    return clean


def _pending(session: Session, org_id: uuid.UUID, email: str) -> Invite | None:
    """The org's invite for `email`; a lapsed one is deleted and not returned."""
    invite = session.scalars(select(Invite).where(Invite.org_id == org_id,
                                                  Invite.email == email)).one_or_none()
    if invite is not None and invite.expires_at <= utcnow():
        session.delete(invite)
        session.flush()
        return None
    return invite


def _is_member(session: Session, org_id: uuid.UUID, email: str) -> bool:
    query = (select(OrgMember.user_id).join(User, User.id == OrgMember.user_id)
             .where(OrgMember.org_id == org_id, User.email == email))
    return session.scalar(query) is not None


def _inviter_name(session: Session, user_id: uuid.UUID | None) -> str | None:
    user = session.get(User, user_id) if user_id else None
    return user.display_name if user else None


def _make_invite(session: Session, settings: Settings, org: OrgAccess, email: str, role: str,
                 teams: list[dict[str, str]], auth_method: str) -> tuple[Invite, OutgoingMail]:
    token = new_token()
    now = utcnow()
    invite = Invite(id=uuid.uuid4(), org_id=org.org.id, email=email, role=role,
                    team_assignments=teams, auth_method=auth_method,
                    token_hash=hash_token(token), invited_by=org.caller.user_id, created_at=now,
                    expires_at=now + settings.invites.ttl)
    flush_or_conflict(session, "this address already has a pending invite", invite)
    audit(session, org.caller, "org.invite_create", org_id=org.org.id, resource_type="invite",
          resource_id=invite.id, after={"email": email, "role": role, "team_assignments": teams,
                                        "auth_method": auth_method})
    mail = invite_mail(settings, email, org.org.name,
                       _inviter_name(session, org.caller.user_id), token)
    return invite, mail


def _checked_terms(session: Session, org: OrgAccess, role: str,
                   team_assignments: Sequence[dict[str, Any]],
                   auth_method: str) -> tuple[str, list[dict[str, str]]]:
    granted = org.grants.named_role(ORG_SCOPE, role)
    check_grant(org.rank, granted.rank)
    if auth_method not in AUTH_METHODS:
        raise ValidationFailed("invalid auth method", details={
            "auth_method": [f"must be one of {', '.join(AUTH_METHODS)}"]})
    return granted.name, _assignments(session, org, team_assignments)


def create_invite(session: Session, settings: Settings, org: OrgAccess, *, email: str,
                  role: str, team_assignments: Sequence[dict[str, Any]] = (),
                  auth_method: str = ANY) -> Invited:
    """Invite one address. Raise ValidationFailed (address, role, teams, auth method),
    Forbidden (role or team rights above the caller's), Conflict (already a member, or a pending
    invite exists)."""
    address = normalise_email(email)
    role_name, teams = _checked_terms(session, org, role, team_assignments, auth_method)
    if _is_member(session, org.org.id, address):
        raise Conflict("this address already belongs to a member of the org")
    if _pending(session, org.org.id, address) is not None:
        raise Conflict("this address already has a pending invite; revoke it to invite again")
    invite, mail = _make_invite(session, settings, org, address, role_name, teams, auth_method)
    return Invited(invite=invite, mails=[mail])


def bulk_invite(session: Session, settings: Settings, org: OrgAccess, *, emails: Sequence[str],
                role: str, team_assignments: Sequence[dict[str, Any]] = (),
                auth_method: str = ANY) -> BulkInvited:
    """Invite many addresses on the same terms (checked once: bad terms fail the request).
    Each address is `created`, `skipped` (already a member or invited, or listed twice) or
    `failed` (not a valid address)."""
    role_name, teams = _checked_terms(session, org, role, team_assignments, auth_method)
    mails: list[OutgoingMail] = []
    seen: set[str] = set()

    def step(email: str) -> uuid.UUID:
        address = normalise_email(email)
        if address in seen:
            raise Skip("listed more than once")
        seen.add(address)
        if _is_member(session, org.org.id, address):
            raise Skip("already a member of the org")
        if _pending(session, org.org.id, address) is not None:
            raise Skip("already invited")
        invite, mail = _make_invite(session, settings, org, address, role_name, teams,
                                    auth_method)
        mails.append(mail)
        return invite.id

    return BulkInvited(result=run_bulk(session, emails, str, step, "created"), mails=mails)


# The one answer to a user_id the org may not add, whether an account has it or not.
NOT_INVITED = ("no user with this id has a pending invite to this org; invite them by e-mail "
               "instead")


def add_existing_member(session: Session, org: OrgAccess, *, user_id: uuid.UUID | None = None,
                        email: str | None = None, role: str) -> MemberView:
    """Add an existing account to the org (`POST /orgs/:id/members`), as `add_member` does.

    By `email`: the account with that address (the caller sent it; NotFound when none). By
    `user_id`: only a user the org already knows, one with a pending invite here (the invite
    is used up) or a member (Conflict); any other id is NotFound(NOT_INVITED), the same whether
    an account has it or not. Adding anyone by id once answered their e-mail address to a
    caller who never had it, and put them in an org they had not been asked to join.
    A bad role is refused (400, 403) before the user is looked at, as for an address."""
    if user_id is None:
        return add_member(session, org, email=email, role=role)
    check_grant(org.rank, org.grants.named_role(ORG_SCOPE, role).rank)
    user = session.get(User, user_id)
    invite = _pending(session, org.org.id, user.email) if user is not None else None
    if user is None or (invite is None and session.get(OrgMember, (org.org.id, user.id)) is None):
        raise NotFound(NOT_INVITED)
    view = add_member(session, org, user_id=user.id, role=role)
    if invite is not None:
        session.delete(invite)
        session.flush()
    return view


def add_or_invite(session: Session, settings: Settings, org: OrgAccess, *,
                  user_id: uuid.UUID | None = None, email: str | None = None,
                  role: str) -> MemberView | Invited:
    """Add the user when an account exists (as `add_existing_member`, whose rule for a user_id
    holds here too); otherwise invite the address on the same role, which needs
    `org.members.invite` as well."""
    if user_id is not None or find_user(session, user_id=None, email=email) is not None:
        return add_existing_member(session, org, user_id=user_id, email=email, role=role)
    demand(org.permissions, "org.members.invite")
    return create_invite(session, settings, org, email=email or "", role=role)


def list_invites(session: Session, org_id: uuid.UUID, page: int, per_page: int) -> Page[Invite]:
    """The org's invites (lapsed ones not yet purged included), newest first."""
    query = (select(Invite).where(Invite.org_id == org_id)
             .order_by(Invite.created_at.desc(), Invite.id))
    return paginate(session, query, page, per_page)


def revoke_invite(session: Session, org: OrgAccess, invite_id: uuid.UUID) -> None:
    """Delete one of the org's invites; NotFound for an invite of another org."""
    invite = session.get(Invite, invite_id)
    if invite is None or invite.org_id != org.org.id:
        raise NotFound("invite not found")
    audit(session, org.caller, "org.invite_revoke", org_id=org.org.id, resource_type="invite",
          resource_id=invite.id, before={"email": invite.email, "role": invite.role})
    session.delete(invite)
    session.flush()


def _by_token(session: Session, token: str, *, lock: bool = False) -> Invite:
    query = select(Invite).where(Invite.token_hash == hash_token(token))
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    invite = session.scalars(query).one_or_none()
    if invite is None or invite.expires_at <= utcnow():
        raise NotFound("invite not found or expired")
    return invite


def _live_teams(session: Session, invite: Invite) -> list[tuple[Team, str]]:
    """The invite's teams that still belong to its org and are not archived, with roles."""
    found = []
    for item in invite.team_assignments or []:
        team = session.get(Team, uuid.UUID(item["team_id"]))
        if team is not None and team.org_id == invite.org_id and not team.is_archived:
            found.append((team, item["role"]))
    return found


def preview_invite(session: Session, token: str) -> InvitePreview:
    """What an invite offers; NotFound for an unknown, used, revoked or lapsed token."""
    invite = _by_token(session, token)
    org = session.get(Org, invite.org_id)
    if org is None:
        raise NotFound("invite not found or expired")
    return InvitePreview(
        org_id=org.id, org_name=org.name, email=invite.email, role=invite.role,
        teams=[InviteTeam(team.id, team.name, role) for team, role in _live_teams(session,
                                                                                 invite)],
        auth_method=invite.auth_method, invited_by_name=_inviter_name(session,
                                                                      invite.invited_by),
        expires_at=invite.expires_at)


def accept_invite(session: Session, caller: Caller, user: User, token: str) -> Org:
    """Accept an invite as `user` (the caller); return the org joined. Raise NotFound (unknown
    or lapsed token), Forbidden (another address, or the wrong way of signing in), Conflict (the
    invited role no longer exists)."""
    invite = _by_token(session, token, lock=True)
    if invite.email != user.email:
        raise Forbidden("this invite is for another e-mail address")
    if invite.auth_method == PASSWORD and user.password_hash is None:
        raise Forbidden("this invite is for an account that signs in with a password")
    if invite.auth_method == SSO and user.password_hash is not None:
        raise Forbidden("this invite is for an account that signs in with single sign-on")
    org = session.get(Org, invite.org_id)
    if org is None:
        raise NotFound("invite not found or expired")
    if load_grants(session).role(ORG_SCOPE, invite.role) is None:
        raise Conflict("the invited role no longer exists; ask for a new invite")
    if session.get(OrgMember, (org.id, user.id)) is None:
        join_org(session, org.id, user, invite.role)
    joined = []
    for team, role in _live_teams(session, invite):
        if session.get(TeamMember, (team.id, user.id)) is None:
            session.add(TeamMember(team_id=team.id, user_id=user.id, role=role,
                                   created_at=utcnow()))
            joined.append(str(team.id))
    user.email_verified = True
    audit(session, caller, "org.invite_accept", org_id=org.id, resource_type="invite",
          resource_id=invite.id, after={"email": invite.email, "role": invite.role,
                                        "team_ids": joined})
    session.delete(invite)
    session.flush()
    return org


def accept_after_registration(session: Session, user_id: uuid.UUID, token: str,
                              origin: Origin) -> bool:
    """Accept the invite an account was registered with, when it is valid for that account;
    return whether it was. Anything else leaves the new account as it is (the
    invite can still be accepted later); an id that names no stored user (the registration
    answer for an address that already had an account) accepts nothing."""
    user = session.get(User, user_id)
    if user is None:
        return False
    try:
        with session.begin_nested():
            accept_invite(session, Caller(user_id=user.id, is_system_admin=False, origin=origin),
                          user, token)
    except DomainError:
        return False
    return True


def purge_expired_invites(session: Session) -> int:
    """Delete every lapsed invite; return how many went."""
    result = session.execute(delete(Invite).where(Invite.expires_at <= utcnow()))
    return int(getattr(result, "rowcount", 0) or 0)
