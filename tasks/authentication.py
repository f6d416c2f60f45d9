"""Authentication results of new mail, in the worker: SPF, DKIM, DMARC and ARC of each stored
message (models.mail.checks.authentication), off the SMTP path.

The fan-out of `email.received` (tasks.fanout) sends one `authenticate_emails` message per
dispatched run of events, once that dispatch has committed; the actor reads which of those
e-mails still wait, ends that read, computes each message once (its copies in several inboxes
share the results), and then stores every result on them, committed when the actor returns: no
transaction is open while DNS answers. Its DNS look-ups wait on other people's servers, so it
has a queue of its own; each is bounded by `dns.timeout`. Running twice is harmless: e-mails
already done are skipped.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from burnbox.dns import make_resolver
from models.db import end_read_only_transaction
from models.events import Event
from models.mail.checks.authentication import authenticate, pending_messages, record_results
from tasks.broker import actor, runtime, session

log = logging.getLogger(__name__)


@actor(queue_name="authentication", max_retries=3, min_backoff=1_000, max_backoff=30_000)
def authenticate_emails(email_ids: list[str]) -> None:
    """Compute and store the authentication results of the e-mails `email_ids` that still
    wait for them (deleted ones are skipped)."""
    rt, db = runtime(), session()
    messages = pending_messages(db, [uuid.UUID(value) for value in email_ids])
    # No transaction stays open while DNS answers (seconds, at worst, per message): every
    # message is looked up before the first result is written.
    end_read_only_transaction(db)
    resolver = make_resolver(rt.settings)
    results = []
    for message in messages:
        try:
            raw = rt.storage.get(message.raw_key)
        except FileNotFoundError:  # the object went with its e-mails (deleted, expired)
            log.info("no raw message to authenticate", extra={"key": message.raw_key})
            continue
        results.append((message.email_ids, authenticate(raw, message.facts, resolver)))
    for ids, found in results:
        record_results(db, ids, found)


def send_authentication(_session: Session, events: Sequence[Event]) -> None:
    """Ask for the authentication results of the new e-mails of a run of `email.received`
    events (sent once the dispatch commits)."""
    authenticate_emails.send([event.data["email_id"] for event in events])
