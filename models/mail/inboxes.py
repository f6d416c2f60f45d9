"""Inboxes: disposable addresses on a domain assigned to a team, each with a lifetime.

Rules kept here:
- an inbox is created through a domain assignment of an active team, on a verified domain, at
  access level `full` or `create_inbox` (`read_only` assignments only read what exists);
- the local part is the alias asked for (lower case, 2-64 characters of `[a-z0-9._-]`,
  alphanumeric at both ends, no `..`) or 10 random characters;
- the lifetime is the ttl asked for, or the default, never above the max ttl of the settings
  cascade (platform -> org -> domain -> team -> assignment); an extension never goes past
  created_at + max ttl;
- `max_inboxes_per_domain` caps the live inboxes of a domain (all teams together); creations on
  a capped domain, and creations of an alias, are serialised by a lock on the domain row, so
  the cap and the address check hold under concurrency (a random local part needs no lock);
- one live inbox per address (409 otherwise). A lapsed inbox that still holds the address (the
  cleanup has not run yet) is removed first, with its `inbox.expired` event;
- access: the inbox's creator, or a team member holding the team permission in question
  (`resolve_inbox_access`); an inbox of an org the caller is not in is 404;
- removal (cleanup, DELETE, creation over a lapsed address) deletes the rows (e-mails and
  attachments cascade) and hands the stored objects to `models.mail.entities.discard_after_commit`;
- so does every delete the database cascades to inboxes: a domain (`discard_domain_objects`), a
  team (`discard_team_objects`) and an org (`discard_org_objects`), through
  `discard_before_cascade`; the deletions in `models.lifecycle` call them first;
- a transfer moves no inbox: a team's (`lapse_team_inboxes`) or a domain's
  (`lapse_domain_inboxes`) live inboxes lapse at once, and the next cleanup removes them with
  their `inbox.expired` events and objects; `models.lifecycle` calls them before the move.

Inboxes and e-mails are data, not configuration: they are not written to the audit log.
"""

from __future__ import annotations

import functools
import re
import secrets
import string
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import (
    ColumnElement,
    ForeignKey,
    Index,
    Select,
    String,
    bindparam,
    delete,
    false,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, make_transient_to_detached, mapped_column

from burnbox.dns import to_ascii_hostname
from burnbox.durations import DurationError, format_duration, parse_duration
from burnbox.settings import Settings
from burnbox.timeutil import isoformat, utcnow
from models.caching import MEMBERSHIPS_REVISION_KEY
from models.db import LEAVES_CACHES, Base, UUIDKey, conflict_insert, detached_copy, pipelined
from models.domains.assignments import (
    CREATE_INBOX,
    FULL,
    DomainAssignment,
    assignment_settings,
    domain_settings,
)
from models.domains.domains import VERIFIED, Domain
from models.errors import Conflict, Forbidden, NotFound, ValidationFailed
from models.events import INBOX_CREATED, INBOX_EXPIRED, record_event
from models.mail.caches import INBOX_REVISIONS, InboxCaches, inbox_revision
from models.mail.counters import count_created
from models.mail.entities import MAX_ADDRESS, discard_objects_of, may_be_address
from models.pagination import Page, PageQuery
from models.search import contains
from models.tenancy.access import CALLER_ID, Caller, org_access_of
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.rbac import ORG_SCOPE, TEAM_SCOPE, Grants
from models.tenancy.teams import (
    TEAMS_HOLDING,
    Team,
    TeamAccess,
    TeamMember,
    ensure_team_active,
    held_in_team,
    holding,
    team_access_of,
)

VIEW = "team.inboxes.view"
CREATE = "team.inboxes.create"
MANAGE = "team.inboxes.manage"
EMAILS_VIEW = "team.emails.view"
EMAILS_MANAGE = "team.emails.manage"
# What the creator of an inbox may always do with it, whatever their team role today.
CREATOR_PERMISSIONS = frozenset({VIEW, MANAGE, EMAILS_VIEW, EMAILS_MANAGE})
# Assignment access levels that allow creating inboxes (and extending them).
CREATING_LEVELS = (FULL, CREATE_INBOX)

ALIAS = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}[a-z0-9]")
RANDOM_LENGTH = 10
RANDOM_ALPHABET = string.ascii_lowercase + string.digits
MAX_LOCAL = 64

