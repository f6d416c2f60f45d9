"""The unit of work of an operator's verb: the runtime, the session, and the member it acts as
(`burnbox.cli.acting` says who that is and how a verb opens one). It imports the application;
`acting` imports it only when a verb runs, so the verbs' help stays quick."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from burnbox.cli.errors import fail, unreachable_redis
from burnbox.cli.ready import engine_for, ensure_schema, load
from burnbox.kv import StoreUnavailable, make_store
from burnbox.storage import make_storage
from models.db import Database
from models.errors import NotFound
from models.identity.users import User, find_by_email
from models.mail.emails import EmailAccess, resolve_email_access
from models.mail.entities import Email
from models.mail.inboxes import Inbox, InboxAccess, normalise_address, resolve_inbox_access
from models.mail.ingest.store import lookup_route
from models.platform.audit import CLI, Origin
from models.runtime import Runtime
from models.tenancy.access import Caller, demand, resolve_org_access
from models.tenancy.orgs import first_owner_id
from models.tenancy.rbac import Grants, load_grants
from models.tenancy.teams import TeamAccess, find_only_team, find_team, resolve_team_access


@dataclass
class Operator:
    """One command's unit of work: the runtime, the session, and the member it acts as."""

    runtime: Runtime
    session: Session
    verb: str
    acting: str | None
    _grants: Grants | None = field(default=None, init=False)

    @property
    def grants(self) -> Grants:
        """Every role's permissions, read once per command."""
        if self._grants is None:
            self._grants = load_grants(self.session)
        return self._grants

    def caller(self, org_id: uuid.UUID) -> Caller:
        """The member the command acts as in org `org_id` (see the module docstring)."""
        if self.acting is not None:
            user = find_by_email(self.session, self.acting)
            if user is None:
                fail(f"no user with the e-mail address {self.acting}")
        else:
            owner = first_owner_id(self.session, org_id)
            user = self.session.get(User, owner) if owner else None
            if user is None:
                fail("the org has no owner to act as: name a member with --as")
        return Caller(user_id=user.id, is_system_admin=user.is_system_admin,
                      origin=Origin(user_agent=f"burnbox {self.verb}", channel=CLI))

    def _member_or_fail(self, what: str, resolve: Callable[[], Any]) -> Any:
        try:
            return resolve()
        except NotFound:
            # The acting member was named with --as and is outside the org: say so rather
            # than "not found", which the API answers to hide what other orgs hold.
            fail(f"{self.acting} is not a member of the org of this {what}")

    def team(self, reference: str | None, permission: str) -> TeamAccess:
        """The acting member's access to the team named by `reference` (None: the only team,
        of the platform or of the member named with --as), once `permission` is held there
        (NotFound for an unknown team; Forbidden without the permission)."""
        if reference is not None:
            team = find_team(self.session, reference)
        else:
            member = find_by_email(self.session, self.acting) if self.acting else None
            if self.acting and member is None:
                fail(f"no user with the e-mail address {self.acting}")
            team = find_only_team(self.session, member.id if member else None)
        caller = self.caller(team.org_id)
        org = self._member_or_fail("team", lambda: resolve_org_access(
            self.session, self.grants, caller, team.org_id))
        access = resolve_team_access(self.session, org, team.id)
        demand(access.permissions, permission)
        return access

    def inbox(self, reference: str, permission: str) -> InboxAccess:
        """The acting member's access to the inbox named by its id or its address, once
        `permission` is held on it."""
        inbox_id = _inbox_id(self.session, reference)
        inbox = self.session.get(Inbox, inbox_id) if inbox_id else None
        if inbox is None:
            raise NotFound(f"no inbox {reference!r}")
        caller = self.caller(inbox.org_id)
        access = self._member_or_fail("inbox", lambda: resolve_inbox_access(
            self.session, self.grants, caller, inbox.id))
        demand(access.permissions, permission)
        return access

    def email(self, email_id: uuid.UUID, permission: str) -> EmailAccess:
        """The acting member's access to e-mail `email_id`, once `permission` is held on its
        inbox."""
        email = self.session.get(Email, email_id)
        if email is None:
            raise NotFound(f"no e-mail {email_id}")
        inbox = self.session.get(Inbox, email.inbox_id)
        assert inbox is not None  # e-mails cascade away with their inbox
        caller = self.caller(inbox.org_id)
        access = self._member_or_fail("e-mail", lambda: resolve_email_access(
            self.session, self.grants, caller, email_id))
        demand(access.inbox.permissions, permission)
        return access


def _inbox_id(session: Session, reference: str) -> uuid.UUID | None:
    """The id an inbox reference names: an id as it is, an address through the routing
    look-up SMTP uses (None when no inbox has it)."""
    try:
        return uuid.UUID(reference.strip())
    except ValueError:
        address = normalise_address(reference)
        route = lookup_route(session, address) if address else None
        return route.inbox_id if route else None


def open_runtime() -> Runtime:
    """The command's runtime, its database reached and at the newest schema, and with Redis
    configured, Redis reached and the broker set up (events go to the worker at commit)."""
    import tasks

    settings = load()
    engine = engine_for(settings)
    runtime = Runtime(settings=settings, db=Database(settings, engine=engine),
                      store=make_store(settings), storage=make_storage(settings))
    ensure_schema(settings, engine)
    if settings.redis.url:
        try:
            runtime.store.ping()
        except StoreUnavailable as exc:
            fail(unreachable_redis(settings, exc))
        tasks.setup_broker(runtime)
    return runtime
