"""Teams and team members: the entities, the caller's access to a team, and the team actions.

Rules kept here:
- a team belongs to one org; its name (through its slug) is unique within the org;
- only org members can be team members; org roles that grant all teams (owner, admin) act with
  every team permission in every team of their org, and outrank every team role;
- an archived team refuses new members (and, through `ensure_team_active`, new inboxes, webhooks
  and API keys); restoring it lifts that;
- the last lead of a team cannot leave or be demoted; role changes and removals of others need a
  strictly higher rank;
- every change is audited. Actions flush but do not commit: the caller commits.

Deleting a team, moving it to another org and taking a member out of it reach what other
contexts keep in the team (inboxes, assignments, API keys): those actions are
`models.lifecycle.teams` and `models.lifecycle.memberships`, which run each context's step and
this module's part (`removable_team_member` and `remove_team_membership`, `drop_team_member`,
`remove_team`, `check_transfer` and `move_team`).
"""

from __future__ import annotations

import dataclasses
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ForeignKey,
    Select,
    String,
    UniqueConstraint,
    bindparam,
    func,
    select,
    union,
)
from sqlalchemy.orm import Mapped, Session, column_property, mapped_column

from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import Base, Timestamps, UUIDKey
from models.errors import Conflict, NotFound, ValidationFailed
from models.identity.users import User, normalise_email
from models.pagination import Page, paginate
from models.tenancy.access import (
    CALLER_ID,
    Caller,
    OrgAccess,
    audit,
    check_grant,
    check_removal,
    check_role_change,
    org_access_of,
)
from models.tenancy.orgs import Org, OrgMember, slugify
from models.tenancy.rbac import LEAD, ORG_SCOPE, TEAM_SCOPE, Grants, RoleGrant
from models.tenancy.roster import (
    BulkResult,
    MemberView,
    Skip,
    as_audit,
    ensure_not_last_holder,
    flush_or_conflict,
    member_view,
    member_views,
    run_bulk,
)
from models.tenancy.settings_cascade import TEAM, effective_settings, stored_layer, validate_layer

MAX_NAME = 200
MAX_SLUG = 64
MAX_DESCRIPTION = 1000
# The team rank of an org role that grants all teams: above every team role.
ABOVE_TEAM_ROLES = sys.maxsize


class Team(UUIDKey, Timestamps, Base):
    """A team of an org: it owns inboxes, webhooks and API keys."""

    __tablename__ = "teams"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              index=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME))
    slug: Mapped[str] = mapped_column(String(MAX_SLUG))
    description: Mapped[str] = mapped_column(String(MAX_DESCRIPTION), default="")
    is_archived: Mapped[bool] = mapped_column(default=False)
    archived_at: Mapped[datetime | None]
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)

    __table_args__ = (UniqueConstraint("org_id", "slug"),)


class TeamMember(Base):
    """A user's membership of a team, with their team role."""

    __tablename__ = "team_members"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"),
                                               primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"),
                                               primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


Team.member_count = column_property(
    select(func.count()).where(TeamMember.team_id == Team.id)
    .correlate_except(TeamMember).scalar_subquery())


def team_layer(session: Session, org_id: uuid.UUID, team_id: uuid.UUID) -> dict[str, Any]:
    """The team level of the settings cascade: the typed overrides of the org's team `team_id`.
    Raise NotFound when it is missing or another org's."""
    team = session.get(Team, team_id)
    if team is None or team.org_id != org_id:
        raise NotFound(f"{TEAM} not found")
    return stored_layer(team.settings or {})


def drop_team_member(session: Session, member: TeamMember) -> None:
    """Delete a membership row (no checks, no audit); `models.lifecycle.memberships` revokes
    what the member held in the team first."""
    session.delete(member)
    session.flush()


# --- access ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class TeamAccess:
    """The caller's standing in one team of an org: their team role (None when they are not a
    member) and every permission they hold there (org permissions included)."""

    org: OrgAccess
    team: Team
    role: RoleGrant | None
    permissions: frozenset[str]

    @property
    def rank(self) -> int:
        """The caller's team rank: above every team role when the org role grants all teams."""
        if self.org.reaches_all_teams:
            return ABOVE_TEAM_ROLES
        return self.role.rank if self.role else 0


