"""The cleanup of lapsed inboxes, run by the `cleanup` actor on worker threads: rows, events,
stored objects and analytics counters; once per inbox under concurrency; and 10 000 inboxes on
PostgreSQL in bounded memory."""

import tracemalloc
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from burnbox.timeutil import utcnow
from models.domains.domains import Domain
from models.events import INBOX_EXPIRED, Event
from models.mail.counters import MailCounter
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from tasks.cleanup import cleanup, remove_lapsed_inboxes_in_batches
from tests.factories.mail import lapse, make_email, make_inbox, make_inbox_rows, make_mail_world
from tests.tasks.conftest import drain

PNG = bytes(range(256)) * 4


def _count(runtime, query):
    with runtime.db.session() as session:
        return session.scalar(query)


def _expired_ids(runtime):
    with runtime.db.session() as session:
        return [event.data["inbox_id"] for event in
                session.scalars(select(Event).where(Event.name == INBOX_EXPIRED))]


def _objects(runtime):
    return sorted(path for path in runtime.storage.root.rglob("*") if path.is_file())


def test_cleanup_removes_lapsed_inboxes_with_their_mail_and_one_expired_event_each(
        committed_runtime, broker, worker):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        live = make_inbox(session, runtime.settings, world)
        lapsed = make_inbox(session, runtime.settings, world)
    for inbox in (live, lapsed):
        make_email(runtime, inbox.full_address, attachments=(("a.png", "image/png", PNG),))
    with runtime.db.transaction() as session:
        lapse(session, lapsed.id)
    assert len(_objects(runtime)) == 4

    cleanup.send()
    drain(broker, "clock", "events")
    drain(broker, "events")  # the discard events recorded by the cleanup

    with runtime.db.session() as session:
        assert session.get(Inbox, lapsed.id) is None
        assert session.get(Inbox, live.id) is not None
        assert [email.inbox_id for email in session.scalars(select(Email))] == [live.id]
        [event] = session.scalars(select(Event).where(Event.name == INBOX_EXPIRED)).all()
    assert event.data == {"inbox_id": str(lapsed.id), "address": lapsed.full_address,
                          "expired_at": event.data["expired_at"],
                          "created_by": str(world.users["team_member"].id)}
    assert event.data["expired_at"].endswith("Z")
    assert len(_objects(runtime)) == 2  # the live inbox's raw message and attachment
    # Analytics keep counting what arrived: they read counters, not the e-mails cleaned up.
    assert _count(runtime, select(func.sum(MailCounter.emails))) == 2


def test_two_cleanups_at_once_remove_each_inbox_once(committed_runtime, broker, worker):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inboxes = [make_inbox(session, runtime.settings, world) for _ in range(30)]
        lapse(session, *(inbox.id for inbox in inboxes))
    cleanup.send()
    cleanup.send()
    drain(broker, "clock", "events")
    assert sorted(_expired_ids(runtime)) == sorted(str(inbox.id) for inbox in inboxes)
    assert _count(runtime, select(func.count()).select_from(Inbox)) == 0


@pytest.mark.postgres
def test_ten_thousand_lapsed_inboxes_go_in_bounded_memory_each_expired_once(committed_runtime):
    runtime = committed_runtime
    expired_at = utcnow() - timedelta(minutes=5)
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        domain = session.get(Domain, world.ids["domain"])
        rows = make_inbox_rows(session, domain, world.ids["team"], 10_000,
                               assignment_id=world.ids["assignment"],
                               created_at=expired_at - timedelta(minutes=10), expires_at=expired_at)
        keep = make_inbox(session, runtime.settings, world)

    tracemalloc.start()
    try:
        with runtime.db.session() as session:
            removed = remove_lapsed_inboxes_in_batches(session, batch_size=500)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert removed == 10_000
    assert _count(runtime, select(func.count()).select_from(Inbox)) == 1
    expired = _expired_ids(runtime)
    assert len(expired) == 10_000
    assert set(expired) == {str(row["id"]) for row in rows}
    assert str(keep.id) not in expired
    # A batch holds 500 inboxes' worth of rows and events; all 10 000 at once would need
    # several times this.
    assert peak < 16 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
