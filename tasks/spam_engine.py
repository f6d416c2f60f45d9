"""The spam engine's view of new mail, in the worker (models.mail.checks.spam_engine), off the
SMTP path.

When `checks.spam_engine` names an engine, ingest stores the new e-mails pending and the fan-out
of `email.received` (tasks.fanout) sends one `ask_spam_engine` message per dispatched run of
events once that dispatch commits (every process must therefore be given the same setting); the
actor reads which of those e-mails still wait,
asks the engine about each message once (its copies in several inboxes share the answer) and
stores the answer on them. The engine is someone else's server, so the actor shares the queue
of the authentication results, whose pool is sized for waiting; each check is bounded by
`checks.spam_engine_timeout`. Running twice is harmless: e-mails already answered are skipped.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.db import end_read_only_transaction
from models.events import Event
from models.mail.checks.spam_engine import (
    configured_engine,
    judge,
    pending_messages,
    record_result,
    unconfigured,
)
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="authentication", max_retries=3, min_backoff=1_000, max_backoff=30_000)
def ask_spam_engine(email_ids: list[str]) -> None:
    """Ask the configured engine about the e-mails `email_ids` that still wait for it and store
    its answers (deleted e-mails are skipped; those still waiting when no engine is configured
    any more are recorded as skipped)."""
    rt, db = runtime(), session()
    address = configured_engine(rt.settings)
    messages = pending_messages(db, [uuid.UUID(value) for value in email_ids])
    # No transaction stays open while the engine answers (up to checks.spam_engine_timeout
    # per message): every message is asked before the first answer is written.
    end_read_only_transaction(db)
    answers = []
    for message in messages:
        if address is None:
            answers.append((message.email_ids, unconfigured(utcnow())))
            continue
        try:
            raw = rt.storage.get(message.raw_key)
        except FileNotFoundError:  # the object went with its e-mails (deleted, expired)
            log.info("no raw message for the spam engine", extra={"key": message.raw_key})
            continue
        answers.append((message.email_ids, judge(address, raw, message.facts, rt.settings,
                                                 utcnow())))
    for ids, answer in answers:
        record_result(db, ids, answer)


def send_spam_engine(_session: Session, events: Sequence[Event]) -> None:
    """When an engine is configured, ask for its answers about the new e-mails of a run of
    `email.received` events (sent once the dispatch commits)."""
    if configured_engine(runtime().settings) is not None:
        ask_spam_engine.send([event.data["email_id"] for event in events])