def team_access(session: Session, org: OrgAccess, team: Team) -> TeamAccess:
    """The caller's access to `team` (a team of `org.org`)."""
    role_name = session.scalar(select(TeamMember.role).where(
        TeamMember.team_id == team.id, TeamMember.user_id == org.caller.user_id))
    return team_access_of(org, team, role_name)


def team_access_of(org: OrgAccess, team: Team, role_name: str | None) -> TeamAccess:
    """The caller's access to `team` (a team of `org.org`), where their team role is
    `role_name` (None: not a member of the team), for a query that read it with the team."""
    role = org.grants.role(TEAM_SCOPE, role_name) if role_name else None
    return TeamAccess(org=org, team=team, role=role,
                      permissions=held_in_team(org.grants, org.role, role))


def held_in_team(grants: Grants, org_role: RoleGrant | None,
                 team_role: RoleGrant | None) -> frozenset[str]:
    """Every permission a holder of `org_role` in the org and `team_role` in one of its teams
    (either None for no role) holds in that team: both roles' own, and every team permission
    when the org role reaches all teams. The one rule `team_access`, `TEAMS_HOLDING` and the
    inbox access query (`models.mail.inboxes.access_of`) share."""
    held = org_role.permissions if org_role else frozenset()
    if team_role is not None:
        held |= team_role.permissions
    if org_role is not None and org_role.grants_all_teams:
        held |= grants.team_permissions
    return held


def resolve_team_access(session: Session, org: OrgAccess, team_id: uuid.UUID) -> TeamAccess:
    """The caller's access to team `team_id` of the org; NotFound when the org has no such team
    (a team of another org included: ids never cross orgs)."""
    team = session.get(Team, team_id)
    if team is None or team.org_id != org.org.id:
        raise NotFound("team not found")
    return team_access(session, org, team)


def _org_team_with_roles() -> Select[Any]:
    caller_id = bindparam(CALLER_ID)
    org_membership = (OrgMember.org_id == Org.id) & (OrgMember.user_id == caller_id)
    team_membership = (TeamMember.team_id == Team.id) & (TeamMember.user_id == caller_id)
    return (select(Org, OrgMember.role, Team, TeamMember.role)
            .outerjoin(OrgMember, org_membership)
            .outerjoin(Team, (Team.id == bindparam("team_id")) & (Team.org_id == Org.id))
            .outerjoin(TeamMember, team_membership)
            .where(Org.id == bindparam("org_id")))


_ORG_TEAM_WITH_ROLES = _org_team_with_roles()


def resolve_org_team_access(session: Session, grants: Grants, caller: Caller, org_id: uuid.UUID,
                            team_id: uuid.UUID, *, as_system_admin: bool = False) -> TeamAccess:
    """The caller's access to team `team_id` of org `org_id` in one statement (the org, the
    team and the caller's memberships of both): what `resolve_org_access` then
    `resolve_team_access` give, with their NotFound answers, in one statement instead of three."""
    row = session.execute(_ORG_TEAM_WITH_ROLES, {"org_id": org_id, "team_id": team_id,
                                                 CALLER_ID: caller.user_id}).one_or_none()
    if row is None:
        raise NotFound("org not found")
    org_row, org_role, team, team_role = row
    org = org_access_of(grants, caller, org_row, org_role, as_system_admin=as_system_admin)
    if team is None:
        raise NotFound("team not found")
    return team_access_of(org, team, team_role)


# The names `holding` binds in TEAMS_HOLDING (with the caller as CALLER_ID).
HOLDING_ORG_ROLES = "holding_org_roles"
HOLDING_TEAM_ROLES = "holding_team_roles"


def _teams_holding() -> Select[Any]:
    caller_id = bindparam(CALLER_ID)
    membership = (OrgMember.org_id == Team.org_id) & (OrgMember.user_id == caller_id)
    through_org = (select(Team.id).join(OrgMember, membership)
                   .where(OrgMember.role.in_(bindparam(HOLDING_ORG_ROLES, expanding=True))))
    through_team = (select(TeamMember.team_id).join(Team, Team.id == TeamMember.team_id)
                    .join(OrgMember, membership)
                    .where(TeamMember.user_id == caller_id,
                           TeamMember.role.in_(bindparam(HOLDING_TEAM_ROLES, expanding=True))))
    return union(through_org, through_team)  # type: ignore[return-value]


