"""Builders shared by the events-out tests: a team with an owner, webhooks, committed events."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from models.delivery.webhooks import Webhook, create_webhook
from models.events import EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED, WEBHOOK_EVENTS, record_event
from models.identity.users import User
from models.runtime import Runtime
from models.tenancy.access import OrgAccess, resolve_org_access
from models.tenancy.orgs import create_org
from models.tenancy.rbac import load_grants
from models.tenancy.teams import TeamAccess, create_team, resolve_team_access
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of

SAMPLE_DATA = {
    EMAIL_RECEIVED: {"email_id": "7b0f0b5e-8c8f-4a5e-9d4e-3d1d5c0a9f10",
                     "inbox_id": "0c6b1c38-2b44-4d6e-a4d5-9a8f0f0e4e21",
                     "address": "qa-run-17@mail.example.com", "from": "shop@example.org",
                     "to": "qa-run-17@mail.example.com", "subject": "Your code is 424242",
                     "size_bytes": 2311, "has_attachments": False,
                     "received_at": "2026-11-21T10:00:00.000000Z"},
    INBOX_CREATED: {"inbox_id": "0c6b1c38-2b44-4d6e-a4d5-9a8f0f0e4e21",
                    "address": "qa-run-17@mail.example.com",
                    "team_id": "5d1e6a4c-1f0b-4c8e-9a55-0e3b7f2d9c11",
                    "expires_at": "2026-11-21T10:10:00.000000Z"},
    INBOX_EXPIRED: {"inbox_id": "0c6b1c38-2b44-4d6e-a4d5-9a8f0f0e4e21",
                    "address": "qa-run-17@mail.example.com",
                    "expired_at": "2026-11-21T10:10:00.000000Z"},
}


@dataclass
class TeamWorld:
    """A user owning an org with one team."""

    owner: User
    org_id: uuid.UUID
    team_id: uuid.UUID


def org_access(session: Any, user: User, org_id: uuid.UUID) -> OrgAccess:
    return resolve_org_access(session, load_grants(session), caller_of(user), org_id)


def team_access(session: Any, world: TeamWorld) -> TeamAccess:
    """The owner's access to the team, as the permission check resolves it."""
    return resolve_team_access(session, org_access(session, world.owner, world.org_id),
                               world.team_id)


def make_team(runtime: Runtime, name: str = "Hooks") -> TeamWorld:
    """Commit (in the test's transaction, for `runtime`) an owner, an org and a team."""
    with runtime.db.transaction() as session:
        owner = make_user(session)
        org = create_org(session, f"Org {name}", owner.id)
        session.flush()
        team = create_team(session, runtime.settings, org_access(session, owner, org.id),
                           name=name)
        return TeamWorld(owner=owner, org_id=org.id, team_id=team.id)


def make_webhook(runtime: Runtime, world: TeamWorld, url: str,
                 events: tuple[str, ...] = WEBHOOK_EVENTS, **fields: Any) -> Webhook:
    """Commit a webhook of the world's team (private targets allowed: receivers are local)."""
    with runtime.db.transaction() as session:
        hook = create_webhook(session, team_access(session, world), url=url, events=list(events),
                              allow_private=True)
        for name, value in fields.items():
            setattr(hook, name, value)
        return hook


def commit_event(runtime: Runtime, world: TeamWorld, name: str = EMAIL_RECEIVED,
                 **extra: Any) -> uuid.UUID:
    """Commit one event of the team (handed to the fan-out after commit); its id."""
    with runtime.db.transaction() as session:
        return record_event(session, name, {**SAMPLE_DATA[name], **extra},
                            org_id=world.org_id, team_id=world.team_id).id