ACTIVE = "active"
EXPIRED = "expired"
ALL = "all"
STATUSES = (ACTIVE, EXPIRED, ALL)


class Inbox(UUIDKey, Base):
    """A disposable address of one team, receiving mail until `expires_at`."""

    __tablename__ = "inboxes"

    address: Mapped[str] = mapped_column(String(MAX_LOCAL))
    # The routing key: SMTP finds an inbox by this unique, lower-case address alone.
    full_address: Mapped[str] = mapped_column(String(MAX_ADDRESS), unique=True)
    domain_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"),
                                                 index=True)
    # The assignment it was created through; removing the assignment keeps the inbox (it
    # lives out its lifetime) but nobody can extend it any more.
    domain_assignment_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("domain_assignments.id", ondelete="SET NULL"), index=True)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              index=True)
    # None for demo inboxes, and once the creator's account is deleted.
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(index=True)
    # Maintained by ingest and the e-mail actions, in the same transactions as the rows.
    email_count: Mapped[int] = mapped_column(default=0)
    unread_count: Mapped[int] = mapped_column(default=0)
    # SHA-256 of the demo read token (demo inboxes only); see models.mail.demo.
    read_token_hash: Mapped[str | None] = mapped_column(String(64))

    __table_args__ = (Index("ix_inboxes_team_id_created_at", "team_id", "created_at"),)

    @property
    def is_active(self) -> bool:
        """True until the lifetime ends; a lapsed inbox refuses mail at once, before the
        cleanup removes it."""
        return self.expires_at > utcnow()


class InboxRow(Protocol):
    """The columns removal needs (an Inbox, or a row selected with them)."""

    id: uuid.UUID
    full_address: str
    expires_at: datetime
    org_id: uuid.UUID
    team_id: uuid.UUID
    created_by: uuid.UUID | None


def normalise_address(address: str) -> str | None:
    """The routing form of an SMTP address (lower case, IDNA domain); None when it cannot be
    an inbox address at all: no `@`, no local part, an invalid domain, or not
    `may_be_address` (too long, a NUL or another control character), so that what it returns
    is safe to look up whatever face it came through."""
    if not may_be_address(address):
        return None
    local, at, domain = address.strip().rpartition("@")
    if not at or not local:
        return None
    try:
        ascii_domain = to_ascii_hostname(domain)
    except ValueError:
        return None
    return f"{local.lower()}@{ascii_domain}"


def creator_ref(created_by: uuid.UUID | None) -> str | None:
    """An inbox's creator as its events carry it (`created_by`): the fan-out notifies them, and
    webhooks never receive it. None for nobody (demo inboxes, a deleted account)."""
    return None if created_by is None else str(created_by)


# --- access ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class InboxAccess:
    """The caller's standing towards one inbox: every permission they hold on it (the team's,
    plus the creator's) and whether they created it."""

    inbox: Inbox
    permissions: frozenset[str]
    is_creator: bool


# The caller's org role and team role in an inbox's org and team: columns to select beside
# `Inbox` once the query is joined with `join_access` (None where they hold no role).
ACCESS_COLUMNS = (OrgMember.role.label("org_role"), TeamMember.role.label("team_role"))


def join_access(query: Select[Any]) -> Select[Any]:
    """`query` (selecting from `Inbox`) outer-joined with the memberships of the user bound as
    CALLER_ID in the inbox's org and team, so the inbox and the caller's standing come back
    in one statement."""
    caller_id = bindparam(CALLER_ID)
    return (query
            .outerjoin(OrgMember, (OrgMember.org_id == Inbox.org_id)
                       & (OrgMember.user_id == caller_id))
            .outerjoin(TeamMember, (TeamMember.team_id == Inbox.team_id)
                       & (TeamMember.user_id == caller_id)))


def access_of(grants: Grants, caller: Caller, inbox: Inbox, org_role: str | None,
              team_role: str | None) -> InboxAccess:
    """The caller's access to `inbox` from their role names in its org and team; NotFound
    unless they created it or belong to its org (an org member without the team permission
    gets their held set, and then a 403 from the check, as in `require_team`)."""
    is_creator = inbox.created_by is not None and inbox.created_by == caller.user_id
    held = CREATOR_PERMISSIONS if is_creator else frozenset()
    if org_role is not None:
        team_grant = grants.role(TEAM_SCOPE, team_role) if team_role else None
        held = held | held_in_team(grants, grants.role(ORG_SCOPE, org_role), team_grant)
    elif not is_creator:
        raise NotFound("inbox not found")
    return InboxAccess(inbox=inbox, permissions=held, is_creator=is_creator)


