"""Durable storing behind DATA (models.mail.ingest.store.store_messages) and the RCPT look-up: what
one accepted message becomes, shared objects, counters, events, and what happens when a recipient
is gone or storing fails."""

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import ORMExecuteState, Session

from burnbox.storage import FilesystemStorage
from burnbox.timeutil import utcnow
from models.db import Database
from models.events import EMAIL_RECEIVED, Event
from models.mail.counters import SHARDS, MailCounter
from models.mail.entities import Email, object_key
from models.mail.inboxes import Inbox
from models.mail.ingest.parse import parse_message
from models.mail.ingest.store import (
    accept_message,
    commit_messages,
    lookup_route,
    store_objects,
)
from tests.factories.mail import deliver, lapse, make_inbox, message

PNG = bytes(range(256)) * 8


def _store(runtime, raw, *inboxes, mail_from="alice@sender.example"):
    return deliver(runtime.db, runtime.storage, raw, mail_from=mail_from,
                   recipients=[inbox.full_address for inbox in inboxes])


def _emails(runtime):
    with runtime.db.session() as session:
        return list(session.scalars(select(Email).order_by(Email.to_address)))


def _objects(runtime):
    root = runtime.storage.root
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


# Routing

def test_the_lookup_finds_an_inbox_by_full_address_with_its_expiry(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, alias="route-me")
    with runtime.db.session() as session:
        route = lookup_route(session, inbox.full_address)
        assert (route.inbox_id, route.expires_at) == (inbox.id, inbox.expires_at)
        assert lookup_route(session, f"nobody@{mail_world.domain}") is None


# Storing

