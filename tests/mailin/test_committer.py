"""Group commit: messages waiting together are stored in one transaction, each session learns
its own outcome, and a message the database refuses does not take its batch down with it."""

import asyncio
import dataclasses

import pytest
from psycopg import pq
from sqlalchemy import event, select

from mailin.committer import Committer
from models.events import EMAIL_RECEIVED, Event
from models.mail.entities import Email
from models.mail.ingest.store import accept_message
from tests.factories.mail import lapse, make_inbox, make_mail_world, message


def _accepted(runtime, inbox, **options):
    return accept_message(message(inbox.full_address, **options), mail_from="a@sender.example",
                          recipients=[inbox.full_address])


def _commit_together(committer, messages):
    """Queue every message before the committer starts, so they form one batch; the outcome
    of each (ids or the exception)."""

    async def main():
        tasks = [asyncio.create_task(committer.commit(m)) for m in messages]
        await asyncio.sleep(0)  # every task has queued its message
        committer.start()
        return await asyncio.gather(*tasks, return_exceptions=True)

    try:
        return asyncio.run(main())
    finally:
        committer.stop()


def test_messages_waiting_together_are_stored_in_one_transaction(committed_runtime):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inboxes = [make_inbox(session, runtime.settings, world) for _ in range(3)]
    messages = [_accepted(runtime, inbox) for inbox in inboxes for _ in range(2)]
    outcomes = _commit_together(Committer(runtime.db, runtime.storage, max_batch=64), messages)
    assert all(len(ids) == 1 for ids in outcomes)
    with runtime.db.session() as session:
        events = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)).all()
        counts = {inbox.id: session.get(type(inbox), inbox.id).email_count for inbox in inboxes}
    assert len(events) == 6
    assert len({event.created_at for event in events}) == 1  # one transaction
    assert set(counts.values()) == {2}


def test_batches_never_exceed_the_limit(committed_runtime):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
    messages = [_accepted(runtime, inbox) for _ in range(5)]
    _commit_together(Committer(runtime.db, runtime.storage, max_batch=2), messages)
    with runtime.db.session() as session:
        stamps = session.scalars(select(Event.created_at)
                                 .where(Event.name == EMAIL_RECEIVED)).all()
    assert len(stamps) == 5
    assert len(set(stamps)) == 3  # 2 + 2 + 1


def test_a_message_whose_recipients_all_lapsed_gets_no_ids_and_loses_its_objects(
        committed_runtime):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        live = make_inbox(session, runtime.settings, world)
        lapsed = make_inbox(session, runtime.settings, world)
    kept, dropped = _accepted(runtime, live), _accepted(runtime, lapsed)
    with runtime.db.transaction() as session:
        lapse(session, lapsed.id)
    outcomes = _commit_together(Committer(runtime.db, runtime.storage, 64), [kept, dropped])
    assert len(outcomes[0]) == 1 and outcomes[1] == []
    assert runtime.storage.get(kept.keys[0])
    with pytest.raises(FileNotFoundError):
        runtime.storage.get(dropped.keys[0])


@pytest.mark.postgres
def test_a_message_the_database_refuses_fails_alone_and_the_rest_of_its_batch_is_stored(
        committed_runtime):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
    good = [_accepted(runtime, inbox) for _ in range(3)]
    # PostgreSQL refuses NUL characters in text: this envelope sender cannot be stored.
    poisoned = dataclasses.replace(_accepted(runtime, inbox, sender=""),
                                   mail_from="bad\x00sender@example.com")
    outcomes = _commit_together(Committer(runtime.db, runtime.storage, 64),
                                [good[0], poisoned, *good[1:]])
    assert isinstance(outcomes[1], Exception)
    assert [len(outcome) for n, outcome in enumerate(outcomes) if n != 1] == [1, 1, 1]
    with runtime.db.session() as session:
        assert len(session.scalars(select(Email)).all()) == 3
    with pytest.raises(FileNotFoundError):
        runtime.storage.get(poisoned.keys[0])


