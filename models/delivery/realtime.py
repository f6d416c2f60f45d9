"""Realtime: the channels events are published on, the WebSocket message format, single-use
tickets and the per-user socket limit. Shared by the publishers (tasks) and the web processes
that hold the sockets; everything goes through the key-value store, so it holds across processes.

- Channels: `realtime:inbox:<inbox id>`, `realtime:team:<team id>` (the `email.received` of every
  inbox of the team, for requests waiting for e-mail across a team), `realtime:user:<user id>`
  and `realtime:admin-stats`; and the changes of stored mail (read state, tags, deletions),
  for the compatible faces' streams: `realtime:mail-changes:inbox:<inbox id>` and
  `realtime:mail-changes:assignment:<domain assignment id>`. Each web process subscribes once
  to `realtime:*` and hands messages to its own sockets and waiting requests.
- New mail (`push_received`) is published by mailin right after its commit, and again by the
  worker's fan-out as the backup; a once-key per e-mail lets only the first through.
- Messages are JSON `{"type": <event name or admin.stats>, "data": {...}}`. On the streams a
  client can resume (an inbox's, a user's), each also carries `"id"`, the channel's next number
  (1, 2, 3...), and the last `REPLAY_KEEP` of them are kept for `REPLAY_TTL` after the latest,
  so a socket reopened with `since=<id>` gets what it missed first (`replay`), and a socket
  whose web process lost its subscription for a moment is sent what it missed meanwhile
  (`KeptStream`, web.sockets).
- Tickets: `POST /ws/ticket` stores a random UUID for `websockets.ticket_ttl` (30 s) under
  `realtime:ticket:<uuid>`; a connection takes it atomically, so it works once. The user and the
  session it was issued for are read again when it is redeemed (a revoked session's tickets die).
- Socket limit: a user holds at most `websockets.max_per_user` sockets (0: no limit) across every
  web process. Each open socket holds one numbered slot key that expires unless its holder renews
  it, so the slots of a process that died free themselves.
- Admin stats: web processes holding admin sockets keep a presence key alive; the clock job
  publishes `admin.stats` only while it exists.
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from burnbox.kv import KeyValueStore, OnceGroup, StoreUnavailable
from burnbox.timeutil import isoformat, utcnow
from models.errors import Unauthenticated
from models.events import EMAIL_RECEIVED
from models.handoffs import MailChange
from models.identity.sessions import UserSession
from models.identity.users import User

log = logging.getLogger(__name__)

CHANNELS = "realtime:*"
ADMIN_STATS_CHANNEL = "realtime:admin-stats"
ADMIN_STATS = "admin.stats"
ADMIN_PRESENCE_KEY = "realtime:presence:admin-stats"
# How long a presence or slot key lives without renewal, and how often holders renew it.
SLOT_TTL = timedelta(seconds=60)
RENEW_EVERY = timedelta(seconds=20)


def inbox_channel(inbox_id: uuid.UUID | str) -> str:
    """The channel of an inbox's stream."""
    return f"realtime:inbox:{inbox_id}"


def team_channel(team_id: uuid.UUID | str) -> str:
    """The channel carrying the new e-mails of every inbox of a team."""
    return f"realtime:team:{team_id}"


def user_channel(user_id: uuid.UUID | str) -> str:
    """The channel of a user's notification stream."""
    return f"realtime:user:{user_id}"


def inbox_changes_channel(inbox_id: uuid.UUID | str) -> str:
    """The channel of the changes of an inbox's stored mail (`publish_mail_changes`)."""
    return f"realtime:mail-changes:inbox:{inbox_id}"


def assignment_changes_channel(assignment_id: uuid.UUID | str) -> str:
    """The channel of the changes of the stored mail of every inbox created through a domain
    assignment (`publish_mail_changes`)."""
    return f"realtime:mail-changes:assignment:{assignment_id}"


# What a resumable stream keeps for sockets that reconnect: enough for a burst and a reconnect
# minutes later, bounded so a busy inbox's history costs the store a fixed amount.
REPLAY_KEEP = 1000
REPLAY_TTL = timedelta(hours=24)
RESUMABLE = ("realtime:inbox:", "realtime:user:")


