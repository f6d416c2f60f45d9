"""Mailpit's live events (`/api/events`, a WebSocket) over a scope, each a text message
`{"Type": ..., "Data": ...}` as Mailpit's web UI reads them:

- `new`: a new message of the scope, its summary in the shape `GET /api/v1/messages` lists;
- `update`: a message marked read or unread (`{"ID", "Read"}`) or given other tags
  (`{"ID", "Tags"}`);
- `delete`: a message deleted (`{"ID"}`);
- `truncate` (no data): every message of the scope deleted; `prune` (no data) when an inbox
  of a catch-all scope was emptied and others still hold mail: the client reloads its list;
- `stats`: the scope's `{"Total", "Unread", "Version"}`, after each of the above but a change
  of tags, as Mailpit follows each change with its counts.

Whoever made the change, through this face, the native API, the UI or a client, the scope's
stream announces it: the models' actions publish every committed change of stored mail
(`models.delivery.realtime.publish_mail_changes`). Not announced: a tag renamed or deleted
for the whole team, and an inbox deleted or expired (a catch-all scope's client sees them
at its next read). The socket, its slot and its channels are `compat.streams'`; a message
that needs the database (a new message's summary, a catch-all scope's counts) is read in a
short read-only session of its own.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Select, select

import burnbox
from compat.mailpit import shapes
from compat.scopes import counts_of
from models.events import EMAIL_RECEIVED
from models.handoffs import EMAIL_DELETED, EMAIL_UPDATED, INBOX_EMPTIED, INBOX_MARKED
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.runtime import Runtime

NEW = "new"
UPDATE = "update"
DELETE = "delete"
TRUNCATE = "truncate"
PRUNE = "prune"
STATS = "stats"


def _event(kind: str, data: Any = None) -> str:
    return orjson.dumps({"Type": kind, "Data": data}).decode()


@dataclass(frozen=True)
class ScopeEvents:
    """Turns a realtime message of a scope's channels into Mailpit's events (see the module's
    docstring); None for a message that is none of them, or an e-mail outside the scope (or
    gone already). `where` selects the scope's e-mails, `inbox_ids` its inboxes; `one_inbox`:
    an inbox scope, whose changes carry its counters."""

    runtime: Runtime
    where: ColumnElement[bool]
    inbox_ids: Select[Any]
    one_inbox: bool

    def __call__(self, text: str) -> list[str] | None:
        try:
            message = orjson.loads(text)
            kind, data = message["type"], message["data"]
            if kind == EMAIL_RECEIVED:
                return self._new(uuid.UUID(str(data["id"])))
            return self._changed(kind, data)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def _new(self, email_id: uuid.UUID) -> list[str] | None:
        with self.runtime.db.session(read_only=True) as session:
            row = session.execute(select(*shapes.SUMMARY_COLUMNS)
                                  .where(self.where, Email.id == email_id)).first()
            if row is None:
                return None
            # The login's inbox address names the user of mail its capture credentials sent.
            address = "" if row.envelope_to is None else session.scalar(
                select(Inbox.full_address).where(Inbox.id == row.inbox_id)) or ""
            counts = counts_of(session, self.inbox_ids)
        return [_event(NEW, shapes.summary(row, address)), self._stats(counts)]

    def _changed(self, kind: str, data: dict[str, Any]) -> list[str] | None:
        if kind == EMAIL_UPDATED and "tags" in data:
            return [_event(UPDATE, {"ID": data["email_id"], "Tags": list(data["tags"])})]
        if kind not in (EMAIL_UPDATED, EMAIL_DELETED, INBOX_EMPTIED, INBOX_MARKED):
            return None
        counts = self._counts_after(data)
        if kind == EMAIL_UPDATED:
            event = _event(UPDATE, {"ID": data["email_id"], "Read": bool(data["is_read"])})
        elif kind == EMAIL_DELETED:
            event = _event(DELETE, {"ID": data["email_id"]})
        elif kind == INBOX_EMPTIED:
            event = _event(TRUNCATE if counts[0] == 0 else PRUNE)
        else:
            return [self._stats(counts)]
        return [event, self._stats(counts)]

    def _counts_after(self, data: dict[str, Any]) -> tuple[int, int]:
        """The scope's (messages, unread) after a change: an inbox scope's from the change
        itself, a catch-all scope's summed over its inboxes now."""
        if self.one_inbox:
            return int(data["email_count"]), int(data["unread_count"])
        with self.runtime.db.session(read_only=True) as session:
            return counts_of(session, self.inbox_ids)

    @staticmethod
    def _stats(counts: tuple[int, int]) -> str:
        total, unread = counts
        return _event(STATS, {"Total": total, "Unread": unread,
                              "Version": burnbox.__version__})
