"""Who is in an org or a team, as the API shows it, and the outcome of bulk membership changes.

A member is shown as `{user_id, email, display_name, role, created_at}` for org and team members
alike. Bulk operations run each item in its own savepoint, so one bad item neither aborts nor
undoes the others, and report every item as done, skipped (nothing to do) or failed (with why).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute, Session

from models.errors import Conflict, DomainError, ValidationFailed
from models.identity.users import User

SKIPPED = "skipped"
FAILED = "failed"
MAX_BULK_ITEMS = 100

T = TypeVar("T")


class Membership(Protocol):
    """An org or team membership row."""

    user_id: uuid.UUID
    role: str
    created_at: datetime


@dataclass(frozen=True)
class MemberView:
    """A member as the API shows it."""

    user_id: uuid.UUID
    email: str
    display_name: str
    role: str
    created_at: datetime


def flush_or_conflict(session: Session, message: str, *rows: object) -> None:
    """Add `rows` and flush, in a savepoint: a unique key taken meanwhile by a concurrent request
    (which the checks before could not see) becomes Conflict(message) instead of a server error,
    and leaves neither the rows nor a failed transaction behind."""
    try:
        with session.begin_nested():
            session.add_all(rows)
            session.flush()
    except IntegrityError as exc:
        raise Conflict(message) from exc


def member_views(session: Session, rows: Sequence[Membership]) -> list[MemberView]:
    """The views of membership rows, in the same order (one query for all their users)."""
    ids = {row.user_id for row in rows}
    users = {user.id: user for user in session.scalars(select(User).where(User.id.in_(ids)))}
    return [MemberView(user_id=row.user_id, email=users[row.user_id].email,
                       display_name=users[row.user_id].display_name, role=row.role,
                       created_at=row.created_at) for row in rows]


def member_view(session: Session, row: Membership) -> MemberView:
    """The view of one membership row."""
    return member_views(session, [row])[0]


def ensure_not_last_holder(session: Session, member: Membership, top_role: str, *,
                           group_key: InstrumentedAttribute[uuid.UUID],
                           member_group_key: InstrumentedAttribute[uuid.UUID],
                           group_name: str) -> None:
    """Raise Conflict when `member` holds `top_role` and no other member of its group does: the
    last holder of the top role (an org's owner, a team's lead) cannot leave or be demoted.
    `group_key` is the group's id column, `member_group_key` the membership's column naming it.
    """
    if member.role != top_role:
        return
    group_id = getattr(member, member_group_key.key)
    # Lock the group row, or two requests taking away its last two holders could each count the
    # other one and both go ahead (PostgreSQL row lock; SQLite locks the whole database for
    # every write transaction already).
    session.execute(select(group_key).where(group_key == group_id).with_for_update())
    membership = member_group_key.class_
    holders = session.scalar(select(func.count()).select_from(membership).where(
        member_group_key == group_id, membership.role == top_role)) or 0
    if holders <= 1:
        raise Conflict(f"the last {top_role} of {group_name} cannot leave or be demoted; "
                       f"make another member {top_role} first")


@dataclass(frozen=True)
class BulkItem:
    """The outcome for one item of a bulk request: `input` as the caller gave it."""

    input: str
    status: str
    id: uuid.UUID | None = None
    message: str | None = None


@dataclass
class BulkResult:
    """Every item's outcome, in request order; `done` names the success status."""

    done: str
    results: list[BulkItem] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """How many items ended in each status (every status named, zeros included)."""
        found = Counter(item.status for item in self.results)
        return {status: found[status] for status in (self.done, SKIPPED, FAILED)}


class Skip(Exception):
    """Raised by a bulk step when the item needs no change (already a member...)."""


def run_bulk(session: Session, items: Iterable[T], label: Callable[[T], str],
             step: Callable[[T], uuid.UUID], done: str) -> BulkResult:
    """Run `step` on each item in its own savepoint. A returned id marks the item `done`; Skip
    marks it skipped; a DomainError marks it failed and rolls back only that item's changes."""
    items = list(items)
    if len(items) > MAX_BULK_ITEMS:
        raise ValidationFailed(f"at most {MAX_BULK_ITEMS} items per request",
                               details={"items": [f"at most {MAX_BULK_ITEMS}"]})
    result = BulkResult(done)
    for item in items:
        savepoint = session.begin_nested()
        try:
            item_id = step(item)
        except Skip as skip:
            savepoint.rollback()
            result.results.append(BulkItem(label(item), SKIPPED, message=str(skip)))
        except DomainError as exc:
            savepoint.rollback()
            result.results.append(BulkItem(label(item), FAILED, message=exc.message))
        else:
            savepoint.commit()
            result.results.append(BulkItem(label(item), done, id=item_id))
    return result


def as_audit(view: MemberView) -> dict[str, Any]:
    """A member's audit snapshot."""
    return {"user_id": str(view.user_id), "email": view.email, "role": view.role}
