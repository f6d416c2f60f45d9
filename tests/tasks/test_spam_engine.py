"""The spam engine's actor (tasks.spam_engine): an e-mail stored waiting for an engine that the
worker no longer has configured is recorded as skipped, never left pending."""

from __future__ import annotations

from models.mail.checks.spam_engine import spam_engine_of
from models.mail.entities import Email
from models.mail.ingest.store import accept_message, store_messages
from tasks.spam_engine import ask_spam_engine
from tests.factories.mail import message
from tests.tasks.conftest import wait_until
from tests.web.conftest import mail_service


def test_mail_waiting_when_the_engine_is_gone_is_skipped(committed_runtime):
    # No engine configured in this worker: as after a restart without the setting.
    with mail_service(committed_runtime) as service:
        address = service.inbox.full_address
        accepted = accept_message(message(address), mail_from="a@b.example",
                                  recipients=[address], spam_engine=True)
        [[email_id]] = store_messages(committed_runtime.db, committed_runtime.storage,
                                      [accepted])
        ask_spam_engine.send([str(email_id)])

        def stored():
            with committed_runtime.db.session() as session:
                return spam_engine_of(session.get(Email, email_id))

        wait_until(lambda: stored()["status"] != "pending")
    assert (stored()["status"], stored()["reason"]) == (
        "skipped", "no spam engine is configured any more")
