"""Organizations and their members: the minimal core that setup needs (an org and its owner).

The tenancy work extends this module (teams, invites, settings, permissions). Org roles rank
owner > admin > member.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, func, select
from sqlalchemy.orm import Mapped, Session, aliased, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, Timestamps, UUIDKey
from models.errors import ValidationFailed

OWNER = "owner"
MAX_NAME = 200
MAX_SLUG = 64


class Org(UUIDKey, Timestamps, Base):
    """An organization: members, domains, teams and settings hang off it."""

    __tablename__ = "orgs"

    name: Mapped[str] = mapped_column(String(MAX_NAME))
    slug: Mapped[str] = mapped_column(String(MAX_SLUG), unique=True)
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)


class OrgMember(Base):
    """A user's membership of an org, with their org role."""

    __tablename__ = "org_members"

    org_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("orgs.id", ondelete="CASCADE"),
                                              primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"),
                                               primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


def slugify(name: str) -> str:
    """A URL-safe slug: ASCII lower-case words joined by hyphens ("org" if nothing is left)."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:MAX_SLUG].strip("-")
    return slug or "org"


def _unique_slug(session: Session, name: str) -> str:
    base = slugify(name)[:MAX_SLUG - 9].strip("-") or "org"
    taken = set(session.scalars(select(Org.slug).where(Org.slug.like(f"{base}%"))))
    if base not in taken:
        return base
    # A short random suffix rather than -2, -3...: concurrent creators do not race for one name.
    while True:
        candidate = f"{base}-{uuid.uuid4().hex[:8]}"
        if candidate not in taken:
            return candidate


def create_org(session: Session, name: str, owner_id: uuid.UUID) -> Org:
    """Add an org named `name` (1-200 characters) with a unique slug, and make `owner_id` its
    owner. The caller commits."""
    clean = name.strip()
    if not 1 <= len(clean) <= MAX_NAME:
        raise ValidationFailed("invalid org name",
                               details={"name": [f"must be 1-{MAX_NAME} characters"]})
    now = utcnow()
    org = Org(id=uuid.uuid4(), name=clean, slug=_unique_slug(session, clean), settings={},
              created_at=now, updated_at=now)
    session.add(org)
    session.flush()
    session.add(OrgMember(org_id=org.id, user_id=owner_id, role=OWNER, created_at=now))
    return org


def first_owner_id(session: Session, org_id: uuid.UUID) -> uuid.UUID | None:
    """The org's longest-standing owner (None for an org without one): who the command line
    acts as in the org unless the operator names someone."""
    return session.scalar(select(OrgMember.user_id).where(
        OrgMember.org_id == org_id, OrgMember.role == OWNER)
        .order_by(OrgMember.created_at, OrgMember.user_id).limit(1))


def sole_owner_org_ids(session: Session, user_id: uuid.UUID) -> list[uuid.UUID]:
    """Ids of the orgs in which `user_id` is the only owner."""
    other = aliased(OrgMember)
    owners = (select(func.count()).select_from(other)
              .where(other.org_id == OrgMember.org_id, other.role == OWNER)
              .scalar_subquery())
    query = select(OrgMember.org_id).where(OrgMember.user_id == user_id,
                                           OrgMember.role == OWNER, owners == 1)
    return list(session.scalars(query))