_ROLES_IN_INBOX = (join_access(select(*ACCESS_COLUMNS).select_from(Inbox))
                   .where(Inbox.id == bindparam("inbox_id")))
_INBOX_WITH_ROLES = (join_access(select(Inbox, *ACCESS_COLUMNS))
                     .where(Inbox.id == bindparam("inbox_id")))


def inbox_access(session: Session, grants: Grants, caller: Caller, inbox: Inbox) -> InboxAccess:
    """The caller's access to `inbox` (see `access_of`), reading their roles in one query."""
    org_role, team_role = session.execute(
        _ROLES_IN_INBOX, {"inbox_id": inbox.id, CALLER_ID: caller.user_id}).one()
    return access_of(grants, caller, inbox, org_role, team_role)


# An inbox (a detached copy, shareable across requests) with the caller's role names in its
# org and team.
Standing = tuple["Inbox", str | None, str | None]


def resolve_inbox_access(session: Session, grants: Grants, caller: Caller,
                         inbox_id: uuid.UUID, cache: InboxCaches | None = None
                         ) -> InboxAccess:
    """The caller's access to inbox `inbox_id`; NotFound for an unknown or foreign id. One
    statement: the inbox with the caller's roles in its org and team. With `cache` (a
    read-only request's) none while the inbox's and the memberships' revisions stand; the inbox
    is then a detached copy, for reading only."""
    if cache is None:
        standing = _standing(session, caller, inbox_id)
    else:
        standing = cache.standings((inbox_id, caller.user_id),
                                 lambda: _standing(session, caller, inbox_id, copy=True),
                                 also=[*inbox_revision(inbox_id), MEMBERSHIPS_REVISION_KEY])
    if standing is None:
        raise NotFound("inbox not found")
    return access_of(grants, caller, *standing)


def _standing(session: Session, caller: Caller, inbox_id: uuid.UUID, *, copy: bool = False
              ) -> Standing | None:
    row = session.execute(_INBOX_WITH_ROLES,
                          {"inbox_id": inbox_id, CALLER_ID: caller.user_id}).one_or_none()
    if row is None:
        return None
    return (detached_copy(row[0]) if copy else row[0]), row.org_role, row.team_role


@dataclass(frozen=True)
class CreateTarget:
    """Where a new inbox goes: the assignment, and the caller's access to its team (read in the
    same statement), on which `team.inboxes.create` is still to be authorized."""

    assignment: DomainAssignment
    team: TeamAccess


def _assignments_with_standing() -> Select[Any]:
    caller_id = bindparam(CALLER_ID)
    return (select(DomainAssignment, Org, OrgMember.role, TeamMember.role)
            .join(Team, Team.id == DomainAssignment.team_id)
            .join(Org, Org.id == Team.org_id)
            .outerjoin(OrgMember, (OrgMember.org_id == Org.id) & (OrgMember.user_id == caller_id))
            .outerjoin(TeamMember, (TeamMember.team_id == Team.id)
                       & (TeamMember.user_id == caller_id)))


# Assignments with their team's org and the caller's roles in both (None where they hold
# none), the caller bound as CALLER_ID: the assignment and the caller's standing towards its
# team in one statement, for the permission check to use without reading them again.
_ASSIGNMENTS_WITH_STANDING = _assignments_with_standing()
_ASSIGNMENT_WITH_STANDING = _ASSIGNMENTS_WITH_STANDING.where(
    DomainAssignment.id == bindparam("assignment_id"))


def _target(grants: Grants, caller: Caller, row: Any) -> CreateTarget:
    """The target of a row of _ASSIGNMENTS_WITH_STANDING; NotFound unless the caller is a
    member of the assignment's org."""
    assignment, org, org_role, team_role = row
    access = org_access_of(grants, caller, org, org_role)
    return CreateTarget(assignment=assignment,
                        team=team_access_of(access, assignment.team, team_role))


