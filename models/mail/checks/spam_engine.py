"""What a real spam engine says of received mail, beside Burnbox's own heuristics.

When the operator configures one (`checks.spam_engine`: SpamAssassin's spamd or rspamd, see
`burnbox.spam_engines`), every e-mail received is stored `pending` (ingest writes the constant
with the row, so a reader never sees "no engine" in the moment before the worker), then the
worker's `tasks.spam_engine` actor, sent by the fan-out of `email.received`, sends each stored
message to the engine once (its copies in several inboxes share the answer) and stores the
engine's score, threshold and rules on its e-mails. No transaction is open while the engine
answers.

An e-mail's `spam_engine` is None when no engine was configured when it arrived (and for mail
stored before engines were asked); otherwise its `status` is `pending`, `done` (the engine
answered), `skipped` (larger than `checks.spam_engine_max_bytes`: the engine is not asked, as
spamc itself does not send large mail; or the engine was unconfigured before the worker got to
it) or `error` (the engine could not be reached or its answer
not read: the `reason` says which; it is not asked again).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from burnbox.spam_engines import EngineAddress, EngineError, ask, parse_engine
from models.mail.checks.authentication import PendingMessage, SessionFacts
from models.mail.entities import SPAM_ENGINE_PENDING, Email

PENDING, DONE, SKIPPED, ERROR = SPAM_ENGINE_PENDING["status"], "done", "skipped", "error"
STATUSES = (PENDING, DONE, SKIPPED, ERROR)
_EMPTY: dict[str, Any] = {"engine": None, "score": None, "threshold": None, "is_spam": None,
                          "action": "", "rules": [], "checked_at": None, "reason": ""}


def configured_engine(settings: Settings) -> EngineAddress | None:
    """The engine the settings name (checked at start-up), None when none is configured."""
    return parse_engine(settings.checks.spam_engine)


def pending_messages(session: Session, email_ids: Sequence[uuid.UUID]) -> list[PendingMessage]:
    """The messages among the e-mails `email_ids` still waiting for the engine, each once;
    deleted e-mails and e-mails already answered are left out, so asking again is harmless."""
    rows = session.execute(
        select(Email.id, Email.raw_key, Email.smtp_peer_ip, Email.smtp_helo, Email.envelope_from,
               Email.spam_engine)
        .where(Email.id.in_(email_ids), Email.spam_engine.is_not(None))
        .order_by(Email.raw_key, Email.id)).all()
    messages: dict[str, PendingMessage] = {}
    for row in rows:
        if (row.spam_engine or {}).get("status") != PENDING:
            continue
        known = messages.get(row.raw_key)
        facts = SessionFacts(row.smtp_peer_ip, row.smtp_helo, row.envelope_from)
        messages[row.raw_key] = (dataclasses.replace(known, email_ids=(*known.email_ids, row.id))
                                 if known else PendingMessage(row.raw_key, facts, (row.id,)))
    return list(messages.values())


def unconfigured(now: datetime) -> dict[str, Any]:
    """The result of a message still waiting when no engine is configured any more."""
    return {**_EMPTY, "status": SKIPPED, "checked_at": now.isoformat(),
            "reason": "no spam engine is configured any more"}


def judge(address: EngineAddress, raw: bytes, facts: SessionFacts, settings: Settings,
          now: datetime) -> dict[str, Any]:
    """The engine's answer about `raw` as stored (status `done`, `skipped` or `error`; the
    shape is in docs/mail-checks.md). Network work: call it with no transaction open. Never
    raises for what the engine does."""
    result = {**_EMPTY, "engine": address.engine, "checked_at": now.isoformat()}
    limit = settings.checks.spam_engine_max_bytes
    if len(raw) > limit:
        return {**result, "status": SKIPPED,
                "reason": f"the message is larger than {limit} bytes, the engine's limit"}
    try:
        verdict = ask(address, raw, timeout=settings.checks.spam_engine_timeout.total_seconds(),
                      facts={"ip": facts.peer_ip, "helo": facts.helo,
                             "mail_from": facts.mail_from})
    except EngineError as exc:
        return {**result, "status": ERROR, "reason": str(exc)}
    return {**result, "status": DONE, "score": verdict.score, "threshold": verdict.threshold,
            "is_spam": verdict.is_spam, "action": verdict.action,
            "rules": [dataclasses.asdict(rule) for rule in verdict.rules]}


def record_result(session: Session, email_ids: Sequence[uuid.UUID],
                  result: dict[str, Any]) -> None:
    """Store `result` (of `judge`) on the e-mails `email_ids`."""
    session.execute(update(Email).where(Email.id.in_(email_ids)).values(spam_engine=result)
                    .execution_options(synchronize_session=False))


def spam_engine_of(email: Email) -> dict[str, Any] | None:
    """The `spam_engine` an e-mail's detail shows: None when no engine was asked, else every
    key of the shape (those not known yet empty)."""
    if email.spam_engine is None:
        return None
    return {**_EMPTY, **email.spam_engine}