# The ids of every team (archived ones included) in which the user bound as CALLER_ID holds a
# permission, given the role names that hold it (`holding`): to run, or to nest as a subquery.
# Every team of the orgs where their org role grants it (directly, or by reaching all teams),
# and the teams of their orgs where their team role grants it: the rule of `held_in_team`,
# which is a union of the org role's part and the team role's part, turned into role names the
# database matches. Built once (see CALLER_ID).
TEAMS_HOLDING = _teams_holding()


def holding(grants: Grants, user_id: uuid.UUID, permission: str) -> dict[str, Any]:
    """The parameters of TEAMS_HOLDING for the teams where the user holds `permission`."""
    return {
        CALLER_ID: user_id,
        HOLDING_ORG_ROLES: [role.name for (scope, _), role in grants.roles.items()
                            if scope == ORG_SCOPE and permission in held_in_team(grants, role,
                                                                                  None)],
        HOLDING_TEAM_ROLES: [role.name for (scope, _), role in grants.roles.items()
                             if scope == TEAM_SCOPE and permission in role.permissions]}


def team_ids_with_permission(session: Session, grants: Grants, user_id: uuid.UUID,
                             permission: str) -> list[uuid.UUID]:
    """Ids of every team in which the user holds `permission` (see TEAMS_HOLDING)."""
    return list(session.scalars(TEAMS_HOLDING, holding(grants, user_id, permission)))


def ensure_team_active(team: Team) -> None:
    """Raise Conflict when the team is archived (it takes no new members, inboxes, webhooks or
    API keys until restored)."""
    if team.is_archived:
        raise Conflict("the team is archived; restore it first")


# --- teams ----------------------------------------------------------------------------------

def snapshot(team: Team) -> dict[str, Any]:
    """A team's audit snapshot."""
    return {"name": team.name, "slug": team.slug, "description": team.description,
            "is_archived": team.is_archived, "settings": dict(team.settings or {})}


def list_teams(session: Session, org_id: uuid.UUID, page: int, per_page: int) -> Page[Team]:
    """The org's teams, archived ones included, by name."""
    query = select(Team).where(Team.org_id == org_id).order_by(Team.name, Team.id)
    return paginate(session, query, page, per_page)


def find_team(session: Session, reference: str) -> Team:
    """The team an operator names (the command line): its id, `<org slug>/<team slug>`, or a
    team slug that only one org uses. Raise NotFound, or ValidationFailed when the slug is used
    in several orgs (naming them, so the operator can write `<org slug>/<team slug>`)."""
    text = reference.strip()
    try:
        team = session.get(Team, uuid.UUID(text))
    except ValueError:
        org_slug, _, team_slug = text.rpartition("/")
        query = select(Team, Org.slug).join(Org, Org.id == Team.org_id).where(
            Team.slug == team_slug.lower())
        if org_slug:
            query = query.where(Org.slug == org_slug.lower())
        rows = session.execute(query.order_by(Org.slug)).all()
        if len(rows) > 1:
            raise ValidationFailed(f"several orgs have a team {team_slug!r}; name one of "
                                   + ", ".join(f"{org}/{row.slug}" for row, org in rows),
                                   details={"team": ["ambiguous"]}) from None
        team = rows[0][0] if rows else None
    if team is None:
        raise NotFound(f"no team {text!r}")
    return team


def find_only_team(session: Session, user_id: uuid.UUID | None = None) -> Team:
    """The one team an operator means by naming none: the platform's only team, or with
    `user_id` the only team that user is a member of. Raise ValidationFailed when there is
    none or there are several (naming them, `<org slug>/<team slug>`, so the operator can
    choose)."""
    query = select(Team, Org.slug).join(Org, Org.id == Team.org_id)
    if user_id is not None:
        query = query.join(TeamMember, TeamMember.team_id == Team.id).where(
            TeamMember.user_id == user_id)
    rows = session.execute(query.order_by(Org.slug, Team.slug).limit(6)).all()
    if len(rows) == 1:
        return rows[0][0]
    if not rows:
        raise ValidationFailed("there is no team yet: make one first (burnbox bootstrap does)",
                               details={"team": ["required"]})
    names = ", ".join(f"{org}/{team.slug}" for team, org in rows[:5])
    raise ValidationFailed(f"there are several teams ({names}{', ...' if len(rows) > 5 else ''})"
                           ": choose one with --team", details={"team": ["required"]})


