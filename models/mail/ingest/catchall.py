"""Catch-all domain assignments on the SMTP path: send first, look later.

A team's assignment of a domain can be the domain's catch-all (at most one per domain, never a
read-only one: models/domains/assignments.py). Then mail to any valid address of the domain that
has no live inbox is accepted at RCPT (`catch_all_route`), and the inbox is created by the
transaction that stores the message (`open_catch_all_inboxes`, called by
`models.mail.ingest.store.commit_messages`), before the SMTP 250: through `create_inbox`, so with
the assignment's default TTL, the per-domain inbox limit, `inbox.created` and the analytics counters
as for any inbox, with no creator, and a copy of the assignment's chaos rules. Either both the
inbox and the e-mail commit, or neither.

Refusals of their own: a local part that could not be an inbox alias (`INVALID_LOCAL_PART`,
`550 5.1.3`), and a domain at its limit of live inboxes (`DOMAIN_FULL`, `452 4.2.2`: the sender
retries later). Mail for an address whose inbox expired creates a new inbox there (the lapsed
one is removed first, as when an alias is taken again through the API).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.domains.assignments import DomainAssignment, assignment_settings
from models.domains.domains import VERIFIED, Domain
from models.errors import Conflict, Forbidden, ValidationFailed
from models.mail.chaos import copy_assignment_rules
from models.mail.inboxes import (
    CREATING_LEVELS,
    Inbox,
    count_active_domain_inboxes,
    create_inbox,
    normalise_alias,
)
from models.tenancy.teams import Team

# Why a recipient at a catch-all domain is refused (also labels of the refusal metric).
INVALID_LOCAL_PART = "invalid_local_part"
DOMAIN_FULL = "domain_full"

# The assignment that catches a domain's mail: catch-all, able to create inboxes, its domain
# verified and its team not archived (anything else refuses mail as if it were not catch-all).
_CATCHING = (select(DomainAssignment)
             .join(Domain, Domain.id == DomainAssignment.domain_id)
             .join(Team, Team.id == DomainAssignment.team_id)
             .where(DomainAssignment.catch_all.is_(True),
                    DomainAssignment.access_level.in_(CREATING_LEVELS),
                    Domain.status == VERIFIED, Team.is_archived.is_(False)))


@dataclass(frozen=True)
class CatchAll:
    """A recipient with no live inbox at a catch-all domain: accepted, and its inbox is made
    with its first message."""

    address: str
    assignment_id: uuid.UUID


def catch_all_route(session: Session, settings: Settings, address: str, now: datetime
                    ) -> CatchAll | str | None:
    """How RCPT answers a normalised `address` that has no live inbox: CatchAll when its domain
    is caught and it can have an inbox now, INVALID_LOCAL_PART or DOMAIN_FULL when it cannot,
    None when the domain is not caught (the usual refusals apply)."""
    local, _, domain_name = address.rpartition("@")
    assignment = session.scalars(_CATCHING.where(Domain.domain_name == domain_name)).first()
    if assignment is None:
        return None
    try:
        normalise_alias(local)
    except ValidationFailed:
        return INVALID_LOCAL_PART
    cap = assignment_settings(session, settings, assignment).max_inboxes_per_domain
    if cap and count_active_domain_inboxes(session, assignment.domain_id) >= cap:
        return DOMAIN_FULL
    return CatchAll(address, assignment.id)


def receiving_team(session: Session, address: str) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The (org id, team id) that receives mail at the normalised `address`: its live inbox's
    team, else the team whose catch-all assignment catches its domain; None when mail there is
    refused."""
    team = session.execute(select(Inbox.org_id, Inbox.team_id).where(
        Inbox.full_address == address, Inbox.expires_at > utcnow())).first()
    if team is None:
        team = session.execute(
            _CATCHING.with_only_columns(Team.org_id, DomainAssignment.team_id)
            .where(Domain.domain_name == address.rpartition("@")[2])).first()
    return None if team is None else (team[0], team[1])


def open_catch_all_inboxes(session: Session, settings: Settings, addresses: Iterable[str]
                           ) -> dict[str, Inbox]:
    """The live inboxes, by address, that the catch-all assignments of their domains create
    for `addresses` (normalised addresses with no live inbox), in the caller's transaction.
    An address whose domain is not caught, or whose inbox cannot be made (the domain's limit
    reached since RCPT, an invalid local part), is left out: its recipient gets no e-mail."""
    by_domain: defaultdict[str, list[str]] = defaultdict(list)
    for address in addresses:
        by_domain[address.rpartition("@")[2]].append(address)
    # Domain by domain in one order: each creation locks its domain's row, and two
    # transactions taking those locks in opposite orders would deadlock.
    catching = session.scalars(_CATCHING.where(Domain.domain_name.in_(sorted(by_domain)))
                               .order_by(DomainAssignment.domain_id)).all()
    opened: dict[str, Inbox] = {}
    for assignment in catching:
        for address in sorted(by_domain[assignment.domain_name]):
            inbox = open_catch_all_inbox(session, settings, assignment, address)
            if inbox is not None:
                opened[address] = inbox
    return opened


def open_catch_all_inbox(session: Session, settings: Settings, assignment: DomainAssignment,
                         address: str) -> Inbox | None:
    """The inbox the catch-all `assignment` creates for `address` (None when it cannot); when
    a concurrent transaction created it first, that one, locked like every live recipient."""
    try:
        with session.begin_nested():
            inbox = create_inbox(session, settings, assignment, created_by=None,
                                 alias=address.rpartition("@")[0])
            # The assignment's chaos rules apply to each inbox it creates, from its next
            # message on: the one that creates it has passed RCPT already.
            copy_assignment_rules(session, assignment.id, inbox.id)
            return inbox
    except Conflict:
        # The address was taken by a transaction that committed while this one waited for the
        # domain's lock (two first messages at once: both go to the one inbox), or the domain
        # is full.
        return session.scalars(select(Inbox).where(Inbox.full_address == address,
                                                   Inbox.expires_at > utcnow())
                               .with_for_update()).first()
    except (Forbidden, ValidationFailed):
        return None
