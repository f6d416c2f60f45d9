"""Mail factories: the mail world (two orgs, each with a team and a verified domain assigned to
it), inboxes made through the domain code, MIME messages, and e-mails stored as ingest stores
them."""

from __future__ import annotations

import email.policy
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from burnbox.storage import ObjectStorage
from burnbox.timeutil import utcnow
from models.db import Database
from models.domains.assignments import DomainAssignment
from models.domains.domains import Domain
from models.mail.inboxes import Inbox, create_inbox
from models.mail.ingest.store import accept_message, store_messages
from models.runtime import Runtime
from tests.factories.domains import make_assignment, make_verified_domain
from tests.factories.identity import make_user
from tests.factories.tenancy import World, make_two_orgs, sign_in_everyone

# Who the access tests call as: the org owner (reaches every team), the team's lead and member,
# an org member outside the team, the owner of the other org, and a user in no org.
ROLES = ("owner", "lead", "team_member", "org_member", "outsider", "stranger")


@dataclass
class MailWorld(World):
    """A world whose teams each have a verified domain assigned in full: `domain` is the name
    of team T's, `other_domain` that of team TB's."""

    domain: str = ""
    other_domain: str = ""


def make_mail_world(session: Session, settings: Settings) -> MailWorld:
    """Org A (team T, led by `lead`, with `team_member`; `org_member` outside it) and org B of
    the outsider (team TB), a user for each of ROLES, signed in; a verified domain for each org
    assigned in full to its team. `ids` holds org, team, domain, assignment and their other_
    counterparts. Flushed."""
    world = MailWorld()
    for role in ROLES:
        world.users[role] = make_user(session, role)
    team, other_team = make_two_orgs(
        session, settings, world,
        members={"lead": "member", "team_member": "member", "org_member": "member"},
        team_members={"lead": "lead", "team_member": "member"})
    owner, outsider = world.users["owner"], world.users["outsider"]
    domain = make_verified_domain(session, settings, owner, world.ids["org"])
    other_domain = make_verified_domain(session, settings, outsider, world.ids["other_org"])
    assignment = make_assignment(session, settings, owner, team.team, domain.id)
    other_assignment = make_assignment(session, settings, outsider, other_team.team,
                                       other_domain.id)
    world.domain, world.other_domain = domain.domain_name, other_domain.domain_name
    world.ids.update(domain=domain.id, assignment=assignment.id, other_domain=other_domain.id,
                     other_assignment=other_assignment.id)
    sign_in_everyone(session, settings, world)
    return world


def make_inbox(session: Session, settings: Settings, world: MailWorld, *,
               role: str = "team_member", assignment: str = "assignment",
               **options: Any) -> Inbox:
    """An inbox created by `role` through one of the world's assignments (its id's name in
    world.ids), with create_inbox's `options` (alias, ttl, ...). Flushed."""
    target = session.get(DomainAssignment, world.ids[assignment])
    inbox = create_inbox(session, settings, target, created_by=world.users[role].id, **options)
    session.flush()
    return inbox


def make_inbox_rows(session: Session, domain: Domain, team_id: uuid.UUID, count: int, *,
                    assignment_id: uuid.UUID | None = None, created_at: datetime | None = None,
                    expires_at: datetime | None = None, email_count: int = 0
                    ) -> list[dict[str, Any]]:
    """`count` inboxes of team `team_id` (of the domain's org) on `domain` without a creator,
    written as rows in one INSERT: no inbox.created events and none of the checks of creating
    one (a verified domain, an assignment), for tests that only count inboxes or work at a scale
    the domain code would take minutes over. Made through `assignment_id` if given, `created_at`
    now and live for an hour unless given, claiming `email_count` e-mails, all unread; the
    rows. Flushed."""
    created_at = created_at or utcnow()
    rows = []
    for _ in range(count):
        local = uuid.uuid4().hex[:12]
        rows.append({"id": uuid.uuid4(), "address": local,
                     "full_address": f"{local}@{domain.domain_name}", "domain_id": domain.id,
                     "domain_assignment_id": assignment_id, "team_id": team_id,
                     "org_id": domain.org_id, "created_by": None, "created_at": created_at,
                     "expires_at": expires_at or created_at + timedelta(hours=1),
                     "email_count": email_count, "unread_count": email_count,
                     "read_token_hash": None})
    session.execute(insert(Inbox), rows)
    session.flush()
    return rows


def lapse(session: Session, *inbox_ids: uuid.UUID, ago: timedelta = timedelta(seconds=1)
          ) -> None:
    """Move the inboxes' expiry `ago` into the past (as time passing would). Flushed."""
    session.execute(update(Inbox).where(Inbox.id.in_(inbox_ids))
                    .values(expires_at=utcnow() - ago))
    session.flush()


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


def deliver(db: Database, storage: ObjectStorage, raw: bytes, *, recipients: list[str],
            mail_from: str = "a@b.example") -> list[uuid.UUID]:
    """Store one message as mailin does after DATA (accept it, then store it as a batch of
    one), in the store's own transaction; its new e-mail ids, one per recipient that is still
    a live inbox."""
    [email_ids] = store_messages(db, storage, [accept_message(raw, mail_from=mail_from,
                                                              recipients=recipients)])
    return email_ids


def make_email(runtime: Runtime, to: str, *, storage: ObjectStorage | None = None,
               mail_from: str = "a@b.example", **options: Any) -> uuid.UUID:
    """One e-mail for the live inbox `to`: a `message` with `options` (subject, attachments,
    ...) stored by `deliver`, objects in `storage` (the runtime's by default). The store runs
    and commits its own transaction (under `runtime`, a savepoint of the test's); the e-mail's
    id."""
    [email_id] = deliver(runtime.db, storage or runtime.storage, message(to, **options),
                         mail_from=mail_from, recipients=[to])
    return email_id
