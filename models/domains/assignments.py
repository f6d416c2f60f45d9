"""Domain assignments: a domain of an org made available to one of its teams, at an access level,
with the assignment level of the settings cascade.

Rules kept here: a team holds at most one assignment per domain, only of its own org's domains
and only while it is active; an assignment's settings may only tighten the levels above it
(platform -> org -> domain -> team). Every change is audited. Actions flush but do not commit:
the caller commits. Removing a domain or moving a team to another org drops its assignments
(`models.lifecycle` calls `drop_domain_assignments` and `drop_team_assignments`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Boolean, ForeignKey, String, UniqueConstraint, delete, false, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column, relationship

from burnbox.settings import Settings
from models.db import Base, Timestamps, UUIDKey
from models.domains.domains import Domain, domain_layer, merged_settings
from models.errors import Conflict, NotFound, ValidationFailed
from models.pagination import Page, paginate
from models.tenancy.access import Caller, audit
from models.tenancy.orgs import Org
from models.tenancy.rbac import Grants
from models.tenancy.roster import flush_or_conflict
from models.tenancy.settings_cascade import (
    ASSIGNMENT,
    EffectiveSettings,
    org_layers,
    org_row_layers,
    resolve,
    stored_layer,
    validate_layer,
)
from models.tenancy.teams import Team, ensure_team_active, team_ids_with_permission, team_layer

# What a team may do with an assigned domain.
FULL = "full"
CREATE_INBOX = "create_inbox"
READ_ONLY = "read_only"
ACCESS_LEVELS = (FULL, CREATE_INBOX, READ_ONLY)

# The permission that lets a team member see (and so use) the team's domains.
VIEW_ASSIGNMENTS = "team.domains.view"


class DomainAssignment(UUIDKey, Timestamps, Base):
    """A domain made available to one team of its org, at an access level."""

    __tablename__ = "domain_assignments"

    domain_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"),
                                                 index=True)
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    access_level: Mapped[str] = mapped_column(String(16))
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # Mail to any valid address of the domain creates its inbox in this team (docs/mail.md).
    catch_all: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    domain: Mapped[Domain] = relationship(lazy="joined", innerjoin=True)
    team: Mapped[Team] = relationship(lazy="joined", innerjoin=True)

    __table_args__ = (UniqueConstraint("team_id", "domain_id"),)

    @property
    def domain_name(self) -> str:
        """The assigned domain's name."""
        return self.domain.domain_name


def domain_settings(session: Session, settings: Settings, org_id: uuid.UUID,
                    domain_id: uuid.UUID, *, team_id: uuid.UUID | None = None,
                    assignment_id: uuid.UUID | None = None) -> EffectiveSettings:
    """The settings in force on the org's domain `domain_id`, narrowed to a team and to one
    assignment when given (platform -> org -> domain -> team -> assignment). Raise NotFound
    when a row is missing or belongs to another org."""
    layers = [*org_layers(session, settings, org_id), domain_layer(session, org_id, domain_id)]
    if team_id is not None:
        layers.append(team_layer(session, org_id, team_id))
    if assignment_id is not None:
        layers.append(_assignment_layer(session, org_id, assignment_id))
    return resolve(layers)


def assignment_settings(session: Session, settings: Settings, assignment: DomainAssignment,
                        org: Org | None = None) -> EffectiveSettings:
    """What `domain_settings` answers for the assignment's domain, team and itself, taking the
    domain, team and assignment levels from the rows loaded with it (its domain and team come
    joined) and the org level from `org`, the team's org row when the caller has it already
    (else it is read). Raise NotFound when the rows do not belong to one org, as the queries
    of `domain_settings` would."""
    domain, team = assignment.domain, assignment.team
    if domain.org_id != team.org_id or (org is not None and org.id != team.org_id):
        raise NotFound(f"{ASSIGNMENT} not found")
    above = (org_layers(session, settings, team.org_id) if org is None
             else org_row_layers(session, settings, org))
    return resolve([*above, stored_layer(domain.settings or {}),
                    stored_layer(team.settings or {}), stored_layer(assignment.settings or {})])