def resolve_create_target(session: Session, grants: Grants, caller: Caller, *,
                          assignment_id: uuid.UUID | None = None, domain: str | None = None,
                          only_team: uuid.UUID | None = None) -> CreateTarget:
    """Where a new inbox goes: the assignment named by id, or the one assignment of domain name
    `domain` through which the caller may create inboxes (in team `only_team` when given: an
    API key's), with the caller's access to its team. The caller authorizes
    `team.inboxes.create` on that access afterwards.

    Raise NotFound for an unknown assignment, one of an org the caller is not in or (for an
    API key) of another team, all with the same answer; NotFound for a domain the caller has no
    usable assignment of; ValidationFailed when several of the caller's teams have the domain
    (name the assignment then)."""
    if assignment_id is not None:
        row = session.execute(_ASSIGNMENT_WITH_STANDING, {
            "assignment_id": assignment_id, CALLER_ID: caller.user_id}).one_or_none()
        # One answer whether the id names nothing or something the caller may not see: "org
        # not found" for another org's assignment once told a caller which ids exist there.
        hidden = NotFound("domain assignment not found")
        if row is None or only_team not in (None, row[0].team_id):
            raise hidden
        try:
            return _target(grants, caller, row)
        except NotFound:
            raise hidden from None
    name = _domain_name(domain or "")
    # The teams where the caller holds the permission, as a subquery: one statement.
    query = (_ASSIGNMENTS_WITH_STANDING.join(Domain, Domain.id == DomainAssignment.domain_id)
             .where(Domain.domain_name == name, DomainAssignment.team_id.in_(TEAMS_HOLDING),
                    DomainAssignment.access_level.in_(CREATING_LEVELS)))
    if only_team is not None:
        query = query.where(DomainAssignment.team_id == only_team)
    candidates = session.execute(query.order_by(DomainAssignment.id),
                                 holding(grants, caller.user_id, CREATE)).all()
    if not candidates:
        raise NotFound(f"none of your teams can create inboxes on {name}")
    if len(candidates) > 1:
        raise ValidationFailed("several of your teams have this domain; give "
                               "domain_assignment_id", details={"domain": [
                                   "assigned to several of your teams"]})
    return _target(grants, caller, candidates[0])


def _domain_name(text: str) -> str:
    try:
        return to_ascii_hostname(text)
    except ValueError:
        raise ValidationFailed("invalid domain name",
                               details={"domain": ["not a domain name"]}) from None


# --- creation and lifetime ------------------------------------------------------------------

def normalise_alias(alias: str) -> str:
    """The stored local part for `alias` (lower-cased, trimmed); raise ValidationFailed."""
    local = alias.strip().lower()
    if not ALIAS.fullmatch(local) or ".." in local:
        raise ValidationFailed("invalid alias", details={"alias": [
            "2-64 characters of a-z, 0-9, '.', '_' and '-', starting and ending with a letter "
            "or digit, without '..'"]})
    return local


def _random_local() -> str:
    return "".join(secrets.choice(RANDOM_ALPHABET) for _ in range(RANDOM_LENGTH))


def parse_ttl(value: str | None, field: str, default: timedelta, ceiling: timedelta
              ) -> timedelta:
    """A lifetime asked for as a Go duration: `default` when None; ValidationFailed (naming
    `field`) unless it is a duration above 0 and at most `ceiling`."""
    if value is None:
        return default
    try:
        lifetime = parse_duration(value)
    except DurationError as exc:
        raise ValidationFailed(f"invalid {field}", details={field: [str(exc)]}) from None
    if lifetime <= timedelta(0):
        raise ValidationFailed(f"invalid {field}", details={field: ["must be longer than 0s"]})
    if lifetime > ceiling:
        raise ValidationFailed(f"invalid {field}", details={
            field: [f"must not exceed {format_duration(ceiling)}"]})
    return lifetime


def _live_count(session: Session, domain_id: uuid.UUID, now: datetime) -> int:
    return session.scalar(select(func.count()).where(Inbox.domain_id == domain_id,
                                                     Inbox.expires_at > now)) or 0


def _holder(session: Session, full_address: str) -> Inbox | None:
    return session.scalars(select(Inbox).where(Inbox.full_address == full_address)).first()


# The domain's row, locked (FOR UPDATE on PostgreSQL; SQLite has one writer at a time anyway).
_DOMAIN_LOCK = select(Domain.id).where(Domain.id == bindparam("domain_id")).with_for_update()


