"""Webhooks: a team's subscriptions to events, one delivery per (event, webhook), and the log of
every attempt.

Rules kept here:
- URLs: http or https only; the hosts localhost, 127.0.0.1, ::1 and 0.0.0.0 are refused, and so
  is every other internal address written literally (decimal, hex and octal IPv4 forms included),
  names ending in .internal, .local or .localhost, and 169.254.169.254 always. The host is mapped
  by IDNA (NFKC) before these checks, so Unicode digits and dots (①②⑦.⓪.⓪.①) spell the literal
  they look like; an IPv6 literal carrying an IPv4 address (::ffff:a.b.c.d...) is judged by that
  address as well.
  `webhooks.allow_private_targets` (tests, local demos) lets loopback and private targets through;
  the metadata address, link-local and unspecified addresses and the internal name suffixes stay
  refused. Names are not resolved here: only the address checked when connecting counts
  (`burnbox.netguard`), since a name's answers can change at any time.
- Events are among `WEBHOOK_EVENTS`; archived teams take no new webhooks.
- The signing secret is the creator's own (1 to 128 printable characters; 32+ random ones are
  recommended) or, by default, generated.
- A delivery is created for each active webhook of the event's team subscribed to it, once
  (unique (event, webhook)). It is attempted up to `defaults.webhook_max_retries` times, waiting
  0 s, 5 s, 25 s (then 125 s...) times `webhooks.backoff_scale` before attempts 1, 2, 3. Success
  is a 2xx answer within the timeout; everything else is a failed attempt. When the last attempt
  fails the webhook's failure_count goes up by one and the webhook stays enabled.
- At-least-once: an attempt first takes a lease on its delivery (committed before any byte goes
  out), then records its outcome only if it still holds that lease. A delivery whose lease ran out
  (its worker died) or whose next attempt was never picked up is sent again by the sweep; the
  delivery id in every attempt lets receivers drop duplicates.
- Mutations are audited. Actions flush but do not commit: the caller commits.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import ipaddress
import json
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import (
    ForeignKey,
    Index,
    String,
    UniqueConstraint,
    bindparam,
    case,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column
from sqlalchemy.orm.util import identity_key

from burnbox.dns import to_ascii_hostname
from burnbox.netguard import embedded_ipv4, is_internal_address, parse_ip_literal
from burnbox.timeutil import isoformat, utcnow
from models.db import Base, Timestamps, UUIDKey, pipelined, remember_deliveries
from models.errors import NotFound, ValidationFailed
from models.events import (
    EMAIL_RECEIVED,
    INBOX_CREATED,
    INBOX_EXPIRED,
    WEBHOOK_EVENTS,
    Event,
    NewEvent,
)
from models.mail.ingest.store import Recorded
from models.pagination import Page, paginate
from models.tenancy.access import audit
from models.tenancy.teams import TeamAccess, ensure_team_active

MAX_URL = 2048
# A client-chosen secret may be short: clients written for the reference system send short
# ones. The docs recommend 32 or more random characters; a generated one has 256 bits.
MIN_SECRET = 1
MAX_SECRET = 128  # the column's size
MAX_ERROR = 500
SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix, so secret scanners recognise leaked secrets)
USER_AGENT = "Burnbox-Webhooks/1"

# Delivery states.
PENDING = "pending"
IN_FLIGHT = "in_flight"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"  # the webhook was disabled before the attempt
FINISHED = (SUCCEEDED, FAILED, CANCELLED)

# The data a webhook receives for each event: exactly these fields of the event's data, so
# fields recorded for internal handlers (who to notify...) never leave the system.
WEBHOOK_DATA: dict[str, tuple[str, ...]] = {
    EMAIL_RECEIVED: ("email_id", "inbox_id", "address", "from", "to", "subject", "size_bytes",
                     "has_attachments", "received_at", "tags"),
    INBOX_CREATED: ("inbox_id", "address", "team_id", "expires_at"),
    INBOX_EXPIRED: ("inbox_id", "address", "expired_at"),
}

LOOPBACK_NAMES = ("localhost",)
INTERNAL_SUFFIXES = (".internal", ".local", ".localhost")
METADATA_ADDRESS = ipaddress.IPv4Address("169.254.169.254")


class Webhook(UUIDKey, Timestamps, Base):
    """A team's subscription: events are POSTed, signed with `secret`, to `url`."""

    __tablename__ = "webhooks"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"),
                                               index=True)
    url: Mapped[str] = mapped_column(String(MAX_URL))
    events: Mapped[list[str]]
    secret: Mapped[str] = mapped_column(String(MAX_SECRET))
    is_active: Mapped[bool] = mapped_column(default=True)
    failure_count: Mapped[int] = mapped_column(default=0)