def _clean_name(name: str) -> tuple[str, str]:
    clean = name.strip()
    if not 1 <= len(clean) <= MAX_NAME:
        raise ValidationFailed("invalid team name",
                               details={"name": [f"must be 1-{MAX_NAME} characters"]})
    return clean, slugify(clean)[:MAX_SLUG]


def _clean_description(description: str) -> str:
    clean = description.strip()
    if len(clean) > MAX_DESCRIPTION:
        raise ValidationFailed("invalid description", details={
            "description": [f"must be at most {MAX_DESCRIPTION} characters"]})
    return clean


def _ensure_slug_free(session: Session, org_id: uuid.UUID, slug: str, name: str,
                      except_id: uuid.UUID | None = None) -> None:
    query = select(Team.id).where(Team.org_id == org_id, Team.slug == slug)
    if except_id is not None:
        query = query.where(Team.id != except_id)
    if session.scalar(query) is not None:
        raise Conflict(f"the org already has a team named {name!r}")


def create_team(session: Session, settings: Settings, org: OrgAccess, *, name: str,
                description: str = "") -> Team:
    """Add a team to the org, with the caller as its lead. Raise ValidationFailed for a bad
    name or description, Conflict when the name is taken or the org's `max_teams` is reached."""
    clean, slug = _clean_name(name)
    description = _clean_description(description)
    limit = effective_settings(session, settings, org.org.id).max_teams
    # Serialise team creation per org, so two requests cannot both take the last place.
    session.execute(select(Org.id).where(Org.id == org.org.id).with_for_update())
    count = session.scalar(select(func.count()).select_from(Team)
                           .where(Team.org_id == org.org.id)) or 0
    if limit and count >= limit:
        raise Conflict(f"the org has reached its limit of {limit} teams")
    _ensure_slug_free(session, org.org.id, slug, clean)
    now = utcnow()
    team = Team(id=uuid.uuid4(), org_id=org.org.id, name=clean, slug=slug,
                description=description, is_archived=False, archived_at=None, settings={},
                created_at=now, updated_at=now)
    flush_or_conflict(session, f"the org already has a team named {clean!r}", team)
    session.add(TeamMember(team_id=team.id, user_id=org.caller.user_id, role=LEAD,
                           created_at=now))
    session.flush()
    audit(session, org.caller, "team.create", org_id=org.org.id, resource_type="team",
          resource_id=team.id, after=snapshot(team))
    return team


def update_team(session: Session, settings: Settings, access: TeamAccess, *,
                name: str | None = None, description: str | None = None,
                overrides: dict[str, Any] | None = None) -> Team:
    """Rename the team, change its description, and merge `overrides` into its settings (a
    None value clears a key). Raise ValidationFailed or Conflict (name taken)."""
    team = access.team
    before = snapshot(team)
    if name is not None:
        clean, slug = _clean_name(name)
        _ensure_slug_free(session, team.org_id, slug, clean, except_id=team.id)
        team.name, team.slug = clean, slug
    if description is not None:
        team.description = _clean_description(description)
    if overrides is not None:
        merged = {**(team.settings or {}), **overrides}
        above = effective_settings(session, settings, team.org_id)
        team.settings = validate_layer(TEAM, merged, above)
    flush_or_conflict(session, f"the org already has a team named {team.name!r}")
    after = snapshot(team)
    if after != before:
        audit(session, access.org.caller, "team.update", org_id=team.org_id,
              resource_type="team", resource_id=team.id, before=before, after=after)
    return team


def count_team_members(session: Session, team_id: uuid.UUID) -> int:
    """How many members the team has."""
    return session.scalar(select(func.count()).select_from(TeamMember)
                          .where(TeamMember.team_id == team_id)) or 0


def remove_team(session: Session, access: TeamAccess, impact: dict[str, int]) -> None:
    """The tenancy part of a team deletion: audit it with `impact` and delete the row (the
    database cascades). The whole action is `models.lifecycle.teams.delete_team`."""
    team = access.team
    audit(session, access.org.caller, "team.delete", org_id=team.org_id, resource_type="team",
          resource_id=team.id, before={**snapshot(team), "impact": impact})
    session.delete(team)
    session.flush()


