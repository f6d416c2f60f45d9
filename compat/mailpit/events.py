"""Mailpit's live events (`/api/events`, a WebSocket) over a scope: each new message of the
scope as Mailpit announces one, `{"Type": "new", "Data": <the message's list summary>}`, the
summary in the shape `GET /api/v1/messages` lists. Mailpit also sends its own `stats`,
`update`, `delete`, `truncate` and `prune` events; the scope's stream carries new mail only,
so those are not sent (a client re-reads the list when it needs the counts).

The socket, its slot and its channel are `compat.streams`'; each message is read in a short
read-only session of its own, through the scope's condition.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from sqlalchemy import ColumnElement, select

from compat.mailpit import shapes
from compat.streams import received_email_id
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.runtime import Runtime

NEW = "new"


@dataclass(frozen=True)
class NewMessages:
    """Turns a realtime message into Mailpit's `new` event for one scope; None for any other
    message, or an e-mail outside the scope (or gone already)."""

    runtime: Runtime
    where: ColumnElement[bool]

    def __call__(self, text: str) -> str | None:
        email_id = received_email_id(text)
        if email_id is None:
            return None
        with self.runtime.db.session(read_only=True) as session:
            row = session.execute(select(*shapes.SUMMARY_COLUMNS)
                                  .where(self.where, Email.id == email_id)).first()
            if row is None:
                return None
            # The login's inbox address names the user of mail its capture credentials sent.
            address = "" if row.envelope_to is None else session.scalar(
                select(Inbox.full_address).where(Inbox.id == row.inbox_id)) or ""
        return orjson.dumps({"Type": NEW, "Data": shapes.summary(row, address)}).decode()
