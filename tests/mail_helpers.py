"""Builders for the mail tests: two orgs, each with a team and a verified domain assigned to it,
users in every role (signed in), inboxes made through the domain code, and messages built with
the standard library."""

from __future__ import annotations

import email.policy
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from email.message import EmailMessage
from typing import Any

from sqlalchemy import select, update

from burnbox.timeutil import utcnow
from models.domains.domains import (
    CHECK_REQUESTED,
    FULL,
    VERIFIED,
    Domain,
    DomainAssignment,
    assign_domain,
    register_domain,
)
from models.events import Event
from models.identity.sessions import open_session
from models.mail.inboxes import Inbox, create_inbox
from models.platform.audit import Origin
from models.runtime import Runtime
from models.tenancy.access import resolve_org_access
from models.tenancy.members import add_member
from models.tenancy.org_actions import add_org
from models.tenancy.rbac import load_grants
from models.tenancy.teams import add_team_member, create_team, resolve_team_access
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of
from tests.identity import bearer

# Who the access tests call as: the org owner (reaches every team), the team's lead and member,
# an org member outside the team, the owner of the other org, and a user in no org.
ROLES = ("owner", "lead", "team_member", "org_member", "outsider", "stranger")


@dataclass
class MailWorld:
    """Org A (team T, domain `domain` assigned to T in full) and org B (team TB, its own domain
    assigned in full), with `users[role]` and `headers[role]` for each of ROLES."""

    users: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    ids: dict[str, uuid.UUID] = field(default_factory=dict)
    domain: str = ""
    other_domain: str = ""

    def path(self, template: str) -> str:
        """A template such as "/orgs/{org}/teams/{team}/inboxes" filled with the world's ids."""
        return "/api/v1" + template.format(**{name: str(value) for name, value in
                                              self.ids.items()})


def verified_domain(session: Any, settings: Any, caller: Any, org_id: uuid.UUID,
                    name: str | None = None) -> Domain:
    """A registered domain marked verified, as a passed DNS check would leave it. Its requested
    first check counts as done, so worker threads of the test do not run it against real DNS
    (which knows nothing of the name and would mark the domain failed)."""
    domain = register_domain(session, settings, caller, org_id,
                             name or f"mail-{uuid.uuid4().hex[:10]}.example.test")
    session.execute(update(Domain).where(Domain.id == domain.id).values(
        status=VERIFIED, txt_verified=True, mx_verified=True))
    session.flush()
    for event in session.scalars(select(Event).where(Event.name == CHECK_REQUESTED,
                                                     Event.dispatched_at.is_(None))):
        if event.data.get("domain_id") == str(domain.id):
            event.dispatched_at = utcnow()
    session.refresh(domain)
    return domain


def build_mail_world(runtime: Runtime) -> MailWorld:
    """Commit the world (in the test's transaction, or for real with `committed_runtime`) and
    sign every user in."""
    world = MailWorld()
    settings = runtime.settings
    with runtime.db.transaction() as session:
        for role in ROLES:
            world.users[role] = make_user(session, role)
        users = world.users
        grants = load_grants(session)
        org = add_org(session, caller_of(users["owner"]), "Org A")
        other = add_org(session, caller_of(users["outsider"]), "Org B")
        owner = resolve_org_access(session, grants, caller_of(users["owner"]), org.id)
        outsider = resolve_org_access(session, grants, caller_of(users["outsider"]), other.id)
        for role in ("lead", "team_member", "org_member"):
            add_member(session, owner, user_id=users[role].id, role="member")
        team = create_team(session, settings, owner, name="Team T")
        in_team = resolve_team_access(session, owner, team.id)
        add_team_member(session, in_team, user_id=users["lead"].id, role="lead")
        add_team_member(session, in_team, user_id=users["team_member"].id, role="member")
        other_team = create_team(session, settings, outsider, name="Team TB")
        domain = verified_domain(session, settings, caller_of(users["owner"]), org.id)
        other_domain = verified_domain(session, settings, caller_of(users["outsider"]), other.id)
        assignment = assign_domain(session, settings, caller_of(users["owner"]), team,
                                   domain.id, FULL)
        other_assignment = assign_domain(session, settings, caller_of(users["outsider"]),
                                         other_team, other_domain.id, FULL)
        world.domain, world.other_domain = domain.domain_name, other_domain.domain_name
        world.ids = {"org": org.id, "team": team.id, "domain": domain.id,
                     "assignment": assignment.id, "other_org": other.id,
                     "other_team": other_team.id, "other_domain": other_domain.id,
                     "other_assignment": other_assignment.id}
        for role, user in users.items():
            signed_in = open_session(session, settings, user, Origin())
            world.headers[role] = bearer(signed_in.tokens.access_token)
    return world


def make_inbox(runtime: Runtime, world: MailWorld, *, role: str = "team_member",
               assignment: str = "assignment", **options: Any) -> Inbox:
    """Commit an inbox created by `role` through one of the world's assignments."""
    with runtime.db.transaction() as session:
        target = session.get(DomainAssignment, world.ids[assignment])
        return create_inbox(session, runtime.settings, target,
                            created_by=world.users[role].id, **options)


def lapse(runtime: Runtime, *inbox_ids: uuid.UUID, ago: timedelta = timedelta(seconds=1)) -> None:
    """Move the inboxes' expiry into the past (as time passing would)."""
    with runtime.db.transaction() as session:
        session.execute(update(Inbox).where(Inbox.id.in_(inbox_ids))
                        .values(expires_at=utcnow() - ago))


def message(to: str, *, subject: str = "Hello", text: str = "Hi there.\n",
            html: str | None = None, sender: str = "Alice <alice@sender.example>",
            attachments: tuple[tuple[str, str, bytes], ...] = (),
            message_id: str | None = None) -> bytes:
    """A MIME message as bytes with CRLF line ends, as SMTP carries it (smtplib sends bytes
    as they are); attachments are (filename, content type, data)."""
    mail = EmailMessage()
    mail["From"], mail["To"], mail["Subject"] = sender, to, subject
    mail["Message-ID"] = message_id or f"<{uuid.uuid4().hex}@sender.example>"
    mail.set_content(text)
    if html is not None:
        mail.add_alternative(html, subtype="html")
    for filename, content_type, data in attachments:
        maintype, subtype = content_type.split("/", 1)
        mail.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return mail.as_bytes(policy=email.policy.SMTP)