class WebhookDelivery(UUIDKey, Base):
    """One event on its way to one webhook, through up to max_retries attempts."""

    __tablename__ = "webhook_deliveries"

    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    # No foreign key: a delivery keeps what it sends even if old events are pruned.
    event_id: Mapped[uuid.UUID]
    event: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]]
    event_created_at: Mapped[datetime]
    state: Mapped[str] = mapped_column(String(16), default=PENDING)
    attempts: Mapped[int] = mapped_column(default=0)
    due_at: Mapped[datetime]
    lease_token: Mapped[uuid.UUID | None]
    lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    completed_at: Mapped[datetime | None]

    __table_args__ = (
        UniqueConstraint("event_id", "webhook_id"),
        Index("ix_webhook_deliveries_state_due_at", "state", "due_at"),
    )


class DeliveryLogEntry(UUIDKey, Base):
    """One attempt of one delivery: what came back and how long it took."""

    __tablename__ = "webhook_delivery_log"

    delivery_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True)
    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(64))
    attempt: Mapped[int]
    success: Mapped[bool]
    response_status: Mapped[int | None]
    response_time_ms: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(String(MAX_ERROR))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (
        Index("ix_webhook_delivery_log_webhook_id_created_at", "webhook_id", "created_at"),
    )


# --- URL and events rules -------------------------------------------------------------------

def _refuse(rule: str) -> ValidationFailed:
    return ValidationFailed(f"invalid webhook URL: {rule}", details={"url": [rule]})


def _check_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address,
                   allow_private: bool) -> None:
    if isinstance(address, ipaddress.IPv6Address):
        # An IPv6 form carrying an IPv4 address (IPv4-mapped, 6to4, NAT64...) reaches that
        # address: ::ffff:169.254.169.254 is the metadata address, whatever allow_private says.
        for carried in embedded_ipv4(address):
            _check_address(carried, allow_private)
    if address == METADATA_ADDRESS:
        raise _refuse("the metadata address 169.254.169.254 is refused")
    if address.is_unspecified:
        raise _refuse("the unspecified address (0.0.0.0, ::) is refused")
    if allow_private and (address.is_loopback or address.is_private) \
            and not address.is_link_local:
        return
    if address.is_loopback:
        raise _refuse("loopback addresses (127.0.0.1, ::1) are refused")
    if is_internal_address(address):
        raise _refuse(f"{address} is an internal address; only public addresses are allowed")


def _check_host(hostname: str, allow_private: bool) -> str:
    """The host as stored: an IP literal in canonical form (bracketed for IPv6) or a host name
    in lower-case A-labels. Raise ValidationFailed when it breaks a rule."""
    literal = parse_ip_literal(hostname)
    if literal is None:
        try:
            name = to_ascii_hostname(hostname)
        except ValueError as exc:
            raise _refuse(f"{hostname!r} is not a valid host name") from exc
        # The IDNA mapping (NFKC) turns other spellings of digits and dots into ASCII ones, so
        # ①②⑦.⓪.⓪.① is the literal 127.0.0.1 and is judged as an address, not as a name.
        literal = parse_ip_literal(name)
        if literal is None:
            return _check_name(name, allow_private)
    _check_address(literal, allow_private)
    return f"[{literal.compressed}]" if literal.version == 6 else str(literal)


def _check_name(name: str, allow_private: bool) -> str:
    if name in LOOPBACK_NAMES:
        if allow_private:
            return name
        raise _refuse("the host localhost is refused")
    for suffix in INTERNAL_SUFFIXES:
        if name.endswith(suffix):
            raise _refuse(f"host names ending in {suffix} are refused")
    if "." not in name:
        raise _refuse(f"{name!r} is not a public host name")
    return name


