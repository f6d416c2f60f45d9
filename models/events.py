"""Domain events and the transactional outbox.

A domain action calls `record_event` inside its transaction. The row commits with the change
that caused it; after commit its id is enqueued for fan-out (webhooks, realtime, notifications),
and the clock re-enqueues rows left undispatched, so a crash between commit and enqueue loses
nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Index, String, and_, bindparam, func, insert, or_, select, union, update
from sqlalchemy.orm import Mapped, Session, make_transient_to_detached, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey, insert_rows, remember_outbox

# The events that leave the system (webhooks subscribe to these names).
EMAIL_RECEIVED = "email.received"
INBOX_CREATED = "inbox.created"
INBOX_EXPIRED = "inbox.expired"
WEBHOOK_EVENTS = (EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED)


class Event(UUIDKey, Base):
    """One committed fact, waiting for (or done with) fan-out."""

    __tablename__ = "events"

    name: Mapped[str] = mapped_column(String(64))
    data: Mapped[dict[str, Any]]
    org_id: Mapped[uuid.UUID | None]
    team_id: Mapped[uuid.UUID | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    dispatched_at: Mapped[datetime | None]

    __table_args__ = (Index("ix_events_undispatched", "dispatched_at", "created_at"),)


def record_event(session: Session, name: str, data: dict[str, Any], *,
                 org_id: uuid.UUID | None = None, team_id: uuid.UUID | None = None) -> Event:
    """Write an event in the session's transaction (it is enqueued only if the transaction
    commits) and return it, an entity of the session as if it had been loaded: a change made
    to it later is flushed as any other.

    Written by an INSERT of its own, not added for the unit of work to flush: an inbox's
    creation flushed nothing else, and that flush cost its request more CPU than the INSERT.
    The table has no foreign key, so nothing pending need be flushed before it."""
    event = Event(id=uuid.uuid4(), name=name, data=data, org_id=org_id, team_id=team_id,
                  created_at=utcnow(), dispatched_at=None)
    session.execute(_INSERT_EVENT, {column: getattr(event, column) for column in _COLUMNS})
    make_transient_to_detached(event)
    session.add(event)
    remember_outbox(session, event.id)
    return event


_COLUMNS = tuple(column.key for column in Event.__table__.columns)
_INSERT_EVENT = insert(Event.__table__)


@dataclass(frozen=True)
class NewEvent:
    """An event to record with `record_events`."""

    name: str
    data: dict[str, Any]
    org_id: uuid.UUID | None = None
    team_id: uuid.UUID | None = None


def record_events(session: Session, events: Sequence[NewEvent], at: datetime | None = None
                  ) -> list[uuid.UUID]:
    """`record_event` for several events in one INSERT, without the ORM's unit of work (for hot
    paths such as mail ingest), recorded `at` (now by default); return their ids."""
    now = utcnow() if at is None else at
    rows = [{"id": uuid.uuid4(), "name": event.name, "data": event.data, "org_id": event.org_id,
             "team_id": event.team_id, "created_at": now, "dispatched_at": None}
            for event in events]
    insert_rows(session, Event.__table__, rows)
    for row in rows:
        remember_outbox(session, row["id"])
    return [row["id"] for row in rows]


class OutboxKey(NamedTuple):
    """An event's place in the outbox sweep's order: oldest first, the id breaking ties."""

    created_at: datetime
    id: uuid.UUID


def undispatched_events(session: Session, committed_before: datetime, limit: int,
                        after: OutboxKey | None = None) -> list[OutboxKey]:
    """Up to `limit` events recorded before `committed_before` and not yet dispatched, in
    `OutboxKey` order, starting past `after`: paging on the key (not an offset) visits each
    event at most once, however many are dispatched between pages."""
    query = select(Event.created_at, Event.id).where(Event.dispatched_at.is_(None),
                                                     Event.created_at < committed_before)
    if after is not None:
        query = query.where(or_(Event.created_at > after.created_at,
                                and_(Event.created_at == after.created_at, Event.id > after.id)))
    query = query.order_by(Event.created_at, Event.id).limit(limit)
    return [OutboxKey(created_at, event_id) for created_at, event_id in session.execute(query)]


def outbox_backlog(session: Session) -> tuple[int, datetime | None]:
    """How many events wait for their fan-out, and when the oldest of them was recorded (None
    when none waits); one query on the undispatched index."""
    query = select(func.count(), func.min(Event.created_at)).where(Event.dispatched_at.is_(None))
    count, oldest = session.execute(query).one()
    return count, oldest


_EVENTS = Event.__table__
# Events one dispatch takes beyond those it was handed, when that many wait (see
# `claim_for_dispatch`).
TOP_UP = 8
# How recent an event must be for another event's dispatch to take it. An event whose handlers
# keep failing would otherwise make every dispatch that takes it fail and start over event by
# event; past this age an undispatched event is left to its own message's retries and to the
# outbox sweep.
TOP_UP_WINDOW = timedelta(minutes=1)

_OWN = (select(_EVENTS.c.id)
        .where(_EVENTS.c.id.in_(bindparam("event_ids", expanding=True)),
               _EVENTS.c.dispatched_at.is_(None))
        .with_for_update(skip_locked=True))
_WAITING = (select(_EVENTS.c.id)
            .where(_EVENTS.c.dispatched_at.is_(None),
                   _EVENTS.c.created_at > bindparam("since", type_=_EVENTS.c.created_at.type),
                   _EVENTS.c.id.not_in(bindparam("passed_over", expanding=True)))
            .order_by(_EVENTS.c.created_at).limit(TOP_UP)
            .with_for_update(skip_locked=True))
_STAMP = bindparam("now", type_=_EVENTS.c.dispatched_at.type)
# Built once, values bound: the one statement every dispatch starts with.
_CLAIM = (update(_EVENTS)
          .where(_EVENTS.c.id.in_(_OWN), _EVENTS.c.dispatched_at.is_(None))
          .values(dispatched_at=_STAMP).returning(*_EVENTS.c))
# The own and the waiting events as two locking CTEs joined by primary key: an OR of two IN
# subqueries made PostgreSQL scan every undispatched event for each claim, which a backlog
# (thousands after an outage) turned into a cost per claim that grew with it.
_CLAIMED = union(select(_OWN.cte("own").c.id),
                 select(_WAITING.cte("waiting").c.id)).subquery("claimed")
_CLAIM_TOPPED_UP = (update(_EVENTS)
                    .where(_EVENTS.c.id == _CLAIMED.c.id, _EVENTS.c.dispatched_at.is_(None))
                    .values(dispatched_at=_STAMP).returning(*_EVENTS.c))


def claim_for_dispatch(session: Session, event_ids: Sequence[uuid.UUID], *,
                       top_up: bool = False, passed_over: Collection[uuid.UUID] = ()
                       ) -> list[Event]:
    """Claim the listed events that still need fan-out, oldest first, each locked against a
    concurrent dispatcher (one another holds is skipped) and marked dispatched in the session's
    transaction: a rollback leaves it waiting again.

    With `top_up`, also claim up to `TOP_UP` other waiting events recorded within
    `TOP_UP_WINDOW`, none of `passed_over` (events whose dispatch failed lately): under a
    steady stream each commit hands over one or two events, and a dispatch of a few events in
    one transaction costs little more than one; when the dispatchers fall behind, the chunks
    grow with the backlog. Their own messages then find nothing left to claim.

    The events come back detached (not in the session): loading them into the ORM and
    flushing their change cost the dispatch twice the CPU of this statement."""
    now = utcnow()
    listed = {event_id: place for place, event_id in enumerate(event_ids)}
    statement = _CLAIM_TOPPED_UP if top_up else _CLAIM
    rows = session.execute(statement, {
        "event_ids": list(listed), "now": now, "since": now - TOP_UP_WINDOW,
        "passed_over": [*listed, *passed_over]}).mappings().all()
    return sorted((Event(**row) for row in rows),
                  key=lambda event: (event.created_at, listed.get(event.id, len(listed)), event.id))
