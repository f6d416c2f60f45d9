"""Builders shared by the tenancy tests: two orgs with a user in every role, signed in."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from models.identity.sessions import open_session
from models.identity.users import User
from models.platform.audit import Origin
from models.runtime import Runtime
from models.tenancy.access import Caller, OrgAccess, resolve_org_access
from models.tenancy.invites import create_invite
from models.tenancy.members import add_member
from models.tenancy.org_actions import add_org
from models.tenancy.rbac import load_grants
from models.tenancy.teams import add_team_member, create_team, leave_team, resolve_team_access
from tests.factories.identity import make_user
from tests.identity import bearer

ORG_ROLES = ("owner", "admin", "member")
# Who the isolation tests call as: every role of org A, and the owner of another org.
CALLERS = ("owner", "admin", "member", "lead", "team_member", "outsider")
TEAM_PATH = "/orgs/{org}/teams/{team}"


def caller_of(user: User) -> Caller:
    """The caller the tenancy actions audit as."""
    return Caller(user_id=user.id, is_system_admin=user.is_system_admin,
                  origin=Origin(ip="127.0.0.1", user_agent="pytest"))


def org_access(session: Any, user: User, org_id: uuid.UUID) -> OrgAccess:
    """`user`'s access to an org, resolved as the permission check resolves it."""
    return resolve_org_access(session, load_grants(session), caller_of(user), org_id)


@dataclass
class World:
    """Org A (team T) with a user in every role, org B (team TB) of an outsider, and spare
    users: `target` (an org member of A and a member of T, whom every manager outranks) and
    `stranger` (in no org). `headers[name]` signs in as that user."""

    users: dict[str, User] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    ids: dict[str, uuid.UUID] = field(default_factory=dict)

    def path(self, template: str) -> str:
        """A template such as "/orgs/{org}/teams/{team}" filled with the world's ids."""
        return "/api/v1" + template.format(**{name: str(value) for name, value in
                                              self.ids.items()})


def build_world(runtime: Runtime) -> World:
    """Commit the world (inside the test's rolled-back transaction) and sign everyone in."""
    world = World()
    with runtime.db.transaction() as session:
        for name in (*CALLERS, "target", "stranger", "sysadmin"):
            world.users[name] = make_user(session, name, is_system_admin=name == "sysadmin")
        users = world.users
        org = add_org(session, caller_of(users["owner"]), "Org A")
        other = add_org(session, caller_of(users["outsider"]), "Org B")
        owner = org_access(session, users["owner"], org.id)
        for name, role in (("admin", "admin"), ("member", "member"), ("lead", "member"),
                           ("team_member", "member"), ("target", "member")):
            add_member(session, owner, user_id=users[name].id, role=role)
        team = create_team(session, runtime.settings, owner, name="Team T")
        in_team = resolve_team_access(session, owner, team.id)
        for name, role in (("lead", "lead"), ("team_member", "member"), ("target", "member")):
            add_team_member(session, in_team, user_id=users[name].id, role=role)
        leave_team(session, in_team)  # the owner created T; they reach it as owner anyway
        outsider = org_access(session, users["outsider"], other.id)
        other_team = create_team(session, runtime.settings, outsider, name="Team TB")
        invite = create_invite(session, runtime.settings, owner, email="invitee@example.test",
                               role="member").invite
        other_invite = create_invite(session, runtime.settings, outsider,
                                     email="invitee@example.test", role="member").invite
        world.ids = {"org": org.id, "team": team.id, "other_org": other.id,
                     "other_team": other_team.id, "invite": invite.id,
                     "other_invite": other_invite.id,
                     **{f"user_{name}": user.id for name, user in users.items()}}
        for name, user in users.items():
            signed_in = open_session(session, runtime.settings, user, Origin())
            world.headers[name] = bearer(signed_in.tokens.access_token)
    return world


def fill_ids(value: Any, world: Any) -> Any:
    """A request body with every "{name}" placeholder replaced by the world's id of that name."""
    if isinstance(value, dict):
        return {key: fill_ids(item, world) for key, item in value.items()}
    if isinstance(value, list):
        return [fill_ids(item, world) for item in value]
    if isinstance(value, str) and value.startswith("{"):
        return str(world.ids[value.strip("{}")])
    return value


def route_id(route: tuple[Any, ...]) -> str:
    """The test id of a (method, template, ...) route: "METHOD template"."""
    return f"{route[0]} {route[1]}"


def world_caller(client: Any, world: Any, default: str) -> Any:
    """api(method, template, who=default, **kwargs): call the API as one of the world's users,
    the template's placeholders filled by `world.path`."""

    def call(method: str, template: str, who: str = default, **kwargs: Any) -> Any:
        return client.open(world.path(template), method=method, headers=world.headers[who],
                           **kwargs)

    return call
