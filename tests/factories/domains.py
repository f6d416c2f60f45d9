"""Domain factories: verified domains and their assignments to teams."""

from __future__ import annotations

import uuid

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.domains.assignments import FULL, DomainAssignment, assign_domain
from models.domains.domains import CHECK_REQUESTED, VERIFIED, Domain, register_domain
from models.events import Event
from models.identity.users import User
from models.tenancy.teams import Team
from tests.factories.tenancy import caller_of


def make_verified_domain(session: Session, settings: Settings, owner: User, org_id: uuid.UUID,
                         name: str | None = None) -> Domain:
    """A domain registered by `owner` (a random name unless given) and marked verified, as a
    passed DNS check would leave it. Its requested first check counts as done, so worker
    threads of the test do not run it against real DNS (which knows nothing of the name and
    would mark the domain failed). Flushed."""
    domain = register_domain(session, settings, caller_of(owner), org_id,
                             name or f"mail-{uuid.uuid4().hex[:10]}.example.test")
    session.execute(update(Domain).where(Domain.id == domain.id).values(
        status=VERIFIED, txt_verified=True, mx_verified=True))
    session.flush()
    for event in session.scalars(select(Event).where(Event.name == CHECK_REQUESTED,
                                                     Event.dispatched_at.is_(None))):
        if event.data.get("domain_id") == str(domain.id):
            event.dispatched_at = utcnow()
    session.flush()
    session.refresh(domain)
    return domain


def make_assignment(session: Session, settings: Settings, owner: User, team: Team,
                    domain_id: uuid.UUID, access_level: str = FULL) -> DomainAssignment:
    """The org's domain assigned to `team` by `owner` (full access unless given). Flushed."""
    assignment = assign_domain(session, settings, caller_of(owner), team, domain_id,
                               access_level)
    session.flush()
    return assignment
