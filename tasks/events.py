"""Event fan-out: the actors that run every registered handler for committed events.

Handlers are registered per event name with `on_event`; each receives the actor's session and the
event, and must be idempotent (an event can be dispatched twice after a crash). The event is marked
dispatched in the same transaction as the handlers' writes. A handler that sends messages about
rows it wrote, or publishes to live clients, defers that with `models.db.after_commit`, so nothing
leaves before (or without) the rows it is about.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable

from sqlalchemy.orm import Session

from models.events import Event, claim_for_dispatch, mark_dispatched, undispatched_event_ids
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)

Handler = Callable[[Session, Event], None]
_handlers: dict[str, list[Handler]] = defaultdict(list)


def on_event(*names: str) -> Callable[[Handler], Handler]:
    """Register a fan-out handler for the named events ("*" for every event)."""

    def register(handler: Handler) -> Handler:
        for name in names:
            if handler not in _handlers[name]:
                _handlers[name].append(handler)
        return handler

    return register


def off_event(handler: Handler) -> None:
    """Unregister `handler` from every event name it was registered for (tests use this)."""
    for registered in _handlers.values():
        if handler in registered:
            registered.remove(handler)


def handlers_for(name: str) -> list[Handler]:
    """The handlers that run for an event name, specific ones first."""
    return [*_handlers.get(name, []), *_handlers.get("*", [])]


# Events handed to one dispatch message at most. The outbox hands over every event a commit
# recorded (mail ingest commits dozens at once); one broker message per event cost the
# committer about 0.12 ms of CPU per e-mail on Redis. A chunk is dispatched in order by one
# worker thread, so a small chunk keeps several threads busy with a large commit's events.
DISPATCH_CHUNK = 8


@actor(queue_name="events", max_retries=10, min_backoff=1000, max_backoff=60_000)
def dispatch_event(event_id: str) -> None:
    """Run every handler for the event and mark it dispatched; a no-op if already dispatched.
    A failure is raised, and the message retried."""
    _dispatch(session(), uuid.UUID(event_id))


@actor(queue_name="events", max_retries=0)
def dispatch_events(event_ids: list[str]) -> None:
    """`dispatch_event` for several events, one after another, each in its own transaction. One
    that fails is rolled back and handed to `dispatch_event` alone (with that actor's retries)
    so the others go on."""
    db = session()
    for event_id in event_ids:
        try:
            _dispatch(db, uuid.UUID(event_id))
        except Exception:
            db.rollback()
            log.exception("dispatching an event failed; retrying it on its own",
                          extra={"event_id": event_id})
            dispatch_event.send(event_id)


def _dispatch(db: Session, event_id: uuid.UUID) -> None:
    event = claim_for_dispatch(db, event_id)
    if event is None:
        db.rollback()  # nothing to do: end the transaction the claim opened
        return
    for handler in handlers_for(event.name):
        handler(db, event)
    mark_dispatched(event)
    db.commit()


def enqueue_events(event_ids: Iterable[uuid.UUID]) -> None:
    """Hand committed events to the fan-out (called after commit): one dispatch message per
    `DISPATCH_CHUNK` events."""
    ids = [str(event_id) for event_id in event_ids]
    for start in range(0, len(ids), DISPATCH_CHUNK):
        chunk = ids[start:start + DISPATCH_CHUNK]
        if len(chunk) == 1:
            dispatch_event.send(chunk[0])
        else:
            dispatch_events.send(chunk)


@actor(queue_name="clock", max_retries=0)
def sweep_outbox() -> None:
    """Enqueue again the events that stayed undispatched past the grace period."""
    ids = undispatched_event_ids(session(), runtime().settings.clock.outbox_grace)
    if ids:
        log.warning("re-enqueueing undispatched events", extra={"count": len(ids)})
    enqueue_events(ids)