def _assignment_layer(session: Session, org_id: uuid.UUID, assignment_id: uuid.UUID
                      ) -> dict[str, Any]:
    row = session.execute(select(Domain.org_id, DomainAssignment.settings)
                          .join(Domain, Domain.id == DomainAssignment.domain_id)
                          .where(DomainAssignment.id == assignment_id)).one_or_none()
    if row is None or row[0] != org_id:
        raise NotFound(f"{ASSIGNMENT} not found")
    return stored_layer(row[1] or {})


def _assignment_snapshot(assignment: DomainAssignment) -> dict[str, Any]:
    return {"domain_id": str(assignment.domain_id), "team_id": str(assignment.team_id),
            "access_level": assignment.access_level, "catch_all": assignment.catch_all,
            "settings": dict(assignment.settings or {})}


def _check_access_level(access_level: str) -> str:
    if access_level not in ACCESS_LEVELS:
        raise ValidationFailed("invalid access level", details={
            "access_level": [f"must be one of {', '.join(ACCESS_LEVELS)}"]})
    return access_level


def _check_catch_all(session: Session, domain_id: uuid.UUID, access_level: str,
                     assignment_id: uuid.UUID | None) -> None:
    """Raise unless an assignment at `access_level` may be the domain's catch-all: it must
    create inboxes (not read-only), and no other team's assignment of the domain is one, so an
    unknown address has exactly one team to create its inbox in."""
    if access_level == READ_ONLY:
        raise ValidationFailed("a read-only assignment cannot be catch-all", details={
            "catch_all": ["the assignment must be able to create inboxes (not read_only)"]})
    # The domain's row is the lock: two teams made catch-all at once cannot both pass.
    session.execute(select(Domain.id).where(Domain.id == domain_id).with_for_update())
    other = session.scalar(select(DomainAssignment.id).where(
        DomainAssignment.domain_id == domain_id, DomainAssignment.catch_all.is_(True),
        DomainAssignment.id != assignment_id))
    if other is not None:
        raise Conflict("another team's assignment of this domain is already catch-all")


def assign_domain(session: Session, settings: Settings, caller: Caller, team: Team,
                  domain_id: uuid.UUID, access_level: str,
                  assignment_settings: Mapping[str, Any] | None = None,
                  catch_all: bool = False) -> DomainAssignment:
    """Make the org's domain `domain_id` available to `team`.

    Raise ValidationFailed for an unknown access level, a domain that is not the team's org's
    (it is not named, so another org's domain is indistinguishable from none) or settings above
    what the levels above allow or a read-only catch-all; Conflict when the team is archived or
    already has the domain, or another assignment of the domain is catch-all.
    """
    level = _check_access_level(access_level)
    ensure_team_active(team)
    domain = session.get(Domain, domain_id)
    if domain is None or domain.org_id != team.org_id:
        raise ValidationFailed("domain not found in this org",
                               details={"domain_id": ["no such domain in this org"]})
    existing = select(DomainAssignment.id).where(DomainAssignment.team_id == team.id,
                                                 DomainAssignment.domain_id == domain_id)
    if session.scalar(existing) is not None:
        raise Conflict("the domain is already assigned to this team")
    above = domain_settings(session, settings, team.org_id, domain_id, team_id=team.id)
    clean = validate_layer(ASSIGNMENT, dict(assignment_settings or {}), above)
    if catch_all:
        _check_catch_all(session, domain_id, level, None)
    assignment = DomainAssignment(id=uuid.uuid4(), domain_id=domain_id, team_id=team.id,
                                  access_level=level, settings=clean)
    if catch_all:
        assignment.catch_all = True
    flush_or_conflict(session, "the domain is already assigned to this team", assignment)
    audit(session, caller, "domain_assignment.create", org_id=team.org_id,
          resource_type="domain_assignment", resource_id=assignment.id,
          after=_assignment_snapshot(assignment))
    return assignment


def get_assignment(session: Session, team: Team, domain_id: uuid.UUID) -> DomainAssignment:
    """The team's assignment of domain `domain_id`; raise NotFound."""
    assignment = session.scalars(select(DomainAssignment).where(
        DomainAssignment.team_id == team.id, DomainAssignment.domain_id == domain_id)).first()
    if assignment is None:
        raise NotFound("domain assignment not found")
    return assignment


