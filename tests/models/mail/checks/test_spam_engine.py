"""The spam engine's results on e-mails (models.mail.checks.spam_engine): stored pending by
ingest when an engine is configured, never waiting again once answered; and the detail's
shape."""

from __future__ import annotations

from datetime import UTC, datetime

from burnbox.spam_engines import parse_engine
from models.mail.checks.authentication import SessionFacts
from models.mail.checks.spam_engine import (
    judge,
    pending_messages,
    record_result,
    spam_engine_of,
)
from models.mail.entities import Email
from models.mail.ingest.store import accept_message, store_messages
from tests.factories.mail import make_email, message
from tests.web.test_emails import inbox

__all__ = ["inbox"]
NOW = datetime(2026, 12, 2, 1, 0, tzinfo=UTC)


def test_an_e_mail_waits_from_ingest_and_not_after_its_answer(runtime, inbox):
    unasked = make_email(runtime, inbox.full_address, subject="Hi")
    accepted = accept_message(message(inbox.full_address), mail_from="a@b.example",
                              recipients=[inbox.full_address], spam_engine=True)
    [[email_id]] = store_messages(runtime.db, runtime.storage, [accepted])
    with runtime.db.transaction() as session:
        assert spam_engine_of(session.get(Email, email_id))["status"] == "pending"
        [waiting] = pending_messages(session, [email_id, unasked])
        assert waiting.email_ids == (email_id,)
        record_result(session, [email_id], {"status": "done", "score": 1.0})
        assert pending_messages(session, [email_id]) == []
        detail = spam_engine_of(session.get(Email, email_id))
    assert (detail["status"], detail["score"], detail["rules"], detail["reason"]) == (
        "done", 1.0, [], "")


def test_a_message_above_the_limit_is_skipped_without_a_connection(runtime):
    settings = runtime.settings.replace(**{"checks.spam_engine_max_bytes": 10})
    # Port 9 of a host that does not exist: a connection attempt would be an error.
    result = judge(parse_engine("spamd://no-such-host.invalid:9"), b"x" * 11, SessionFacts(),
                   settings, NOW)
    assert (result["status"], result["engine"], result["checked_at"]) == (
        "skipped", "spamassassin", NOW.isoformat())


def test_an_e_mail_no_engine_was_asked_about_shows_none(runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, subject="Hi")
    with runtime.db.session() as session:
        assert spam_engine_of(session.get(Email, email_id)) is None