def resumable(channel: str) -> bool:
    """Whether the channel's messages are numbered and kept for `replay`."""
    return channel.startswith(RESUMABLE)


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return isoformat(value)
    return str(value)  # UUIDs and other scalars


# Times through `_json_default` (the API's "...Z" form); UUIDs as their text. orjson writes
# the same text as the standard library's compact, non-ASCII-escaping dump, at a fraction of
# the CPU: mailin encodes one message per new e-mail on the thread that commits mail.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME


def encode_message(kind: str, data: dict[str, Any]) -> str:
    """A WebSocket message: `{"type": kind, "data": data}` as compact JSON text."""
    return orjson.dumps({"type": kind, "data": data}, default=_json_default,
                        option=_ORJSON_OPTIONS).decode()


def publish(store: KeyValueStore, channel: str, kind: str, data: dict[str, Any]) -> None:
    """Publish one message (numbered and kept on a resumable channel). Best effort: a store
    outage loses live messages (the state they describe is committed and readable over the
    API), so it is logged, not raised."""
    publish_all(store, [(channel, kind, data)])


def publish_all(store: KeyValueStore, messages: Iterable[tuple[str, str, dict[str, Any]]]
                ) -> None:
    """`publish` each (channel, kind, data), in order per channel, in one round trip (the
    fan-out of a chunk of events publishes them all at once)."""
    plain: list[tuple[str, str]] = []
    kept: list[tuple[str, str]] = []
    for channel, kind, data in messages:
        (kept if resumable(channel) else plain).append((channel, encode_message(kind, data)))
    if not plain and not kept:
        return
    try:
        store.publish_all(plain, kept, REPLAY_KEEP, REPLAY_TTL)
    except StoreUnavailable as exc:
        log.warning("realtime publish failed",
                    extra={"channels": sorted({channel for channel, _ in plain + kept}),
                           "reason": str(exc)})


def change_message_data(change: MailChange) -> dict[str, Any]:
    """The `data` of a change's live message: what the `MailChange` holds, its counters as
    `email_count` and `unread_count`, and only the fields its kind has."""
    data: dict[str, Any] = {"inbox_id": change.inbox_id,
                            "domain_assignment_id": change.assignment_id}
    for name in ("email_id", "is_read", "tags"):
        if getattr(change, name) is not None:
            data[name] = getattr(change, name)
    if change.counts is not None:
        data["email_count"], data["unread_count"] = change.counts
    return data


def publish_mail_changes(store: KeyValueStore, changes: Sequence[MailChange]) -> None:
    """Publish each committed change of stored mail (a transaction's, `models.handoffs`) on its
    inbox's changes channel and, for an inbox of a domain assignment, on the assignment's, as
    `{"type": <its kind>, "data": change_message_data(...)}`, in one round trip. These channels
    are for the compatible faces' streams (Mailpit's `update`, `delete`, `truncate`, `stats`
    events); the native streams carry new mail only. Best effort, as `publish`."""
    messages = []
    for change in changes:
        data = change_message_data(change)
        messages.append((inbox_changes_channel(change.inbox_id), change.kind, data))
        if change.assignment_id is not None:
            messages.append((assignment_changes_channel(change.assignment_id), change.kind,
                             data))
    publish_all(store, messages)


# How long the first publisher of an e-mail's `email.received` holds its once-key. Mailin
# publishes right after its commit and the fan-out milliseconds later as a rule; a fan-out
# delayed past this (a broker outage's backlog, an event's dispatch retried for minutes)
# publishes the message a second time, with the same e-mail id: a duplicate a client can tell,
# chosen over skipping late backups, which would lose the message when mailin's push had failed.
PUSHED_HOLD = timedelta(minutes=2)


def pushed_key(email_id: uuid.UUID | str) -> str:
    """The once-key of an e-mail's `email.received` live message."""
    return f"realtime:pushed:{email_id}"


