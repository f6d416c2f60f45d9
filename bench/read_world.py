"""The data the read-path benchmarks read: a team with an inbox of EMAILS e-mails, its lead's
JWT and an API key of theirs, and the requests `bench.readpath` and `bench.readpath_calls`
measure."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from burnbox.settings import Settings
from models.apikeys.keys import create_key
from models.runtime import Runtime
from models.tenancy.access import resolve_org_access
from models.tenancy.rbac import load_grants
from models.tenancy.teams import resolve_team_access
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.factories.tenancy import caller_of

EMAILS = 20
KEY_SCOPES = ["team.view", "team.inboxes.view", "team.inboxes.create", "team.emails.view"]


def lead_key(session: Session, world: Any, name: str, scopes: list[str]) -> str:
    """A new API key (its raw value) of the team of `world` (`make_mail_world`'s), made by the
    team's lead, with `scopes`."""
    org = resolve_org_access(session, load_grants(session), caller_of(world.users["lead"]),
                             world.ids["org"])
    return create_key(session, resolve_team_access(session, org, world.ids["team"]),
                      name=name, scopes=scopes).raw_key


@dataclass
class Request:
    """One request to measure: its name, credential, method, path, headers and POST body."""

    name: str
    auth: str
    method: str
    path: str
    headers: dict[str, str]
    body: str | None = None


def seed_reads(runtime: Runtime, settings: Settings) -> list[Request]:
    """Commit the team, its inbox of EMAILS e-mails and its credentials on a migrated database;
    the requests to measure: the e-mails list, an e-mail's detail, the inbox list and `POST
    /inboxes`, each with the key and with the JWT, then `/auth/me` (JWT only: API keys are
    refused there by design)."""
    with runtime.db.transaction() as session:
        world = make_mail_world(session, settings)
        inbox = make_inbox(session, settings, world, role="lead", ttl="24h")
        key = lead_key(session, world, "bench", KEY_SCOPES)
    email_ids = [make_email(runtime, inbox.full_address, subject=f"Your code {n}",
                            text=f"Use {482900 + n} to sign in.\n" * 20)
                 for n in range(EMAILS)]
    credentials = {"key": {"Authorization": f"Bearer {key}"}, "jwt": world.headers["lead"]}
    create = json.dumps({"domain_assignment_id": str(world.ids["assignment"]), "ttl": "10m"})
    requests = []
    for auth, headers in credentials.items():
        requests += [
            Request("e-mails list (20)", auth, "GET",
                    f"/api/v1/inboxes/{inbox.id}/emails?per_page={EMAILS}", headers),
            Request("e-mail detail", auth, "GET", f"/api/v1/emails/{email_ids[-1]}", headers),
            Request("inbox list", auth, "GET", "/api/v1/inboxes", headers),
            Request("POST /inboxes", auth, "POST", "/api/v1/inboxes", headers, create)]
    requests.append(Request("/auth/me", "jwt", "GET", "/api/v1/auth/me", credentials["jwt"]))
    return requests
