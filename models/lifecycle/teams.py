"""Deleting a team and moving it to another org: what each context keeps in the team, counted,
discarded, dropped or moved, then the team itself.

Actions flush but do not commit: the caller commits.
"""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from models.apikeys.keys import count_team_keys
from models.delivery.webhooks import count_team_webhooks
from models.domains.assignments import count_team_assignments, drop_team_assignments
from models.lifecycle.memberships import drop_from_team
from models.mail.inboxes import count_team_inboxes, discard_team_objects, lapse_team_inboxes
from models.sso.mappings import drop_team_mappings
from models.tenancy.teams import (
    Team,
    TeamAccess,
    check_transfer,
    count_team_members,
    members_outside,
    move_team,
    remove_team,
)


def team_impact(session: Session, team: Team) -> dict[str, int]:
    """What deleting the team would remove, by kind."""
    return {"members": count_team_members(session, team.id),
            "api_keys": count_team_keys(session, team.id),
            "webhooks": count_team_webhooks(session, team.id),
            "domain_assignments": count_team_assignments(session, team.id),
            "inboxes": count_team_inboxes(session, team.id)}


def delete_team(session: Session, access: TeamAccess) -> None:
    """Delete the team and everything that belongs to it, audited with its impact: the stored
    objects of its inboxes' e-mails are handed over first (they go after commit), then the
    database cascades from the team row."""
    team = access.team
    impact = team_impact(session, team)
    discard_team_objects(session, team.id)
    remove_team(session, access, impact)


def transfer_team(session: Session, access: TeamAccess, target_org_id: uuid.UUID) -> Team:
    """Move the team to another org (a system administrator's action). Members who are not
    members of the target org leave the team (with their keys of it); its domain assignments
    name the old org's domains and go; its inboxes, on those domains, lapse now; the SSO domain
    mappings naming it go (they would place users outside the mapping's org). Its webhooks
    and API keys point at the team and move with it. Raise NotFound for an unknown target,
    ValidationFailed for the same org, Conflict when the target has a team of the same name."""
    team = access.team
    target = check_transfer(session, team, target_org_id)
    for member in members_outside(session, team.id, target.id):
        drop_from_team(session, member)
    drop_team_assignments(session, team.id)
    drop_team_mappings(session, team.id)
    lapse_team_inboxes(session, team.id, target.id)
    return move_team(session, access, target)