def list_assignments(session: Session, team: Team, page: int, per_page: int
                     ) -> Page[DomainAssignment]:
    """One page of the team's assignments, by domain name."""
    query = (select(DomainAssignment).join(DomainAssignment.domain)
             .where(DomainAssignment.team_id == team.id)
             .order_by(Domain.domain_name, DomainAssignment.id))
    return paginate(session, query, page, per_page)


def update_assignment(session: Session, settings: Settings, caller: Caller,
                      assignment: DomainAssignment, *, access_level: str | None = None,
                      assignment_settings: Mapping[str, Any] | None = None,
                      catch_all: bool | None = None) -> DomainAssignment:
    """Change the access level, the settings overrides (merged; None removes a key) and/or
    whether the assignment is the domain's catch-all (as in `assign_domain`)."""
    before = _assignment_snapshot(assignment)
    if access_level is not None:
        assignment.access_level = _check_access_level(access_level)
    if catch_all is not None:
        assignment.catch_all = catch_all
    if assignment.catch_all:
        _check_catch_all(session, assignment.domain_id, assignment.access_level, assignment.id)
    if assignment_settings is not None:
        above = domain_settings(session, settings, assignment.team.org_id,
                                assignment.domain_id, team_id=assignment.team_id)
        assignment.settings = validate_layer(
            ASSIGNMENT, merged_settings(assignment.settings or {}, assignment_settings), above)
    audit(session, caller, "domain_assignment.update", org_id=assignment.team.org_id,
          resource_type="domain_assignment", resource_id=assignment.id, before=before,
          after=_assignment_snapshot(assignment))
    return assignment


def unassign_domain(session: Session, caller: Caller, assignment: DomainAssignment) -> None:
    """Remove the assignment (the domain stays registered to the org)."""
    audit(session, caller, "domain_assignment.delete", org_id=assignment.team.org_id,
          resource_type="domain_assignment", resource_id=assignment.id,
          before=_assignment_snapshot(assignment))
    session.delete(assignment)
    session.flush()


def usable_assignments(session: Session, grants: Grants, user_id: uuid.UUID, page: int,
                       per_page: int, *, only_team: uuid.UUID | None = None
                       ) -> Page[DomainAssignment]:
    """One page of every assignment the user can use across their orgs (in team `only_team`
    alone when given: an API key's): those of the active teams in which they hold
    `team.domains.view`, by domain name then team."""
    team_ids = team_ids_with_permission(session, grants, user_id, VIEW_ASSIGNMENTS)
    if only_team is not None:
        team_ids = [team_id for team_id in team_ids if team_id == only_team]
    query = (select(DomainAssignment).join(DomainAssignment.domain).join(DomainAssignment.team)
             .where(DomainAssignment.team_id.in_(team_ids), Team.is_archived.is_(False))
             .order_by(Domain.domain_name, DomainAssignment.team_id, DomainAssignment.id))
    return paginate(session, query, page, per_page)


def count_team_assignments(session: Session, team_id: uuid.UUID) -> int:
    """How many assignments the team holds."""
    return session.scalar(select(func.count()).where(DomainAssignment.team_id == team_id)) or 0


def drop_team_assignments(session: Session, team_id: uuid.UUID) -> None:
    """Delete the team's assignments (unaudited: the team transfer that does it is audited)."""
    session.execute(delete(DomainAssignment).where(DomainAssignment.team_id == team_id))


def count_domain_assignments(session: Session, domain_id: uuid.UUID) -> int:
    """How many teams the domain is assigned to."""
    return session.scalar(
        select(func.count()).where(DomainAssignment.domain_id == domain_id)) or 0


def drop_domain_assignments(session: Session, domain_id: uuid.UUID) -> int:
    """Delete the domain's assignments (unaudited: the domain transfer that does it records the
    count); return how many went."""
    return session.execute(
        delete(DomainAssignment).where(DomainAssignment.domain_id == domain_id)).rowcount