def test_a_message_becomes_an_email_with_its_fields_and_raw_bytes(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    raw = message(inbox.full_address, subject="Your code", text="Your code is 424242.\n",
                  message_id="<abc@sender.example>")
    [email_id] = _store(runtime, raw, inbox)
    [email] = _emails(runtime)
    assert email.id == email_id
    assert email.inbox_id == inbox.id
    assert email.message_id == "<abc@sender.example>"
    assert email.from_address == "alice@sender.example"
    assert email.to_address == inbox.full_address
    assert email.subject == "Your code"
    assert email.snippet == "Your code is 424242."
    assert "424242" in email.body_text
    assert email.size_bytes == len(raw)
    assert (email.is_read, email.has_attachments) == (False, False)
    assert 0 <= email.spam_score <= 10
    assert ["Subject", "Your code"] in email.headers
    assert runtime.storage.get(email.raw_key) == raw
    assert utcnow() - email.received_at < timedelta(seconds=30)


def test_the_commit_sends_no_orm_statement(runtime, mail_world):
    """The commit behind every 250 runs Core statements built once: one ORM attribute in one of
    them (the tag-rule EXISTS named the entity's column once) makes the whole statement ORM's,
    and each execution then builds ORM row processors, 5 % of a commit's work."""
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    accepted = accept_message(message(inbox.full_address, subject="Core only"),
                              mail_from="alice@sender.example", recipients=[inbox.full_address])
    store_objects(runtime.storage, [accepted])
    orm: list[str] = []

    def note(state: ORMExecuteState) -> None:
        if state.is_orm_statement:
            orm.append(str(state.statement))

    event.listen(Session, "do_orm_execute", note)
    try:
        [[email_id]] = commit_messages(runtime.db, [accepted])
    finally:
        event.remove(Session, "do_orm_execute", note)
    assert orm == []
    assert [email.id for email in _emails(runtime)] == [email_id]


def test_objects_are_keyed_by_day_and_the_first_two_hex_digits_of_the_message_uuid(runtime,
                                                                                   mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    _store(runtime, message(inbox.full_address, attachments=(("a.png", "image/png", PNG),)),
           inbox)
    [email] = _emails(runtime)
    day = f"{email.received_at:%Y/%m/%d}"
    match = re.fullmatch(rf"mail/{day}/([0-9a-f]{{2}})/([0-9a-f-]{{36}})\.eml", email.raw_key)
    assert match and uuid.UUID(match[2]).hex[:2] == match[1]
    assert email.attachments[0].storage_key == email.raw_key.removesuffix(".eml") + ".1"


@pytest.mark.parametrize("moment", [datetime(2026, 1, 2, 3, 4, tzinfo=UTC),
                                    datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)])
def test_an_object_key_names_the_day_with_zero_padded_fields(moment):
    message_id = uuid.UUID("0a1b2c3d-0000-4000-8000-000000000000")
    assert object_key(message_id, moment, 0) == (
        f"mail/{moment:%Y/%m/%d}/0a/0a1b2c3d-0000-4000-8000-000000000000.eml")
    assert object_key(message_id, moment, 2).endswith("/0a/0a1b2c3d-0000-4000-8000-000000000000.2")


def test_attachments_are_stored_byte_identical_and_executables_dropped(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    raw = message(inbox.full_address, attachments=(("pixel.png", "image/png", PNG),
                                                   ("run.exe", "application/octet-stream",
                                                    b"MZ" + b"\0" * 64)))
    _store(runtime, raw, inbox)
    [email] = _emails(runtime)
    assert email.has_attachments
    [attachment] = email.attachments
    assert (attachment.filename, attachment.content_type, attachment.size_bytes) == (
        "pixel.png", "image/png", len(PNG))
    assert runtime.storage.get(attachment.storage_key) == PNG


def test_html_is_kept_sanitised(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    raw = message(inbox.full_address, html='<p onclick="x()">Hi<script>alert(1)</script></p>')
    _store(runtime, raw, inbox)
    [email] = _emails(runtime)
    assert "Hi" in email.body_html
    assert "script" not in email.body_html and "onclick" not in email.body_html


def test_one_message_to_two_inboxes_makes_two_emails_sharing_its_objects(runtime, mail_world):
    with runtime.db.transaction() as session:
        first = make_inbox(session, runtime.settings, mail_world)
        second = make_inbox(session, runtime.settings, mail_world, role="lead")
    raw = message(first.full_address, attachments=(("a.png", "image/png", PNG),))
    assert len(_store(runtime, raw, first, second)) == 2
    emails = _emails(runtime)
    assert {email.inbox_id for email in emails} == {first.id, second.id}
    assert len({email.raw_key for email in emails}) == 1
    assert len({email.attachments[0].storage_key for email in emails}) == 1
    assert len(_objects(runtime)) == 2


def test_each_email_bumps_its_inboxs_counters_and_records_email_received(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    raw = message(inbox.full_address, subject="Counted")
    [email_id] = _store(runtime, raw, inbox)
    _store(runtime, message(inbox.full_address), inbox)
    with runtime.db.session() as session:
        stored = session.get(Inbox, inbox.id)
        assert (stored.email_count, stored.unread_count) == (2, 2)
        events = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)
                                 .order_by(Event.created_at)).all()
    data = events[0].data
    # The webhook data, and the creator the fan-out notifies (never sent to webhooks).
    assert set(data) == {"email_id", "inbox_id", "address", "from", "to", "subject",
                         "size_bytes", "has_attachments", "received_at", "created_by",
                         "tags"}
    assert data["created_by"] == str(mail_world.users["team_member"].id)
    assert (data["email_id"], data["inbox_id"], data["address"], data["to"]) == (
        str(email_id), str(inbox.id), inbox.full_address, inbox.full_address)
    assert (data["from"], data["subject"], data["size_bytes"]) == (
        "alice@sender.example", "Counted", len(raw))
    assert data["received_at"].endswith("Z")
    assert (events[0].org_id, events[0].team_id) == (mail_world.ids["org"], mail_world.ids["team"])


def test_the_mail_counters_count_per_sender_domain_and_hour(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    for sender in ("a@one.example", "b@one.example", "c@two.example"):
        raw = message(inbox.full_address, sender=sender)
        _store(runtime, raw, inbox, mail_from=sender)
    with runtime.db.session() as session:
        rows = session.execute(select(MailCounter.sender_domain, func.sum(MailCounter.emails))
                               .group_by(MailCounter.sender_domain)
                               .order_by(MailCounter.sender_domain)).all()
        shards = session.scalars(select(MailCounter.shard)).all()
    assert [tuple(row) for row in rows] == [("one.example", 2), ("two.example", 1)]
    assert all(0 <= shard < SHARDS for shard in shards)


def test_garbage_is_stored_with_its_raw_bytes(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    raw = b"\x00\xff garbage without headers \x00" * 10
    _store(runtime, raw, inbox)
    [email] = _emails(runtime)
    assert email.subject == parse_message(raw).subject
    assert runtime.storage.get(email.raw_key) == raw


def test_recipients_that_lapsed_or_vanished_since_rcpt_get_nothing(runtime, mail_world):
    with runtime.db.transaction() as session:
        live = make_inbox(session, runtime.settings, mail_world)
        lapsed = make_inbox(session, runtime.settings, mail_world)
        lapse(session, lapsed.id)
    raw = message(live.full_address)
    ids = deliver(runtime.db, runtime.storage, raw,
                  recipients=[live.full_address, lapsed.full_address, f"gone@{mail_world.domain}"])
    assert [email.inbox_id for email in _emails(runtime)] == [live.id]
    assert len(ids) == 1


def test_when_no_recipient_is_live_nothing_is_kept(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
        lapse(session, inbox.id)
    assert _store(runtime, message(inbox.full_address), inbox) == []
    assert _emails(runtime) == []
    assert _objects(runtime) == []


def test_storing_that_the_database_refuses_keeps_no_objects_and_raises(runtime, mail_world,
                                                                     tmp_path):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    storage = FilesystemStorage(tmp_path / "other-objects")
    # A database without the schema: the transaction fails after the objects were written.
    broken = Database(runtime.settings.replace(**{
        "database.url": f"sqlite:///{tmp_path / 'empty.db'}"}))
    raw = message(inbox.full_address, attachments=(("a.png", "image/png", PNG),))
    with pytest.raises(OperationalError):
        deliver(broken, storage, raw, recipients=[inbox.full_address])
    broken.dispose()
    assert not any(path.is_file() for path in (tmp_path / "other-objects").rglob("*"))