def create_inbox(session: Session, settings: Settings, assignment: DomainAssignment, *,
                 created_by: uuid.UUID | None, alias: str | None = None,
                 ttl: str | None = None, read_token_hash: str | None = None,
                 org: Org | None = None) -> Inbox:
    """Create an inbox through `assignment` and record `inbox.created`. The caller has been
    authorized for `team.inboxes.create` (or is the demo mode) and commits; `org` is the
    team's org row when the authorization read it (it is not read again for the settings).

    Raise Conflict when the team is archived, the domain is not verified, the domain's
    `max_inboxes_per_domain` is reached (with `limit`) or the address is live already;
    Forbidden for a read-only assignment; ValidationFailed for a bad alias or ttl.
    """
    team, domain = assignment.team, assignment.domain
    ensure_team_active(team)
    if assignment.access_level not in CREATING_LEVELS:
        raise Forbidden(f"the domain {domain.domain_name} is assigned to this team read-only")
    if domain.status != VERIFIED:
        raise Conflict(f"the domain {domain.domain_name} is not verified yet")
    limits = assignment_settings(session, settings, assignment, org)
    lifetime = parse_ttl(ttl, "ttl", limits.inbox_default_ttl, limits.inbox_max_ttl)
    cap = limits.max_inboxes_per_domain
    if cap or alias is not None:
        # One such creation per domain at a time: the cap's count and the alias's holder
        # check stay true until this transaction commits (catch-all ingest's twin first
        # messages wait here, then find the inbox the first one made). A random local part
        # needs neither: 36^10 names never meet, and a test suite's parallel creations on
        # one domain would otherwise queue here, one commit after another.
        session.execute(_DOMAIN_LOCK, {"domain_id": assignment.domain_id})
    now = utcnow()
    if cap and _live_count(session, domain.id, now) >= cap:
        raise Conflict(f"the domain {domain.domain_name} has reached its limit of {cap} "
                       "live inboxes", extra={"limit": cap})
    values = {"id": uuid.uuid4(), "domain_id": domain.id, "domain_assignment_id": assignment.id,
              "team_id": team.id, "org_id": team.org_id, "created_by": created_by,
              "created_at": now, "expires_at": now + lifetime, "email_count": 0,
              "unread_count": 0, "read_token_hash": read_token_hash}
    if alias is None:
        inbox = _insert_random(session, values, domain.domain_name)
    else:
        local = _claim_alias(session, alias, domain.domain_name, now)
        found = _insert(session, {**values, "address": local,
                                  "full_address": f"{local}@{domain.domain_name}"})
        if found is None:  # the domain's lock keeps others off it since the check: as the check
            raise Conflict(f"the address {local}@{domain.domain_name} is already in use")
        inbox = found
    # Two writes whose results nobody reads: one round trip on PostgreSQL, where they took two.
    with pipelined(session):
        record_event(session, INBOX_CREATED, {
            "inbox_id": str(inbox.id), "address": inbox.full_address, "team_id": str(team.id),
            "expires_at": isoformat(inbox.expires_at),
            "created_by": creator_ref(inbox.created_by)},
            org_id=team.org_id, team_id=team.id)
        count_created(session, team.org_id, team.id, domain.id, now)  # last: its lock is shared
    return inbox


def _claim_alias(session: Session, alias: str, domain_name: str, now: datetime) -> str:
    """The alias's local part, free on the domain: a lapsed holder is removed first, a live
    one is a Conflict."""
    local = normalise_alias(alias)
    holder = _holder(session, f"{local}@{domain_name}")
    if holder is not None:
        if holder.expires_at > now:
            raise Conflict(f"the address {holder.full_address} is already in use")
        remove_inboxes(session, [holder], expired=True)
    return local


def _insert_random(session: Session, values: dict[str, Any], domain_name: str) -> Inbox:
    """The inbox of `values` under a random local part that nothing holds on the domain."""
    while True:  # 36^10 names: a collision is rare, several in a row never happen
        local = _random_local()
        inbox = _insert(session, {**values, "address": local,
                                  "full_address": f"{local}@{domain_name}"})
        if inbox is not None:
            return inbox


@functools.cache
def _insert_inbox(dialect: str) -> Any:
    """An inbox's INSERT that does nothing when its address is held (live, or lapsed and not yet
    removed), returning the id it inserted; built once per dialect. Why not the ORM's flush
    after a look for a holder: a random local part never meets one, so the look was a statement
    per creation for nothing, and the flush's unit of work cost more than the statement."""
    table = Inbox.__table__
    return (conflict_insert(dialect)(table)
            .on_conflict_do_nothing(index_elements=[table.c.full_address])
            .returning(table.c.id))


