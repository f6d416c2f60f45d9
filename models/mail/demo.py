"""The public try-it (demo) mode: anyone may create an inbox in one configured domain assignment
(`demo.assignment_id`) for `demo.ttl`, and read its mail without an account.

The read token: `POST /try/inbox` returns 256 random bits (`burnbox.security.new_token`) once;
only their SHA-256 is stored, on the inbox (`inboxes.read_token_hash`). Reading the mail needs
the token in the `X-Read-Token` header; a missing or wrong token, an inbox that is not a demo
inbox, and an unknown inbox all answer the same 404, so the endpoint reveals nothing about which
inboxes exist. Demo inboxes are ordinary inboxes of the assignment's team (`created_by` empty):
the team sees them, the quota and the cleanup apply to them.

The token reads its own inbox's mail in full (`demo_email`: the bodies, text and sanitised HTML
with their links, headers and the attachments' descriptions), since a sign-up code or a
confirmation link is what a try-it user waits for; and nothing else: no other inbox's mail, no
attachment download, no change.

With `demo.enabled` false every inbox operation is NotFound, as if the endpoints did not exist;
the status alone still answers (`enabled` false), since a page asks it whether to offer the mode.
The demo domain may be an operator-trusted one (`domains.trusted`), so the mode works with no
DNS at all.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session

from burnbox.durations import format_duration
from burnbox.security import constant_time_equals, hash_token, new_token
from burnbox.settings import Settings
from models.domains.assignments import DomainAssignment
from models.errors import NotFound
from models.mail.entities import Email
from models.mail.inboxes import Inbox, create_inbox
from models.platform.settings import live_settings


@dataclass(frozen=True)
class DemoStatus:
    """What the try-it page needs to know: the domain and lifetime only when `enabled`."""

    enabled: bool
    domain: str | None = None
    ttl: timedelta | None = None


@dataclass(frozen=True)
class DemoInbox:
    """A new demo inbox and its read token (shown once)."""

    inbox: Inbox
    read_token: str


def _assignment(session: Session, settings: Settings) -> DomainAssignment:
    """The demo assignment; NotFound when the mode is off (`demo.enabled`, which PUT
    /admin/platform can switch at run time) or the assignment is missing."""
    if not live_settings(session, settings).demo.enabled:
        raise NotFound("resource not found")
    try:
        assignment_id = uuid.UUID(settings.demo.assignment_id)
    except ValueError:
        raise NotFound("the demo mode has no domain assignment configured") from None
    assignment = session.get(DomainAssignment, assignment_id)
    if assignment is None:
        raise NotFound("the demo mode has no domain assignment configured")
    return assignment


def demo_status(session: Session, settings: Settings) -> DemoStatus:
    """The demo's domain and inbox lifetime; `enabled` false and nothing else when the mode is
    off or has no assignment to create inboxes through (its inbox operations are NotFound
    then). Never raises NotFound: a client asks it whether to offer the mode at all."""
    try:
        assignment = _assignment(session, settings)
    except NotFound:
        return DemoStatus(enabled=False)
    return DemoStatus(enabled=True, domain=assignment.domain.domain_name, ttl=settings.demo.ttl)


def create_demo_inbox(session: Session, settings: Settings) -> DemoInbox:
    """A random-address inbox in the demo assignment living `demo.ttl`, with its read token.
    Raise NotFound when the mode is off, and what `create_inbox` raises (an unverified domain,
    the quota...). The caller commits."""
    assignment = _assignment(session, settings)
    token = new_token()
    inbox = create_inbox(session, settings, assignment, created_by=None,
                         ttl=format_duration(settings.demo.ttl),
                         read_token_hash=hash_token(token))
    return DemoInbox(inbox=inbox, read_token=token)


def demo_inbox(session: Session, settings: Settings, inbox_id: uuid.UUID,
               token: str | None) -> Inbox:
    """The demo inbox `inbox_id` if `token` is its read token; NotFound otherwise (whatever the
    reason, see the module docstring)."""
    _assignment(session, settings)
    inbox = session.get(Inbox, inbox_id)
    if (inbox is None or inbox.read_token_hash is None or not token
            or not constant_time_equals(inbox.read_token_hash, hash_token(token))):
        raise NotFound("inbox not found")
    return inbox


def demo_email(session: Session, settings: Settings, inbox_id: uuid.UUID, email_id: uuid.UUID,
               token: str | None) -> Email:
    """The e-mail `email_id` of the demo inbox `inbox_id`, if `token` is the inbox's read token;
    NotFound otherwise, the same answer for an e-mail of another inbox as for none."""
    inbox = demo_inbox(session, settings, inbox_id, token)
    email = session.get(Email, email_id)
    if email is None or email.inbox_id != inbox.id:
        raise NotFound("email not found")
    return email
