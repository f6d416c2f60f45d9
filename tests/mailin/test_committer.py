"""Group commit: messages waiting together are stored in one transaction, each session learns
its own outcome, and a message the database refuses does not take its batch down with it."""

import asyncio
import dataclasses

import pytest
from sqlalchemy import select

from mailin.committer import Committer
from models.events import EMAIL_RECEIVED, Event
from models.ingest import accept_message
from models.mailstore import Email
from tests.mail_helpers import build_mail_world, lapse, make_inbox, message


@pytest.fixture
def world(committed_runtime):
    return build_mail_world(committed_runtime)


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


def test_messages_waiting_together_are_stored_in_one_transaction(committed_runtime, world):
    runtime = committed_runtime
    inboxes = [make_inbox(runtime, world) for _ in range(3)]
    messages = [_accepted(runtime, inbox) for inbox in inboxes for _ in range(2)]
    outcomes = _commit_together(Committer(runtime.db, runtime.storage, max_batch=64), messages)
    assert all(len(ids) == 1 for ids in outcomes)
    with runtime.db.session() as session:
        events = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)).all()
        counts = {inbox.id: session.get(type(inbox), inbox.id).email_count for inbox in inboxes}
    assert len(events) == 6
    assert len({event.created_at for event in events}) == 1  # one transaction
    assert set(counts.values()) == {2}


def test_batches_never_exceed_the_limit(committed_runtime, world):
    runtime = committed_runtime
    inbox = make_inbox(runtime, world)
    messages = [_accepted(runtime, inbox) for _ in range(5)]
    _commit_together(Committer(runtime.db, runtime.storage, max_batch=2), messages)
    with runtime.db.session() as session:
        stamps = session.scalars(select(Event.created_at)
                                 .where(Event.name == EMAIL_RECEIVED)).all()
    assert len(stamps) == 5
    assert len(set(stamps)) == 3  # 2 + 2 + 1


def test_a_message_whose_recipients_all_lapsed_gets_no_ids_and_loses_its_objects(
        committed_runtime, world):
    runtime = committed_runtime
    live, lapsed = make_inbox(runtime, world), make_inbox(runtime, world)
    kept, dropped = _accepted(runtime, live), _accepted(runtime, lapsed)
    lapse(runtime, lapsed.id)
    outcomes = _commit_together(Committer(runtime.db, runtime.storage, 64), [kept, dropped])
    assert len(outcomes[0]) == 1 and outcomes[1] == []
    assert runtime.storage.get(kept.keys[0])
    with pytest.raises(FileNotFoundError):
        runtime.storage.get(dropped.keys[0])


@pytest.mark.postgres
def test_a_message_the_database_refuses_fails_alone_and_the_rest_of_its_batch_is_stored(
        committed_runtime, world):
    runtime = committed_runtime
    inbox = make_inbox(runtime, world)
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