def set_archived(session: Session, access: TeamAccess, archived: bool) -> Team:
    """Archive or restore the team; doing it twice changes nothing more."""
    team = access.team
    if team.is_archived == archived:
        return team
    team.is_archived = archived
    team.archived_at = utcnow() if archived else None
    audit(session, access.org.caller, "team.archive" if archived else "team.restore",
          org_id=team.org_id, resource_type="team", resource_id=team.id)
    session.flush()
    return team


def check_transfer(session: Session, team: Team, target_org_id: uuid.UUID) -> Org:
    """The org a team may move to (a system administrator's action). Raise NotFound for an
    unknown target, ValidationFailed for the same org, Conflict when the target has a team of
    the same name."""
    if target_org_id == team.org_id:
        raise ValidationFailed("the team already belongs to this org",
                               details={"target_org_id": ["must be another org"]})
    target = session.get(Org, target_org_id)
    if target is None:
        raise NotFound("target org not found")
    _ensure_slug_free(session, target.id, team.slug, team.name)
    return target


def move_team(session: Session, access: TeamAccess, target: Org) -> Team:
    """The tenancy part of a transfer (checked by `check_transfer`): give the team to `target`,
    audited in both orgs. The whole action is `models.lifecycle.teams.transfer_team`."""
    team = access.team
    source_id = team.org_id
    team.org_id = target.id
    flush_or_conflict(session, f"the org already has a team named {team.name!r}")
    session.expire(team, ["member_count"])
    for org_id in (source_id, target.id):
        audit(session, access.org.caller, "team.transfer", org_id=org_id, resource_type="team",
              resource_id=team.id, before={"org_id": str(source_id)},
              after={"org_id": str(target.id)})
    return team


# --- team members ---------------------------------------------------------------------------

def list_team_members(session: Session, team_id: uuid.UUID, page: int,
                      per_page: int) -> Page[MemberView]:
    """The team's members, oldest first."""
    query = (select(TeamMember).where(TeamMember.team_id == team_id)
             .order_by(TeamMember.created_at, TeamMember.user_id))
    found = paginate(session, query, page, per_page)
    return dataclasses.replace(found, data=member_views(session, found.data))


def find_org_member(session: Session, org_id: uuid.UUID, *, user_id: uuid.UUID | None,
                    email: str | None) -> OrgMember:
    """The org membership of the user named by id or e-mail; NotFound when they are not a
    member of the org (which says nothing about users outside it)."""
    if user_id is None and not email:
        raise ValidationFailed("give user_id or email", details={"user_id": ["or email"]})
    query = select(OrgMember).where(OrgMember.org_id == org_id)
    if user_id is not None:
        query = query.where(OrgMember.user_id == user_id)
    else:
        query = query.join(User, User.id == OrgMember.user_id).where(
            User.email == normalise_email(email or ""))
    member = session.scalars(query).one_or_none()
    if member is None:
        raise NotFound("no member of this org matches")
    return member


def team_membership(session: Session, team_id: uuid.UUID, user_id: uuid.UUID
                    ) -> TeamMember | None:
    """The user's membership of the team, or None."""
    return session.get(TeamMember, (team_id, user_id))


def _ensure_not_last_lead(session: Session, member: TeamMember) -> None:
    ensure_not_last_holder(session, member, LEAD, group_key=Team.id,
                           member_group_key=TeamMember.team_id, group_name="a team")


def add_team_member(session: Session, access: TeamAccess, *, user_id: uuid.UUID | None = None,
                    email: str | None = None, role: str) -> MemberView:
    """Add an org member to the team with a team role no higher than the caller's. Raise
    NotFound (not an org member), ValidationFailed (unknown role), Forbidden (role too high),
    Conflict (already a member, or the team is archived)."""
    team = access.team
    ensure_team_active(team)
    granted = access.org.grants.named_role(TEAM_SCOPE, role)
    check_grant(access.rank, granted.rank)
    org_member = find_org_member(session, team.org_id, user_id=user_id, email=email)
    if team_membership(session, team.id, org_member.user_id) is not None:
        raise Conflict("already a member of this team")
    member = TeamMember(team_id=team.id, user_id=org_member.user_id, role=granted.name,
                        created_at=utcnow())
    flush_or_conflict(session, "already a member of this team", member)
    session.expire(team, ["member_count"])
    view = member_view(session, member)
    audit(session, access.org.caller, "team.member_add", org_id=team.org_id,
          resource_type="team_member", resource_id=member.user_id,
          after={"team_id": str(team.id), **as_audit(view)})
    return view


