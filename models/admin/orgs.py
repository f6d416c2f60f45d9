"""Every org, as system administrators list them: searchable by name or slug, with their
member, team and domain counts."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from models.domains.domains import Domain
from models.pagination import Page, paginate
from models.search import contains
from models.tenancy.orgs import Org, OrgMember
from models.tenancy.teams import Team


def _counts(session: Session, column: Any, org_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """How many rows of `column`'s table each org has (one grouped query for the page)."""
    rows = session.execute(select(column, func.count()).where(column.in_(org_ids))
                           .group_by(column))
    return {org_id: count for org_id, count in rows}


def org_page(session: Session, q: str, page: int, per_page: int) -> Page[dict[str, Any]]:
    """One page of orgs, oldest first, whose name or slug contains `q` (any case; empty: all),
    each `{id, name, slug, created_at, updated_at, member_count, team_count, domain_count}`
    (archived teams included)."""
    query = select(Org).order_by(Org.created_at, Org.id)
    if q:
        text = q.lower()
        query = query.where(or_(contains(func.lower(Org.name), text),
                                contains(func.lower(Org.slug), text)))
    found = paginate(session, query, page, per_page)
    ids = [org.id for org in found.data]
    members = _counts(session, OrgMember.org_id, ids)
    teams = _counts(session, Team.org_id, ids)
    domains = _counts(session, Domain.org_id, ids)
    return dataclasses.replace(found, data=[
        {"id": org.id, "name": org.name, "slug": org.slug, "created_at": org.created_at,
         "updated_at": org.updated_at, "member_count": members.get(org.id, 0),
         "team_count": teams.get(org.id, 0), "domain_count": domains.get(org.id, 0)}
        for org in found.data])
