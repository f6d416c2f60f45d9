"""Tenancy factories: callers and their access, orgs, teams, and `make_world`, the two orgs with a
user in every role that most API tests run in."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from burnbox.settings import Settings
from models.identity.users import User
from models.lifecycle.memberships import leave_team
from models.platform.audit import Origin
from models.tenancy.access import Caller, OrgAccess, resolve_org_access
from models.tenancy.invites import create_invite
from models.tenancy.members import add_member
from models.tenancy.org_actions import add_org
from models.tenancy.orgs import Org, create_org
from models.tenancy.rbac import load_grants
from models.tenancy.teams import (
    Team,
    TeamAccess,
    add_team_member,
    create_team,
    resolve_team_access,
)
from tests.factories.identity import auth_headers, make_user

# Who the isolation tests call as: every role of org A, and the owner of another org.
CALLERS = ("owner", "admin", "member", "lead", "team_member", "outsider")


def caller_of(user: User) -> Caller:
    """The caller the domain actions audit `user` as."""
    return Caller(user_id=user.id, is_system_admin=user.is_system_admin,
                  origin=Origin(ip="127.0.0.1", user_agent="pytest"))


def org_access(session: Session, user: User, org_id: uuid.UUID) -> OrgAccess:
    """`user`'s access to an org, resolved as the permission check resolves it."""
    return resolve_org_access(session, load_grants(session), caller_of(user), org_id)


def make_org(session: Session, owner: User, name: str = "Acme") -> Org:
    """An org owned by `owner`, as the org core leaves it (no audit entry). Flushed."""
    org = create_org(session, name, owner.id)
    session.flush()
    return org


def make_team(session: Session, settings: Settings, owner: User, org_id: uuid.UUID,
              name: str = "Team") -> Team:
    """A team of the org created by `owner` (an org manager), who leads it. Flushed."""
    team = create_team(session, settings, org_access(session, owner, org_id), name=name)
    session.flush()
    return team


@dataclass
class OwnedTeam:
    """A user owning an org with one team, which they lead."""

    owner: User
    org_id: uuid.UUID
    team_id: uuid.UUID

    def org_access(self, session: Session) -> OrgAccess:
        """The owner's access to the org."""
        return org_access(session, self.owner, self.org_id)

    def access(self, session: Session) -> TeamAccess:
        """The owner's access to the team, as the permission check resolves it."""
        return resolve_team_access(session, self.org_access(session), self.team_id)


def make_owned_team(session: Session, settings: Settings, name: str = "Hooks") -> OwnedTeam:
    """A new user, their org "Org <name>" and its team `name`. Flushed."""
    owner = make_user(session)
    org = make_org(session, owner, f"Org {name}")
    team = make_team(session, settings, owner, org.id, name)
    return OwnedTeam(owner=owner, org_id=org.id, team_id=team.id)


@dataclass
class World:
    """Users by name, the headers that sign each in, and the ids of what was built."""

    users: dict[str, User] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    ids: dict[str, uuid.UUID] = field(default_factory=dict)

    def path(self, template: str) -> str:
        """A template such as "/orgs/{org}/teams/{team}" filled with the world's ids."""
        return "/api/v1" + template.format(**{name: str(value) for name, value in
                                              self.ids.items()})


def make_two_orgs(session: Session, settings: Settings, world: World, *,
                  members: Mapping[str, str], team_members: Mapping[str, str]
                  ) -> tuple[TeamAccess, TeamAccess]:
    """Org A "Org A" of users["owner"], whose `members` (name: org role) join it as the API
    adds them, with team "Team T" (created by the owner) whose `team_members` (name: team role)
    join it; org B "Org B" of users["outsider"] with team "Team TB". Their ids go into
    world.ids (org, team, other_org, other_team); the owner's access to T and the outsider's to
    TB are returned. Flushed."""
    users = world.users
    org = add_org(session, caller_of(users["owner"]), "Org A")
    other = add_org(session, caller_of(users["outsider"]), "Org B")
    owner = org_access(session, users["owner"], org.id)
    for name, role in members.items():
        add_member(session, owner, user_id=users[name].id, role=role)
    team = create_team(session, settings, owner, name="Team T")
    in_team = resolve_team_access(session, owner, team.id)
    for name, role in team_members.items():
        add_team_member(session, in_team, user_id=users[name].id, role=role)
    outsider = org_access(session, users["outsider"], other.id)
    other_team = create_team(session, settings, outsider, name="Team TB")
    session.flush()
    world.ids.update(org=org.id, team=team.id, other_org=other.id, other_team=other_team.id)
    return in_team, resolve_team_access(session, outsider, other_team.id)


def sign_in_everyone(session: Session, settings: Settings, world: World) -> None:
    """Open a session for every user of the world; its header goes into world.headers."""
    for name, user in world.users.items():
        world.headers[name] = auth_headers(session, settings, user)


def make_world(session: Session, settings: Settings) -> World:
    """Org A (team T) with a user in every role of CALLERS, org B (team TB) of the outsider, a
    pending invite in each, and spare users: `target` (a member of A and of T, whom every
    manager outranks), `stranger` (in no org) and `sysadmin` (a system administrator in no
    org). The owner created T and left it (they reach it as owner). Everyone is signed in;
    `ids` holds org, team, other_org, other_team, invite, other_invite and user_<name>.
    Flushed."""
    world = World()
    for name in (*CALLERS, "target", "stranger", "sysadmin"):
        world.users[name] = make_user(session, name, is_system_admin=name == "sysadmin")
    in_team, other_team = make_two_orgs(
        session, settings, world,
        members={"admin": "admin", "member": "member", "lead": "member", "team_member": "member",
                 "target": "member"},
        team_members={"lead": "lead", "team_member": "member", "target": "member"})
    leave_team(session, in_team)
    invite = create_invite(session, settings, in_team.org, email="invitee@example.test",
                           role="member").invite
    other_invite = create_invite(session, settings, other_team.org, email="invitee@example.test",
                                 role="member").invite
    session.flush()
    world.ids.update(invite=invite.id, other_invite=other_invite.id,
                     **{f"user_{name}": user.id for name, user in world.users.items()})
    sign_in_everyone(session, settings, world)
    return world