def validate_url(url: str, *, allow_private: bool) -> str:
    """The URL as stored (host in lower-case A-labels, IP literals in their canonical form).
    Raise ValidationFailed naming the broken rule (see the module docstring)."""
    text = url.strip()
    if not text or len(text) > MAX_URL:
        raise _refuse(f"must be 1-{MAX_URL} characters")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _refuse("not a well-formed URL") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise _refuse("only http and https URLs are allowed")
    if not parts.hostname:
        raise _refuse("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise _refuse("credentials in the URL are not allowed; verify the signature instead")
    host = _check_host(parts.hostname, allow_private)
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def validate_events(events: list[str]) -> list[str]:
    """The events, each once, in the order given; ValidationFailed when empty or unknown."""
    unknown = sorted({name for name in events if name not in WEBHOOK_EVENTS})
    if unknown or not events:
        rule = (f"unknown events {', '.join(unknown)}; allowed: {', '.join(WEBHOOK_EVENTS)}"
                if unknown else "subscribe to at least one event")
        raise ValidationFailed(f"invalid events: {rule}", details={"events": [rule]})
    return list(dict.fromkeys(events))


# --- the webhook resource -------------------------------------------------------------------

def snapshot(webhook: Webhook) -> dict[str, Any]:
    """A webhook's audit snapshot (never the secret)."""
    return {"url": webhook.url, "events": list(webhook.events), "is_active": webhook.is_active}


def new_secret() -> str:
    """A signing secret: the prefix and 256 random bits in hex."""
    return SECRET_PREFIX + secrets.token_hex(32)


SECRET_RULE = f"a secret has {MIN_SECRET} to {MAX_SECRET} printable characters"


def validate_secret(secret: str) -> str:
    """A secret the client chose; ValidationFailed unless it has 1 to 128 characters, every one
    printable (`str.isprintable`: no control, format or separator character but the space)."""
    if not MIN_SECRET <= len(secret) <= MAX_SECRET or not secret.isprintable():
        raise ValidationFailed(f"invalid secret: {SECRET_RULE}", details={"secret": [SECRET_RULE]})
    return secret


def create_webhook(session: Session, access: TeamAccess, *, url: str, events: list[str],
                   allow_private: bool, is_active: bool = True,
                   secret: str | None = None) -> Webhook:
    """Add a webhook to the team, signing with `secret` (a new one when None). Raise
    ValidationFailed (URL, events or secret) or Conflict (archived team)."""
    ensure_team_active(access.team)
    now = utcnow()
    webhook = Webhook(id=uuid.uuid4(), team_id=access.team.id,
                      url=validate_url(url, allow_private=allow_private),
                      events=validate_events(events),
                      secret=new_secret() if secret is None else validate_secret(secret),
                      is_active=is_active, failure_count=0, created_at=now, updated_at=now)
    session.add(webhook)
    session.flush()
    audit(session, access.org.caller, "webhook.create", org_id=access.team.org_id,
          resource_type="webhook", resource_id=webhook.id, after=snapshot(webhook))
    return webhook


def list_webhooks(session: Session, team_id: uuid.UUID, page: int, per_page: int
                  ) -> Page[Webhook]:
    """The team's webhooks, oldest first."""
    query = (select(Webhook).where(Webhook.team_id == team_id)
             .order_by(Webhook.created_at, Webhook.id))
    return paginate(session, query, page, per_page)


def get_webhook(session: Session, team_id: uuid.UUID, webhook_id: uuid.UUID) -> Webhook:
    """The team's webhook; NotFound when it does not exist or belongs to another team."""
    webhook = session.get(Webhook, webhook_id)
    if webhook is None or webhook.team_id != team_id:
        raise NotFound("webhook not found")
    return webhook


def update_webhook(session: Session, access: TeamAccess, webhook: Webhook, *,
                   allow_private: bool, url: str | None = None,
                   events: list[str] | None = None, is_active: bool | None = None) -> Webhook:
    """Change the URL (same rules as creation), the events or is_active."""
    before = snapshot(webhook)
    if url is not None:
        webhook.url = validate_url(url, allow_private=allow_private)
    if events is not None:
        webhook.events = validate_events(events)
    if is_active is not None:
        webhook.is_active = is_active
    after = snapshot(webhook)
    if after != before:
        webhook.updated_at = utcnow()
        session.flush()
        audit(session, access.org.caller, "webhook.update", org_id=access.team.org_id,
              resource_type="webhook", resource_id=webhook.id, before=before, after=after)
    return webhook


def delete_webhook(session: Session, access: TeamAccess, webhook: Webhook) -> None:
    """Delete the webhook with its deliveries and log (the database cascades)."""
    audit(session, access.org.caller, "webhook.delete", org_id=access.team.org_id,
          resource_type="webhook", resource_id=webhook.id, before=snapshot(webhook))
    session.delete(webhook)
    session.flush()


def list_log(session: Session, webhook_id: uuid.UUID, page: int, per_page: int
             ) -> Page[DeliveryLogEntry]:
    """The webhook's delivery log, newest attempt first."""
    query = (select(DeliveryLogEntry).where(DeliveryLogEntry.webhook_id == webhook_id)
             .order_by(DeliveryLogEntry.created_at.desc(), DeliveryLogEntry.attempt.desc(),
                       DeliveryLogEntry.id))
    return paginate(session, query, page, per_page)


def webhook_stats(session: Session, webhook_id: uuid.UUID) -> dict[str, Any]:
    """Delivery health over every logged attempt: counts, success rate in percent (0 with no
    attempts), mean response time in ms (None with no timed attempt), the latest attempt time."""
    row = session.execute(
        select(func.count(DeliveryLogEntry.id),
               func.coalesce(func.sum(case((DeliveryLogEntry.success, 1), else_=0)), 0),
               func.avg(DeliveryLogEntry.response_time_ms),
               func.max(DeliveryLogEntry.created_at))
        .where(DeliveryLogEntry.webhook_id == webhook_id)).one()
    total, succeeded, average, last = int(row[0]), int(row[1]), row[2], row[3]
    if isinstance(last, str):  # SQLite's max() hands back the stored text
        last = datetime.fromisoformat(last).replace(tzinfo=None)
    if last is not None and last.tzinfo is None:
        last = last.replace(tzinfo=utcnow().tzinfo)
    return {
        "total_deliveries": total,
        "success_count": succeeded,
        "failure_count": total - succeeded,
        "success_rate": round(100.0 * succeeded / total, 2) if total else 0.0,
        "avg_response_time_ms": None if average is None else round(float(average), 1),
        "last_delivery_at": last,
    }


# --- fan-out --------------------------------------------------------------------------------

# What a field added to WEBHOOK_DATA later is for an event recorded before it was: an e-mail
# that arrived before tags had none.
RECORDED_LATER: dict[str, Any] = {"tags": []}


def webhook_data(event: Event | NewEvent) -> dict[str, Any]:
    """The `data` a webhook receives for the event (see WEBHOOK_DATA)."""
    fields = WEBHOOK_DATA.get(event.name, ())
    return {name: event.data.get(name, copy.copy(RECORDED_LATER.get(name))) for name in fields}


# The fan-out's and the attempts' statements are built once on the tables, not the ORM
# entities: built per call through the ORM (loads, unit-of-work flushes), they cost the worker
# more CPU than their round trips.
_DELIVERIES = WebhookDelivery.__table__
_WEBHOOKS = Webhook.__table__
_LOG = DeliveryLogEntry.__table__
_OF_DELIVERY = _WEBHOOKS.c.id == _DELIVERIES.c.webhook_id

# The events' teams' active webhooks, each with its events and whether it has a delivery of
# the event: one row per (event, webhook).
_EVENTS = Event.__table__
_SUBSCRIBERS = (
    select(_EVENTS.c.id, _WEBHOOKS.c.id, _WEBHOOKS.c.events,
           select(_DELIVERIES.c.id)
           .where(_OF_DELIVERY, _DELIVERIES.c.event_id == _EVENTS.c.id).exists())
    .join_from(_EVENTS, _WEBHOOKS, _WEBHOOKS.c.team_id == _EVENTS.c.team_id)
    .where(_EVENTS.c.id.in_(bindparam("event_ids", expanding=True)),
           _WEBHOOKS.c.is_active.is_(True)))


def create_deliveries(session: Session, events: Sequence[Event]) -> dict[uuid.UUID, uuid.UUID]:
    """Add one pending delivery, due now, for every active webhook of each event's team that
    subscribes to the event and has none for it yet; return the new deliveries' ids, each with
    its webhook's, in the order of the events (safe to call again for the same events: it then
    adds nothing). One query and one INSERT for all the events."""
    wanted = {event.id: event for event in events
              if event.team_id is not None and event.name in WEBHOOK_EVENTS}
    if not wanted:
        return {}
    place = {event_id: n for n, event_id in enumerate(wanted)}
    subscribers = session.execute(_SUBSCRIBERS, {"event_ids": list(wanted)})
    due = sorted(((wanted[event_id], hook_id) for event_id, hook_id, names, done in subscribers
                  if wanted[event_id].name in names and not done),
                 key=lambda pair: place[pair[0].id])
    if not due:
        return {}
    now = utcnow()
    rows = [_delivery(event.id, event, event.created_at, hook_id, now) for event, hook_id in due]
    with pipelined(session):  # nothing is read back: no round trip
        session.execute(insert(_DELIVERIES), rows)
    return {row["id"]: row["webhook_id"] for row in rows}


def _delivery(event_id: uuid.UUID, event: Event | NewEvent, event_created_at: datetime,
              webhook_id: uuid.UUID, now: datetime) -> dict[str, Any]:
    """The row of a new delivery, pending and due now."""
    return {"id": uuid.uuid4(), "webhook_id": webhook_id, "event_id": event_id,
            "event": event.name, "payload": webhook_data(event),
            "event_created_at": event_created_at, "state": PENDING, "attempts": 0,
            "due_at": now, "created_at": now}


# The active webhooks of the listed teams, with their events.
_TEAMS_WEBHOOKS = (select(_WEBHOOKS.c.id, _WEBHOOKS.c.team_id, _WEBHOOKS.c.events)
                   .where(_WEBHOOKS.c.team_id.in_(bindparam("team_ids", expanding=True)),
                          _WEBHOOKS.c.is_active.is_(True)))


def deliver_recorded(session: Session, recorded: Sequence[Recorded]) -> None:
    """Create the deliveries of events mail ingest just recorded, each due now, for the active
    webhooks of the event's team that subscribe to it, in the ingest's transaction; their first
    attempts leave once it commits (`models.db.remember_deliveries`), from mailin, without the
    worker's fan-out hop. The fan-out, which creates deliveries for every event, then finds
    these made and adds none. One query (the teams' webhooks) and, when some subscribe, one
    INSERT.

    A webhook deleted (or its team deleted) between the query and the INSERT fails the INSERT's
    foreign key, or PostgreSQL breaks the lock cycle with the deletion's cascade: the batch
    fails, and mailin's committer stores its messages again one by one, reading the webhooks
    afresh."""
    teams = sorted({one.event.team_id for one in recorded if one.event.team_id is not None
                    and one.event.name in WEBHOOK_EVENTS})
    if not teams:
        return
    subscribed: dict[uuid.UUID, list[tuple[uuid.UUID, list[str]]]] = {}
    for webhook_id, team_id, names in session.execute(_TEAMS_WEBHOOKS, {"team_ids": teams}):
        subscribed.setdefault(team_id, []).append((webhook_id, names))
    now = utcnow()
    rows = [_delivery(one.id, one.event, one.at, webhook_id, now)
            for one in recorded if one.event.team_id is not None
            for webhook_id, names in subscribed.get(one.event.team_id, ())
            if one.event.name in names]
    if rows:
        with pipelined(session):  # nothing is read back
            session.execute(insert(_DELIVERIES), rows)
        remember_deliveries(session, {row["id"]: row["webhook_id"] for row in rows})


# --- attempts -------------------------------------------------------------------------------

def backoff_delay(attempt: int, scale: float = 1.0) -> timedelta:
    """The wait before `attempt` (1-based): 0 s, 5 s, 25 s, then five times longer each time,
    all times `scale`."""
    seconds = 0 if attempt <= 1 else 5 ** (attempt - 1)
    return timedelta(seconds=seconds * scale)


@dataclass(frozen=True)
class Attempt:
    """One claimed attempt: everything the sender needs, and the lease that proves the claim."""

    delivery_id: uuid.UUID
    webhook_id: uuid.UUID
    event: str
    number: int
    url: str
    secret: str
    payload: dict[str, Any]
    event_created_at: datetime
    lease_token: uuid.UUID
    started_at: datetime


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended, as the log records it."""

    success: bool
    response_status: int | None
    response_time_ms: int | None
    error: str | None


def answered(status: int, elapsed_ms: int, location: str | None = None) -> Outcome:
    """The outcome of an HTTP answer: only a 2xx is a success; a redirect is never followed."""
    if 200 <= status < 300:
        return Outcome(True, status, elapsed_ms, None)
    if 300 <= status < 400:
        error = f"redirect ({status}) to {location or 'nowhere'} not followed"
    else:
        error = f"HTTP {status}"
    return Outcome(False, status, elapsed_ms, error[:MAX_ERROR])


def not_answered(error: str, elapsed_ms: int | None) -> Outcome:
    """The outcome of an attempt that got no HTTP answer (refused address, timeout, network)."""
    return Outcome(False, None, elapsed_ms, error[:MAX_ERROR])


def _locked_delivery(session: Session, delivery_id: uuid.UUID) -> WebhookDelivery | None:
    # populate_existing: the claim's and the record's UPDATE statements change the row without
    # going through the ORM, so a copy the session already holds may be stale.
    query = (select(WebhookDelivery).where(WebhookDelivery.id == delivery_id)
             .with_for_update().execution_options(populate_existing=True))
    return session.scalars(query).first()


# The statements of an attempt's usual path, built once on the tables (not the ORM entities):
# built per call through the ORM, they cost the worker more CPU than the round trips. Each
# takes a list of deliveries, so a batch of attempts costs one claim and one record in all.
_NOW = bindparam("now", type_=_DELIVERIES.c.lease_until.type)
_IDS = bindparam("delivery_ids", expanding=True, type_=_DELIVERIES.c.id.type)

_CLAIM = (
    update(_DELIVERIES)
    .where(_DELIVERIES.c.id.in_(_IDS),
           _DELIVERIES.c.attempts == bindparam("previous"),
           or_(_DELIVERIES.c.state == PENDING,
               (_DELIVERIES.c.state == IN_FLIGHT)
               & or_(_DELIVERIES.c.lease_until.is_(None), _DELIVERIES.c.lease_until <= _NOW)),
           select(_WEBHOOKS.c.id).where(_OF_DELIVERY, _WEBHOOKS.c.is_active.is_(True)).exists())
    .values(state=IN_FLIGHT, lease_token=bindparam("token"),
            lease_until=bindparam("until", type_=_DELIVERIES.c.lease_until.type))
    .returning(_DELIVERIES.c.id, _DELIVERIES.c.webhook_id, _DELIVERIES.c.event,
               _DELIVERIES.c.payload, _DELIVERIES.c.event_created_at,
               select(_WEBHOOKS.c.url).where(_OF_DELIVERY).scalar_subquery(),
               select(_WEBHOOKS.c.secret).where(_OF_DELIVERY).scalar_subquery()))

_MOVE_ON = (
    update(_DELIVERIES)
    .where(_DELIVERIES.c.id.in_(_IDS),
           _DELIVERIES.c.lease_token.in_(
               bindparam("held_tokens", expanding=True, type_=_DELIVERIES.c.lease_token.type)))
    .values(attempts=bindparam("attempts"), lease_token=None, lease_until=None,
            state=bindparam("state"),
            due_at=func.coalesce(bindparam("next_due", type_=_DELIVERIES.c.due_at.type),
                                 _DELIVERIES.c.due_at),
            completed_at=bindparam("completed_at", type_=_DELIVERIES.c.completed_at.type))
    .returning(_DELIVERIES.c.id))

_COUNT_FAILURE = (update(_WEBHOOKS).where(_WEBHOOKS.c.id == bindparam("webhook_id"))
                  .values(failure_count=_WEBHOOKS.c.failure_count + 1))


def _forget(session: Session, delivery_id: uuid.UUID) -> None:
    """Expire the session's copy of the delivery, if it holds one: the statements above change
    the row without the ORM."""
    held = session.identity_map.get(identity_key(WebhookDelivery, delivery_id))
    if held is not None:
        session.expire(held)


def claim_attempts(session: Session, delivery_ids: Sequence[uuid.UUID], number: int,
                   lease: timedelta) -> list[Attempt]:
    """Take the lease for attempt `number` of each delivery; return the attempts to make, in the
    order given, without the deliveries for which there is nothing to do: gone or finished, the
    attempt already made (a duplicate message), or another worker holding an unexpired lease on
    it. A disabled webhook cancels its delivery. The caller commits before sending, so a crash
    mid-attempt leaves leases the sweep finds. The lease must cover every attempt of the
    list, however the caller makes them.

    The usual case (claimable deliveries of active webhooks) is one conditional UPDATE for the
    whole list that returns what the attempts send: the worker's CPU per delivery went mostly
    to ORM loads, flushes and round trips. The row locks the UPDATE takes, and PostgreSQL's
    re-check of its conditions on a row's latest version when another transaction changed it
    meanwhile, give two claimers one winner per delivery, as a locked read does. The rest
    (nothing to do, or a cancellation) is decided on each locked row."""
    now = utcnow()
    token = uuid.uuid4()
    wanted = list(dict.fromkeys(delivery_ids))
    rows = session.execute(_CLAIM, {"delivery_ids": wanted, "previous": number - 1, "now": now,
                                    "token": token, "until": now + lease})
    claimed = {
        delivery_id: Attempt(delivery_id=delivery_id, webhook_id=webhook_id, event=event,
                             number=number, url=url, secret=secret, payload=dict(payload),
                             event_created_at=event_created_at, lease_token=token,
                             started_at=now)
        for delivery_id, webhook_id, event, payload, event_created_at, url, secret in rows}
    attempts = []
    for delivery_id in wanted:
        attempt = claimed.get(delivery_id)
        if attempt is None:
            attempt = _claim_locked(session, delivery_id, number, lease)
        else:
            _forget(session, delivery_id)
        if attempt is not None:
            attempts.append(attempt)
    return attempts


def _claim_locked(session: Session, delivery_id: uuid.UUID, number: int, lease: timedelta
                  ) -> Attempt | None:
    """claim_attempts on one locked row, for every case its single UPDATE did not take."""
    delivery = _locked_delivery(session, delivery_id)
    now = utcnow()
    if delivery is None or delivery.state in FINISHED or number != delivery.attempts + 1:
        return None
    if delivery.state == IN_FLIGHT and delivery.lease_until and delivery.lease_until > now:
        return None
    webhook = session.get(Webhook, delivery.webhook_id)
    if webhook is None or not webhook.is_active:
        delivery.state, delivery.completed_at = CANCELLED, now
        delivery.lease_token = delivery.lease_until = None
        return None
    delivery.state = IN_FLIGHT
    delivery.lease_token = uuid.uuid4()
    delivery.lease_until = now + lease
    session.flush()
    return Attempt(delivery_id=delivery.id, webhook_id=webhook.id, event=delivery.event,
                   number=number, url=webhook.url, secret=webhook.secret,
                   payload=dict(delivery.payload), event_created_at=delivery.event_created_at,
                   lease_token=delivery.lease_token, started_at=now)


@dataclass(frozen=True)
class NextAttempt:
    """Deliveries whose attempt `number` is due after `wait`."""

    delivery_ids: list[uuid.UUID]
    number: int
    wait: timedelta


def record_attempts(session: Session, made: Sequence[tuple[Attempt, Outcome]], *,
                    max_attempts: int, backoff_scale: float) -> NextAttempt | None:
    """Log each attempt (all of one number, as one claim takes them) and move its delivery on:
    succeeded, pending the next attempt, or failed (the webhook's failure_count goes up by
    one). Return the deliveries that wait for a next attempt, with the wait. Nothing is
    recorded for a delivery whose lease was lost meanwhile: whoever took it over records that
    attempt.

    The deliveries move on by one UPDATE per resulting state, conditional on the leases (its
    row locks order it against a claim by another worker); log entries and failure counts are
    written only for the deliveries it matched."""
    if len({attempt.number for attempt, _ in made}) > 1:
        raise ValueError("record_attempts takes the attempts of one number")
    now = utcnow()
    by_state: dict[str, list[tuple[Attempt, Outcome]]] = {}
    for attempt, outcome in made:
        state = (SUCCEEDED if outcome.success
                 else PENDING if attempt.number < max(max_attempts, 1) else FAILED)
        by_state.setdefault(state, []).append((attempt, outcome))
    logged: list[tuple[Attempt, Outcome]] = []
    failed: list[uuid.UUID] = []  # a webhook's id once per delivery that failed for good
    following = None
    for state, group in by_state.items():
        number = group[0][0].number
        wait = backoff_delay(number + 1, backoff_scale) if state == PENDING else None
        moved = set(session.scalars(_MOVE_ON, {
            "delivery_ids": [attempt.delivery_id for attempt, _ in group],
            "held_tokens": list({attempt.lease_token for attempt, _ in group}),
            "attempts": number, "state": state, "next_due": None if wait is None else now + wait,
            "completed_at": None if state == PENDING else now}))
        held = [(attempt, outcome) for attempt, outcome in group if attempt.delivery_id in moved]
        logged += held
        if state == FAILED:
            failed += [attempt.webhook_id for attempt, _ in held]
        if wait is not None and held:
            following = NextAttempt([attempt.delivery_id for attempt, _ in held], number + 1,
                                    wait)
    if not logged:
        return None
    for attempt, _ in logged:
        _forget(session, attempt.delivery_id)
    with pipelined(session):  # nothing is read back: no round trip each
        session.execute(insert(_LOG), [{
            "id": uuid.uuid4(), "delivery_id": attempt.delivery_id,
            "webhook_id": attempt.webhook_id, "event": attempt.event, "attempt": attempt.number,
            "success": outcome.success, "response_status": outcome.response_status,
            "response_time_ms": outcome.response_time_ms, "error": outcome.error,
            "created_at": attempt.started_at} for attempt, outcome in logged])
        if failed:
            session.execute(_COUNT_FAILURE, [{"webhook_id": webhook_id} for webhook_id in failed])
    return following


def take_stalled_deliveries(session: Session, overdue_before: datetime, limit: int
                            ) -> list[tuple[uuid.UUID, uuid.UUID, int]]:
    """Take up to `limit` stalled deliveries, the longest overdue first, and return (delivery
    id, webhook id, attempt number to send) for each: those whose worker died mid-attempt
    (lease lapsed) and those pending with an attempt due before `overdue_before` (its message
    was lost). Nothing is sent here: the caller sends those attempts once this commits.

    Taking one makes it pending again, with no lease, due at the moment it was taken (never
    before `overdue_before`), in one conditional UPDATE. So it stops being stalled at once: the
    next page of the same sweep, and any sweep running beside it, leave it alone, and only if
    the re-sent attempt is lost too does it become stalled again, after the grace. A page can
    therefore be taken after another without a cursor, and a backlog of any size is handed
    over page by page. The attempt count is unchanged, so the attempt sent is the one that was
    due, and its claim still lets only one worker make it. On PostgreSQL the page skips rows
    another transaction holds (a claim in progress, a concurrent sweep's page), so concurrent
    sweeps take disjoint full pages instead of waiting on each other's locks."""
    now = utcnow()
    stalled = or_((_DELIVERIES.c.state == IN_FLIGHT) & (_DELIVERIES.c.lease_until < now),
                  (_DELIVERIES.c.state == PENDING) & (_DELIVERIES.c.due_at < overdue_before))
    # The page is a materialized CTE, read once. As a plain `IN (subquery)` PostgreSQL may
    # scan it again for each row it updates; the rows the statement already changed then drop
    # out of the locking read and LIMIT takes the next ones, so a "page" took every stalled
    # delivery (seen in the fault test: 120 in a page of 20).
    page = (select(_DELIVERIES.c.id).where(stalled).order_by(_DELIVERIES.c.due_at)
            .limit(limit).with_for_update(skip_locked=True)
            .cte("stalled_page").prefix_with("MATERIALIZED", dialect="postgresql"))
    # The conditions are repeated on the UPDATE itself: PostgreSQL checks them again on the
    # row's latest version, so a row claimed or taken meanwhile is left out.
    rows = session.execute(
        update(_DELIVERIES).where(_DELIVERIES.c.id.in_(select(page.c.id)), stalled)
        .values(state=PENDING, lease_token=None, lease_until=None,
                due_at=max(now, overdue_before))
        .returning(_DELIVERIES.c.id, _DELIVERIES.c.webhook_id, _DELIVERIES.c.attempts))
    taken = [(delivery_id, webhook_id, attempts + 1) for delivery_id, webhook_id, attempts in rows]
    for delivery_id, _, _ in taken:
        _forget(session, delivery_id)
    return taken


def reset_failure_counts(session: Session) -> int:
    """The webhook_retry job: clear failure_count of active webhooks whose count is 1 or 2, and
    nothing else: no delivery is re-sent, since a "retry" that sends made-up payloads to every
    subscriber tells them of events that never happened. Return how many were cleared."""
    result = session.execute(update(Webhook)
                             .where(Webhook.is_active.is_(True), Webhook.failure_count.in_((1, 2)))
                             .values(failure_count=0))
    return result.rowcount or 0


# --- the wire format ------------------------------------------------------------------------

def delivery_body(attempt: Attempt) -> bytes:
    """The exact bytes POSTed for an attempt: compact JSON, serialised once, then signed."""
    document = {"id": str(attempt.delivery_id), "event": attempt.event,
                "timestamp": isoformat(attempt.started_at),
                "created_at": isoformat(attempt.event_created_at), "data": attempt.payload}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sign(secret: str, body: bytes) -> str:
    """X-Service-Signature: lowercase hex HMAC-SHA256 of the body bytes, keyed by the secret."""
    return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def delivery_headers(attempt: Attempt, body: bytes) -> dict[str, str]:
    """The headers of an attempt (the delivery id is the same on every attempt)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": attempt.event,
        "X-Service-Delivery-ID": str(attempt.delivery_id),
        "X-Service-Timestamp": isoformat(attempt.started_at) or "",
        "X-Service-Signature": sign(attempt.secret, body),
    }


# --- what a team's deletion removes ----------------------------------------------------------

def count_team_webhooks(session: Session, team_id: uuid.UUID) -> int:
    """How many webhooks the team has (they point at the team, not the org: a transfer moves
    them with it unchanged)."""
    return session.scalar(select(func.count()).select_from(Webhook)
                          .where(Webhook.team_id == team_id)) or 0