def _insert(session: Session, values: dict[str, Any]) -> Inbox | None:
    """Insert the inbox of `values` (every column) and return it, an entity of the session
    as if it had been loaded; None when its address is held. It moves no cache revision, as a
    new inbox's flush does not (`models.caching.is_family_parent`)."""
    inserted = session.execute(_insert_inbox(session.get_bind().dialect.name), values,
                               execution_options={LEAVES_CACHES: True})
    if inserted.first() is None:  # the address is held: nothing was inserted
        return None
    inbox = Inbox(**values)
    make_transient_to_detached(inbox)
    session.add(inbox)
    return inbox


# The access level of an inbox's assignment (None once the assignment is removed), read by the
# statement that locks the inbox's row.
_LOCKED_LEVEL = (select(DomainAssignment.access_level).select_from(Inbox)
                 .outerjoin(DomainAssignment, DomainAssignment.id == Inbox.domain_assignment_id)
                 .where(Inbox.id == bindparam("inbox_id"))
                 .with_for_update(of=Inbox))


def _ensure_manageable(session: Session, access: InboxAccess) -> None:
    """Lock the inbox's row (FOR UPDATE) and raise Forbidden unless its assignment lets the
    caller manage it: `full`, or `create_inbox` for the inbox's own creator. A removed
    assignment or a read-only one lets people read the inbox, nothing more. NotFound when the
    inbox went meanwhile (a concurrent deletion)."""
    row = session.execute(_LOCKED_LEVEL, {"inbox_id": access.inbox.id}).one_or_none()
    if row is None:
        raise NotFound("inbox not found")
    level = row.access_level
    if level == FULL or (level == CREATE_INBOX and access.is_creator):
        return
    raise Forbidden("the inbox's domain assignment does not let you manage it")


def extend_inbox(session: Session, settings: Settings, access: InboxAccess,
                 duration: str | None = None) -> Inbox:
    """Push the inbox's expiry back by `duration` (default: the default ttl), never past
    created_at + the max ttl in force now. Raise Conflict when it has lapsed already or is at
    its longest life, ValidationFailed for a bad duration, Forbidden (assignment level)."""
    inbox = access.inbox
    session.refresh(inbox, with_for_update=True)
    if inbox.expires_at <= utcnow():
        raise Conflict("the inbox has expired")
    _ensure_manageable(session, access)
    team = session.get(Team, inbox.team_id)
    assert team is not None  # the inbox row cascades away with its team
    limits = domain_settings(session, settings, team.org_id, inbox.domain_id, team_id=team.id,
                             assignment_id=inbox.domain_assignment_id)
    step = parse_ttl(duration, "duration", limits.inbox_default_ttl, limits.inbox_max_ttl)
    latest = inbox.created_at + limits.inbox_max_ttl
    new_expiry = min(inbox.expires_at + step, latest)
    if new_expiry <= inbox.expires_at:
        raise Conflict(f"the inbox already lives as long as allowed (max ttl "
                       f"{format_duration(limits.inbox_max_ttl)})",
                       extra={"max_expires_at": isoformat(latest)})
    inbox.expires_at = new_expiry
    session.flush()
    return inbox


def delete_inbox(session: Session, access: InboxAccess) -> None:
    """Remove the inbox with its e-mails and attachments (objects after commit)."""
    _ensure_manageable(session, access)  # which locked its row
    remove_inboxes(session, [access.inbox], expired=False, locked=True)


def remove_inboxes(session: Session, rows: Sequence[InboxRow], *, expired: bool,
                   locked: bool = False) -> None:
    """Delete inboxes (their e-mails and attachments cascade) and discard their objects after
    commit. With `expired`, record `inbox.expired` for each in the same transaction, so the
    event exists exactly when the removal committed. `locked`: this transaction holds their
    rows' locks already (FOR UPDATE), which `discard_before_cascade` would take."""
    if not rows:
        return
    ids = [row.id for row in rows]
    if expired:
        for row in rows:
            record_event(session, INBOX_EXPIRED, {
                "inbox_id": str(row.id), "address": row.full_address,
                "expired_at": isoformat(row.expires_at), "created_by": creator_ref(row.created_by)},
                org_id=row.org_id, team_id=row.team_id)
    if locked:
        discard_objects_of(session, select(Inbox.id).where(Inbox.id.in_(ids)))
    else:
        discard_before_cascade(session, Inbox.id.in_(ids))
    session.execute(delete(Inbox).where(Inbox.id.in_(ids)),
                    execution_options=INBOX_REVISIONS.naming(ids))


