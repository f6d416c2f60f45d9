"""Delivery factories: webhooks of a team and the events they are sent."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from models.delivery.notification_preferences import DEFAULTS, set_preferences
from models.delivery.webhooks import Webhook, create_webhook
from models.events import EMAIL_RECEIVED, INBOX_CREATED, INBOX_EXPIRED, WEBHOOK_EVENTS, record_event
from tests.factories.tenancy import OwnedTeam

# The data of each webhook event as the mail code records it.
SAMPLE_DATA = {
    EMAIL_RECEIVED: {"email_id": "7b0f0b5e-8c8f-4a5e-9d4e-3d1d5c0a9f10",
                     "inbox_id": "0c6b1c38-2b44-4d6e-a4d5-9a8f0f0e4e21",
                     "address": "qa-run-17@mail.example.com", "from": "shop@example.org",
                     "to": "qa-run-17@mail.example.com", "subject": "Your code is 424242",
                     "size_bytes": 2311, "has_attachments": False,
                     "received_at": "2026-11-21T10:00:00.000000Z", "tags": ["signup"]},
    INBOX_CREATED: {"inbox_id": "0c6b1c38-2b44-4d6e-a4d5-9a8f0f0e4e21",
                    "address": "qa-run-17@mail.example.com",
                    "team_id": "5d1e6a4c-1f0b-4c8e-9a55-0e3b7f2d9c11",
                    "expires_at": "2026-11-21T10:10:00.000000Z"},
    INBOX_EXPIRED: {"inbox_id": "0c6b1c38-2b44-4d6e-a4d5-9a8f0f0e4e21",
                    "address": "qa-run-17@mail.example.com",
                    "expired_at": "2026-11-21T10:10:00.000000Z"},
}


def make_webhook(session: Session, team: OwnedTeam, url: str,
                 events: tuple[str, ...] = WEBHOOK_EVENTS, **overrides: Any) -> Webhook:
    """A webhook of the team created by its owner for `events` (private targets allowed: test
    receivers are local), with any column in `overrides` (is_active, failure_count...).
    Flushed."""
    hook = create_webhook(session, team.access(session), url=url, events=list(events),
                          allow_private=True)
    for column, value in overrides.items():
        setattr(hook, column, value)
    session.flush()
    return hook


def make_event(session: Session, team: OwnedTeam, name: str = EMAIL_RECEIVED,
               **data: Any) -> uuid.UUID:
    """An event of the team with SAMPLE_DATA[name] and `data` over it, handed to the fan-out
    when the test commits; its id. Flushed."""
    event = record_event(session, name, {**SAMPLE_DATA[name], **data}, org_id=team.org_id,
                         team_id=team.team_id)
    session.flush()
    return event.id


def notify_of_everything(session: Session, user_id: uuid.UUID) -> None:
    """Turn every event that can notify on for the user (new mail and new inboxes are off by
    default, models.delivery.notification_preferences)."""
    set_preferences(session, user_id, dict.fromkeys(DEFAULTS, True))
