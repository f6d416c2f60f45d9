"""PostgreSQL restarted under SMTP and API load: no acknowledged message is lost (every one that
got its 250 is in the store afterwards), the only failures anybody sees are SMTP 451 and HTTP
503, and the same `burnbox web` and `burnbox mailin` processes serve again once the server is
back, without being restarted."""

import time

import pytest
from sqlalchemy import select

from models.mail.entities import Email
from tests.factories.mail import make_inbox, make_mail_world
from tests.faults.load import api_callers, smtp_senders
from tests.processes import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.faults]

DOWN_FOR = 3.0  # seconds the server stays stopped


def test_a_postgresql_restart_loses_no_acknowledged_mail_and_heals_by_itself(make_stack):
    stack = make_stack()
    with stack.runtime.db.transaction() as session:
        world = make_mail_world(session, stack.settings)
        inboxes = [make_inbox(session, stack.settings, world) for _ in range(3)]
    api = stack.web()
    smtp = stack.mailin()
    started = {name: process.pid for name, process in stack.processes.items()}

    mail = smtp_senders(smtp, [inbox.full_address for inbox in inboxes], count=3)
    # An endpoint that reads the database on every call.
    calls = api_callers([f"{api}/auth/sessions"], world.headers["team_member"], count=1)
    # The inbox's first page may be answered from the process's cache while the server is
    # down (models.mail.caches): nothing can be written then, so the inbox's revision in Redis
    # proves the cached page current; when it does not, the answer is a 503 like any other.
    pages = api_callers([f"{api}/inboxes/{inboxes[0].id}/emails"], world.headers["team_member"],
                        count=1)
    try:
        wait_until(lambda: mail.answered_since(0, 250) and calls.answered_since(0, 200)
                   and pages.answered_since(0, 200))
        time.sleep(1.0)
        stack.cluster.stop()
        stopped = time.monotonic()
        time.sleep(DOWN_FOR)
        restarting = time.monotonic()
        stack.cluster.start()
        back = time.monotonic()
        wait_until(lambda: mail.answered_since(back, 250) and calls.answered_since(back, 200)
                   and pages.answered_since(back, 200), timeout=30)
        recovered = time.monotonic() - back
        time.sleep(1.0)
    finally:
        mail.stop()
        calls.stop()
        pages.stop()

    assert mail.answers() <= {250, 451}, mail.answers()
    assert calls.answers() | pages.answers() <= {200, 503}, calls.answers() | pages.answers()
    # Asked and answered while the server was down: a refusal to retry, never a 250 or a 200.
    assert mail.answers(stopped, restarting) == {451}
    assert calls.answers(stopped, restarting) == {503}
    assert recovered < 30
    assert stack.running() == list(started)
    assert {name: process.pid for name, process in stack.processes.items()} == started

    acknowledged = [outcome.message_id for outcome in mail.outcomes if outcome.answer == 250]
    with stack.runtime.db.session() as session:
        stored = set(session.scalars(select(Email.message_id)))
    lost = [message_id for message_id in acknowledged if message_id not in stored]
    assert lost == [], f"{len(lost)} of {len(acknowledged)} acknowledged messages lost"