@pytest.fixture
def emails_refused_by_subject(committed_runtime):
    """A trigger that makes PostgreSQL refuse any e-mail with the subject "refused": a failure
    on the server, among the pipelined writes, rather than in the driver."""
    with committed_runtime.db.engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE FUNCTION refuse_email() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.subject = 'refused' THEN RAISE EXCEPTION 'refused by the test'; END IF; "
            "RETURN NEW; END $$")
        connection.exec_driver_sql("CREATE TRIGGER refuse_email BEFORE INSERT ON emails "
                                   "FOR EACH ROW EXECUTE FUNCTION refuse_email()")
    yield
    with committed_runtime.db.engine.begin() as connection:
        connection.exec_driver_sql("DROP TRIGGER refuse_email ON emails")
        connection.exec_driver_sql("DROP FUNCTION refuse_email()")


@pytest.mark.postgres
def test_a_message_the_database_server_refuses_mid_pipeline_fails_alone(
        committed_runtime, emails_refused_by_subject):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
    good = [_accepted(runtime, inbox) for _ in range(3)]
    refused = _accepted(runtime, inbox, subject="refused")
    committer = Committer(runtime.db, runtime.storage, 64)
    outcomes = _commit_together(committer, [good[0], refused, *good[1:]])
    assert isinstance(outcomes[1], Exception)
    assert [len(outcome) for n, outcome in enumerate(outcomes) if n != 1] == [1, 1, 1]
    with runtime.db.session() as session:
        assert len(session.scalars(select(Email)).all()) == 3
        assert session.get(type(inbox), inbox.id).email_count == 3
        events = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)).all()
    assert len(events) == 3
    with pytest.raises(FileNotFoundError):
        runtime.storage.get(refused.keys[0])
    # The pooled connections came back clean: the next batch is stored as usual.
    assert [len(ids) for ids in _commit_together(
        Committer(runtime.db, runtime.storage, 64),
        [_accepted(runtime, inbox) for _ in range(2)])] == [1, 1]


@pytest.mark.postgres
def test_connections_go_back_to_the_pool_out_of_pipeline_mode(committed_runtime):
    """A connection handed back while its pipeline is open can be taken by another thread (a
    recipient look-up) while the committer is still finishing with it: it broke as "the
    connection is closed" now and then under load."""
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
    statuses = []

    def checked_in(dbapi_connection, _record):
        statuses.append(dbapi_connection.pgconn.pipeline_status)

    event.listen(runtime.db.engine, "checkin", checked_in)
    try:
        outcomes = _commit_together(Committer(runtime.db, runtime.storage, 64),
                                    [_accepted(runtime, inbox) for _ in range(3)])
    finally:
        event.remove(runtime.db.engine, "checkin", checked_in)
    assert [len(ids) for ids in outcomes] == [1, 1, 1]
    assert statuses and set(statuses) == {pq.PipelineStatus.OFF}


def test_sessions_are_answered_before_their_batch_is_handed_on_but_after_the_caches_move(
        committed_runtime, monkeypatch):
    """The hand-offs of a batch (events, first attempts, live push) are Redis round trips the
    250 need not wait for; the caches' revisions are not: a client that reads its inbox right
    after the 250 must not be answered from a cache of the inbox before the mail."""
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
    committer = Committer(runtime.db, runtime.storage, 64)
    answered_when = {}

    def step(name, hand_off):
        def run(*args):
            answered_when[name] = answer.done()
            return hand_off(*args)
        return run

    handoffs = runtime.db.handoffs
    for name in ("revisions_moved", "events_committed", "mail_stored"):
        monkeypatch.setattr(handoffs, name, step(name, getattr(handoffs, name)))
    answer = committer.submit(_accepted(runtime, inbox))  # before start: `answer` is bound
    committer.start()
    try:
        assert len(answer.result(timeout=30)) == 1
    finally:
        committer.stop()
    assert answered_when == {"revisions_moved": False, "events_committed": True,
                             "mail_stored": True}