def discard_before_cascade(session: Session, *where: ColumnElement[bool],
                           guard: Select[Any] | None = None) -> int:
    """Before a delete that removes the inboxes matching `where` (itself, or through a database
    cascade from their domain, team or org), lock them and hand every stored object of their
    e-mails to `models.mail.entities.discard_objects_of`; return how many keys went to the outbox.

    The locks keep the keys complete: mail ingest locks its live recipients too (in id order,
    as here), so a message committing meanwhile is either seen here or finds its inbox gone and
    keeps nothing. `guard` selects parent rows to lock first (FOR UPDATE): creating an inbox
    takes a key-share lock on its team and domain, so no inbox can appear under a parent being
    deleted once it is locked. SQLite has no row locks and needs none: a write transaction
    holds the whole database from its start (BEGIN IMMEDIATE)."""
    if guard is not None:
        _lock(session, guard)
    _lock(session, select(Inbox.id).where(*where).order_by(Inbox.id))
    return discard_objects_of(session, select(Inbox.id).where(*where))


def _lock(session: Session, query: Select[Any]) -> None:
    # Inside a subquery the rows are locked by the database without coming back to Python,
    # however many there are.
    session.execute(select(func.count()).select_from(query.with_for_update().subquery()))


def remove_lapsed_inboxes(session: Session, limit: int, now: datetime | None = None) -> int:
    """Remove up to `limit` inboxes whose lifetime ended (oldest expiry first) with their
    `inbox.expired` events; return how many. Rows another cleanup is removing right now are
    skipped (PostgreSQL SKIP LOCKED), so concurrent runs never remove one twice."""
    query = (select(Inbox.id, Inbox.full_address, Inbox.expires_at, Inbox.org_id, Inbox.team_id,
                    Inbox.created_by)
             .where(Inbox.expires_at <= (now or utcnow()))
             .order_by(Inbox.expires_at, Inbox.id).limit(limit)
             .with_for_update(skip_locked=True))
    rows = session.execute(query).all()
    remove_inboxes(session, rows, expired=True, locked=True)
    return len(rows)


# --- reading --------------------------------------------------------------------------------

def _with_status(query: Any, status: str) -> Any:
    """`query` narrowed to the live (ACTIVE) or lapsed (EXPIRED) inboxes, as of the moment
    bound as NOW; all of them for ALL."""
    if status == ACTIVE:
        return query.where(Inbox.expires_at > bindparam(NOW))
    if status == EXPIRED:
        return query.where(Inbox.expires_at <= bindparam(NOW))
    return query


NOW = "now"
_NEWEST_FIRST = (Inbox.created_at.desc(), Inbox.id.desc())
_VIEWABLE = select(Inbox).where(or_(Inbox.created_by == bindparam(CALLER_ID),
                                    Inbox.team_id.in_(TEAMS_HOLDING)))
_OF_TEAM = select(Inbox).where(Inbox.team_id == bindparam("team_id"))
# The unfiltered lists, which the UI and tests poll: built once per status
# (models.pagination.PageQuery).
_PAGES = {(query, status): PageQuery(_with_status(query, status).order_by(*_NEWEST_FIRST))
          for query in (_VIEWABLE, _OF_TEAM) for status in STATUSES}


def _page(session: Session, query: Any, params: dict[str, Any], status: str, q: str | None,
          page: int, per_page: int, address: str | None = None) -> Page[Inbox]:
    """One page of `query` (_VIEWABLE or _OF_TEAM, `params` bound) in `status`, newest first;
    `q` matches part of the address, `address` the whole of it (in its routing form: any
    case, a Unicode domain too; one that cannot be an address matches nothing)."""
    filters: list[ColumnElement[bool]] = []
    if q and q.strip():
        filters.append(contains(Inbox.full_address, q.strip().lower()))
    if address is not None:
        wanted = normalise_address(address)
        filters.append(Inbox.full_address == wanted if wanted else false())
    if filters:
        pages = PageQuery(_with_status(query, status).where(*filters).order_by(*_NEWEST_FIRST))
    else:
        pages = _PAGES[query, status]
    return pages.run(session, page, per_page, {**params, NOW: utcnow()})