def not_pushed(store: KeyValueStore, email_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """The e-mails whose `email.received` nobody has published yet, in one round trip (all of
    them when the store cannot say: `push_received` still sends each once)."""
    try:
        held = store.get_many([pushed_key(email_id) for email_id in email_ids])
    except StoreUnavailable:
        return list(email_ids)
    return [email_id for email_id, mark in zip(email_ids, held, strict=True) if mark is None]


def push_received(store: KeyValueStore,
                  received: Iterable[tuple[dict[str, Any], uuid.UUID]]) -> None:
    """Publish `email.received`, with the e-mail's list item, on its inbox's stream and its
    team's channel, for each (list item, team id); all in one round trip, and once per e-mail
    whoever calls (see `KeyValueStore.publish_once`).

    Mailin calls it right after its commit, so a socket or a waiting request hears of new mail
    without the worker's hop (the broker, the event's claim, its transaction: at 200 messages a
    second that hop was most of the delay). The worker's fan-out calls it again for the same
    e-mails: when mailin's call never happened (it died between commit and publish, or the
    store was down), that one goes out instead. Best effort like `publish`."""
    groups = []
    for data, team_id in received:
        text = encode_message(EMAIL_RECEIVED, data)  # once: both channels carry the same text
        channels = (team_channel(team_id), inbox_channel(data["inbox_id"]))
        groups.append(OnceGroup(
            pushed_key(data["id"]), PUSHED_HOLD,
            [(channel, text) for channel in channels if not resumable(channel)],
            [(channel, text) for channel in channels if resumable(channel)]))
    if not groups:
        return
    try:
        store.publish_once(groups, REPLAY_KEEP, REPLAY_TTL)
    except StoreUnavailable as exc:
        log.warning("new mail publish failed", extra={"emails": len(groups),
                                                      "reason": str(exc)})


@dataclass(frozen=True)
class Replay:
    """What a socket resuming after message `since` is sent before the live messages."""

    messages: list[str]
    last: int  # the number of the last of them (`since` when there is none)
    complete: bool  # False when some messages after `since` are no longer kept
    last_text: str | None = None  # message `last` as kept, when it is: the socket's place


def replay(store: KeyValueStore, channel: str, since: int, seen: str | None = None) -> Replay:
    """The kept messages of a resumable channel numbered above `since`, in order.

    A `since` above the channel's last number means its numbering started again (it was idle
    for longer than REPLAY_TTL, or the store restarted empty): everything kept is then new to
    the client. `seen`, the text of message `since` as a socket had it, also tells a stream
    numbered again past `since` from the same stream: message `since` is then another. A
    socket that knew its place that way is told its replay is incomplete (what was published
    before the restart may be lost). Raise StoreUnavailable when the store is down."""
    # From message `since` itself: its text is where the socket stands (`Replay.last_text`).
    messages, last = store.numbered_since(channel, since - 1)
    held = messages[0] if since > 0 and messages and _number_of(messages[0]) == since else None
    if since > last or (seen is not None and held not in (None, seen)):
        messages, last = store.numbered_since(channel, 0)
        first = _number_of(messages[0]) if messages else last + 1
        return Replay(messages, _number_of(messages[-1]) if messages else 0,
                      complete=seen is None and first <= 1,
                      last_text=messages[-1] if messages else None)
    if held is not None:
        messages = messages[1:]
    first = _number_of(messages[0]) if messages else last + 1
    return Replay(messages, _number_of(messages[-1]) if messages else since,
                  complete=first <= since + 1, last_text=messages[-1] if messages else held)


@dataclass(frozen=True)
class KeptStream:
    """A resumable channel's kept messages, as one socket following it reads them."""

    store: KeyValueStore
    channel: str

    def position(self) -> int:
        """The channel's last number now (0 when it has none): a socket opened later with
        `since` set to it is sent everything published from now on. Raise StoreUnavailable
        when the store is down."""
        return self.store.numbered_since(self.channel, sys.maxsize)[1]

    def mark(self) -> tuple[int, str | None]:
        """The channel's last number now (0 when it has none) and that message's text when it
        is kept: where a socket opened without `since` starts. Raise StoreUnavailable when
        the store is down."""
        last = self.position()
        if last == 0:
            return 0, None
        messages, _ = self.store.numbered_since(self.channel, last - 1)
        # The stream may have expired or started again between the two reads.
        return last, messages[0] if messages and _number_of(messages[0]) == last else None

    def after(self, since: int, seen: str | None = None) -> Replay:
        """The kept messages numbered above `since`, told from a stream numbered again by
        `seen` (`replay`)."""
        return replay(self.store, self.channel, since, seen)


def _number_of(message: str) -> int:
    return int(json.loads(message)["id"])


def number_of(message: str) -> int | None:
    """The `id` of a numbered message (None for others: pongs, admin stats)."""
    if not message.startswith('{"id":'):
        return None
    return _number_of(message)


# --- tickets --------------------------------------------------------------------------------

def _ticket_key(ticket: str) -> str:
    return f"realtime:ticket:{ticket}"


def issue_ticket(store: KeyValueStore, ttl: timedelta, user_id: uuid.UUID,
                 session_id: uuid.UUID) -> str:
    """A new single-use ticket (a UUID) for the user's signed-in session, valid for `ttl`."""
    ticket = str(uuid.uuid4())
    store.set(_ticket_key(ticket), json.dumps({"user_id": str(user_id),
                                               "session_id": str(session_id)}), ttl)
    return ticket


def redeem_ticket(session: Session, store: KeyValueStore, ticket: str) -> User:
    """The user a ticket was issued to, consuming the ticket. Raise Unauthenticated when it is
    malformed, unknown, used, expired, or its session has ended since."""
    try:
        key = _ticket_key(str(uuid.UUID(ticket)))
    except (ValueError, TypeError) as exc:
        raise Unauthenticated("invalid ticket") from exc
    stored = store.take(key)
    if stored is None:
        raise Unauthenticated("invalid, used or expired ticket")
    holder = json.loads(stored)
    row = session.execute(
        select(User, UserSession).join(UserSession, UserSession.user_id == User.id)
        .where(UserSession.id == uuid.UUID(holder["session_id"]),
               User.id == uuid.UUID(holder["user_id"]))).one_or_none()
    if row is None or row[1].revoked_at is not None or row[1].expires_at <= utcnow():
        raise Unauthenticated("the session of this ticket has ended")
    return row[0]


# --- the socket limit -----------------------------------------------------------------------

@dataclass(frozen=True)
class Slot:
    """One of a user's socket slots, held by one socket."""

    key: str
    holder: str


class SocketSlots:
    """Count a user's open sockets across processes (see the module docstring)."""

    def __init__(self, store: KeyValueStore, limit: int) -> None:
        self.store = store
        self.limit = limit

    def acquire(self, user_id: uuid.UUID) -> Slot | None:
        """A free slot for a new socket of the user, or None when all `limit` are taken. With
        no limit (0) nothing is counted: the slot is a placeholder."""
        holder = uuid.uuid4().hex
        if not self.limit:
            return Slot("", holder)
        for number in range(self.limit):
            key = f"realtime:socket:{user_id}:{number}"
            if self.store.set_if_absent(key, holder, SLOT_TTL):
                return Slot(key, holder)
        return None

    def renew(self, slot: Slot) -> bool:
        """Extend the slot; False when it expired and someone else took it meanwhile."""
        if not slot.key:
            return True
        current = self.store.get(slot.key)
        if current not in (None, slot.holder):
            return False
        self.store.set(slot.key, slot.holder, SLOT_TTL)
        return True

    def release(self, slot: Slot) -> None:
        """Free the slot if it is still this socket's."""
        if slot.key and self.store.get(slot.key) == slot.holder:
            self.store.delete(slot.key)


def mark_admin_presence(store: KeyValueStore) -> None:
    """Say that some process holds an admin-stats socket (renew every RENEW_EVERY)."""
    store.set(ADMIN_PRESENCE_KEY, "1", SLOT_TTL)


def admin_listening(store: KeyValueStore) -> bool:
    """True while some process holds an admin-stats socket."""
    return store.get(ADMIN_PRESENCE_KEY) is not None
