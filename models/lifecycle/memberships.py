"""A member leaving a team or an org, for any reason: what they created there with their rights
(their API keys) is revoked before the membership row goes, so nothing they held outlives it.

Actions flush but do not commit: the caller commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from models.apikeys.keys import revoke_member_org_keys, revoke_member_team_keys
from models.errors import Conflict
from models.tenancy.access import OrgAccess
from models.tenancy.members import removable_member, remove_org_membership
from models.tenancy.roster import BulkResult, Skip, run_bulk
from models.tenancy.teams import (
    TeamAccess,
    TeamMember,
    drop_team_member,
    org_team_memberships,
    removable_team_member,
    remove_team_membership,
    team_membership,
)


def drop_from_team(session: Session, member: TeamMember) -> None:
    """The member leaves the team (unchecked, unaudited: the action that drops them is): their
    keys of the team are revoked, then the row goes."""
    revoke_member_team_keys(session, member.team_id, member.user_id)
    drop_team_member(session, member)


def remove_team_member(session: Session, access: TeamAccess, user_id: uuid.UUID,
                       action: str = "team.member_remove") -> None:
    """Take a member out of the team (a member may remove themselves), revoking their keys of
    the team; the last lead stays. Raise NotFound, Forbidden (rank) or Conflict (last lead)."""
    member = removable_team_member(session, access, user_id)
    revoke_member_team_keys(session, access.team.id, user_id)
    remove_team_membership(session, access, member, action)


def leave_team(session: Session, access: TeamAccess) -> None:
    """The caller leaves the team. Raise Conflict when they are not in it (an org owner or
    admin reaching it through their org role) or are its last lead."""
    if team_membership(session, access.team.id, access.org.caller.user_id) is None:
        raise Conflict("you are not a member of this team")
    remove_team_member(session, access, access.org.caller.user_id, action="team.leave")


def bulk_remove_team_members(session: Session, access: TeamAccess,
                             user_ids: Sequence[uuid.UUID]) -> BulkResult:
    """Remove each user: `removed`, `skipped` (not a member) or `failed` (rank, last lead)."""

    def step(user_id: uuid.UUID) -> uuid.UUID:
        if team_membership(session, access.team.id, user_id) is None:
            raise Skip("not a member of this team")
        remove_team_member(session, access, user_id)
        return user_id

    return run_bulk(session, user_ids, str, step, "removed")


def deactivate_member(session: Session, org: OrgAccess, user_id: uuid.UUID) -> None:
    """Remove a member from the org and from every team of it, revoking their keys in each team
    and then any other key they made in the org (in teams they reached through their org role).
    A member may deactivate themselves (leave); others need a strictly higher rank; the last
    owner cannot go. Teams left without a lead stay reachable by the org's owners and admins."""
    member = removable_member(session, org, user_id)
    team_ids = []
    for team_member in org_team_memberships(session, org.org.id, user_id):
        team_ids.append(str(team_member.team_id))
        drop_from_team(session, team_member)
    revoke_member_org_keys(session, org.org.id, user_id)
    remove_org_membership(session, org, member, team_ids)