def list_inboxes(session: Session, grants: Grants, caller: Caller, *, status: str = ACTIVE,
                 q: str | None = None, page: int = 1, per_page: int = 20,
                 address: str | None = None) -> Page[Inbox]:
    """The inboxes the caller may view, newest first: the ones they created and those of teams
    where they hold `team.inboxes.view`. `status` is active, expired or all; `q` matches part
    of the address, `address` the whole address (at most one inbox)."""
    return _page(session, _VIEWABLE, holding(grants, caller.user_id, VIEW), status, q, page,
                 per_page, address)


def list_team_inboxes(session: Session, team_id: uuid.UUID, *, status: str = ACTIVE,
                      q: str | None = None, page: int = 1, per_page: int = 20,
                      address: str | None = None) -> Page[Inbox]:
    """One team's inboxes, newest first, filtered as in `list_inboxes`."""
    return _page(session, _OF_TEAM, {"team_id": team_id}, status, q, page, per_page, address)


# --- what removals and transfers of domains and teams do to inboxes -------------------------

def count_domain_inboxes(session: Session, domain_id: uuid.UUID) -> int:
    """How many inboxes, live or lapsed, the domain has."""
    return session.scalar(select(func.count()).where(Inbox.domain_id == domain_id)) or 0


def count_active_domain_inboxes(session: Session, domain_id: uuid.UUID) -> int:
    """How many live inboxes the domain has."""
    return _live_count(session, domain_id, utcnow())


def count_domain_emails(session: Session, domain_id: uuid.UUID) -> int:
    """How many e-mails the domain's inboxes hold."""
    return session.scalar(select(func.coalesce(func.sum(Inbox.email_count), 0))
                          .where(Inbox.domain_id == domain_id)) or 0


def count_team_inboxes(session: Session, team_id: uuid.UUID) -> int:
    """How many inboxes, live or lapsed, the team has."""
    return session.scalar(select(func.count()).where(Inbox.team_id == team_id)) or 0


def lapse_team_inboxes(session: Session, team_id: uuid.UUID, target_org_id: uuid.UUID) -> None:
    """Before the team moves to org `target_org_id`: its live inboxes lapse now, and all of
    them follow it to the new org."""
    # They live on the old org's domains, which do not move with the team: they stop receiving
    # now and the next cleanup removes them (with their inbox.expired events).
    now = utcnow()
    session.execute(update(Inbox).where(Inbox.team_id == team_id, Inbox.expires_at > now)
                    .values(expires_at=now))
    session.execute(update(Inbox).where(Inbox.team_id == team_id).values(org_id=target_org_id))


def lapse_domain_inboxes(session: Session, domain_id: uuid.UUID) -> None:
    """Before the domain moves to another org: its live inboxes lapse now."""
    # They belong to the old org's teams: they must not receive the new org's mail. The next
    # cleanup removes them (inbox.expired, objects), as after a team transfer.
    now = utcnow()
    session.execute(update(Inbox).where(Inbox.domain_id == domain_id, Inbox.expires_at > now)
                    .values(expires_at=now))


def discard_team_objects(session: Session, team_id: uuid.UUID) -> int:
    """Before the team goes: hand over the objects of every inbox its deletion cascades to."""
    return discard_before_cascade(session, Inbox.team_id == team_id,
                                  guard=select(Team.id).where(Team.id == team_id))


def discard_domain_objects(session: Session, domain_id: uuid.UUID) -> int:
    """Before the domain goes: hand over the objects of every inbox its deletion cascades to."""
    return discard_before_cascade(session, Inbox.domain_id == domain_id,
                                  guard=select(Domain.id).where(Domain.id == domain_id))


def discard_org_objects(session: Session, org_id: uuid.UUID) -> int:
    """Before the org goes: hand over the objects of every inbox its deletion cascades to (its
    teams' inboxes, and any left on its domains by another org after a domain transfer)."""
    return discard_before_cascade(
        session, or_(Inbox.org_id == org_id,
                     Inbox.domain_id.in_(select(Domain.id).where(Domain.org_id == org_id))),
        guard=select(Team.id).where(Team.org_id == org_id).order_by(Team.id))