def bulk_add_team_members(session: Session, access: TeamAccess,
                          items: Sequence[dict[str, Any]]) -> BulkResult:
    """Add each `{user_id | email, role}`: `added`, `skipped` (already a member) or `failed`."""

    def step(item: dict[str, Any]) -> uuid.UUID:
        org_member = find_org_member(session, access.team.org_id, user_id=item.get("user_id"),
                                     email=item.get("email"))
        if team_membership(session, access.team.id, org_member.user_id) is not None:
            raise Skip("already a member of this team")
        return add_team_member(session, access, user_id=org_member.user_id,
                               role=item["role"]).user_id

    return run_bulk(session, items, lambda item: str(item.get("email") or item.get("user_id")),
                    step, "added")


def change_team_member_role(session: Session, access: TeamAccess, user_id: uuid.UUID,
                            role: str) -> MemberView:
    """Give a member another team role, under the rank rules; the last lead stays lead."""
    team = access.team
    member = team_membership(session, team.id, user_id)
    if member is None:
        raise NotFound("not a member of this team")
    granted = access.org.grants.named_role(TEAM_SCOPE, role)
    is_self = user_id == access.org.caller.user_id
    check_role_change(actor_rank=access.rank,
                      current_rank=access.org.grants.rank_of(TEAM_SCOPE, member.role),
                      new_rank=granted.rank, is_self=is_self)
    if granted.name == member.role:
        return member_view(session, member)
    _ensure_not_last_lead(session, member)
    before = member.role
    member.role = granted.name
    session.flush()
    view = member_view(session, member)
    audit(session, access.org.caller, "team.member_role", org_id=team.org_id,
          resource_type="team_member", resource_id=user_id,
          before={"team_id": str(team.id), "role": before},
          after={"team_id": str(team.id), "role": granted.name})
    return view


def removable_team_member(session: Session, access: TeamAccess, user_id: uuid.UUID
                          ) -> TeamMember:
    """The membership of `user_id`, once the caller may take it out of the team (a member may
    remove themselves). Raise NotFound (not a member), Forbidden (rank), Conflict (the last
    lead)."""
    member = team_membership(session, access.team.id, user_id)
    if member is None:
        raise NotFound("not a member of this team")
    check_removal(actor_rank=access.rank,
                  target_rank=access.org.grants.rank_of(TEAM_SCOPE, member.role),
                  is_self=user_id == access.org.caller.user_id)
    _ensure_not_last_lead(session, member)
    return member


def remove_team_membership(session: Session, access: TeamAccess, member: TeamMember,
                           action: str) -> None:
    """The tenancy part of taking a member out (checked by `removable_team_member`): delete the
    row and audit it as `action`. The whole action is
    `models.lifecycle.memberships.remove_team_member`."""
    team = access.team
    view = member_view(session, member)
    drop_team_member(session, member)
    session.expire(team, ["member_count"])
    audit(session, access.org.caller, action, org_id=team.org_id, resource_type="team_member",
          resource_id=view.user_id, before={"team_id": str(team.id), **as_audit(view)})


def members_outside(session: Session, team_id: uuid.UUID, org_id: uuid.UUID
                    ) -> list[TeamMember]:
    """The team's members who are not members of org `org_id` (a transfer drops them)."""
    staying = select(OrgMember.user_id).where(OrgMember.org_id == org_id)
    return list(session.scalars(select(TeamMember).where(TeamMember.team_id == team_id,
                                                         TeamMember.user_id.not_in(staying))))


def org_team_memberships(session: Session, org_id: uuid.UUID, user_id: uuid.UUID
                         ) -> list[TeamMember]:
    """The user's memberships of the org's teams."""
    return list(session.scalars(
        select(TeamMember).join(Team, Team.id == TeamMember.team_id)
        .where(Team.org_id == org_id, TeamMember.user_id == user_id)))
