"""`insert_rows`: a COPY on PostgreSQL (an INSERT inside a pipeline), an INSERT elsewhere,
storing what the session's INSERT stores and noted as its writes; mail ingest's few e-mails in
one pipeline, more by COPY."""

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Column, DateTime, Integer, MetaData, Table, cast, func, insert, select
from sqlalchemy.types import Text

from models.db import has_writes, insert_rows, pipelined
from models.events import Event
from models.mail.entities import Email
from models.mail.ingest.store import PIPELINED_EMAILS, accept_message, store_messages
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.statements import recorded

# Values COPY's text format must escape (tabs, line ends, backslashes, its NULL marker) or that
# a JSON column must keep exactly.
AWKWARD = "tab\there\nnew line\r\\N back\\slash \"quoted\" é ☃ \x01"


def _rows(n):
    at = datetime(2026, 11, 28, 12, 30, 15, 123456, tzinfo=UTC)
    return [{"id": uuid.uuid4(), "name": f"{AWKWARD} {i}"[:64],
             "data": {"text": AWKWARD, "nested": [1, 2.5, None, True, {"k": AWKWARD}], "i": i},
             "org_id": uuid.uuid4() if i % 2 else None, "team_id": None,
             "created_at": at.astimezone(timezone(timedelta(hours=5, minutes=30))),
             "dispatched_at": None if i % 2 else at + timedelta(seconds=i)}
            for i in range(n)]


def _stored(session, ids):
    return [tuple(row) for row in session.execute(
        select(Event.name, cast(Event.data, Text), Event.org_id, Event.team_id,
               Event.created_at, Event.dispatched_at)
        .where(Event.id.in_(ids)).order_by(Event.name))]


def test_rows_are_stored_as_the_sessions_insert_stores_them(runtime):
    copied = _rows(5)
    inserted = [{**row, "id": uuid.uuid4()} for row in copied]  # the same values, other ids
    with runtime.db.session() as session:
        insert_rows(session, Event.__table__, copied)
        session.execute(insert(Event.__table__), inserted)
        session.commit()
        by_copy = _stored(session, [row["id"] for row in copied])
        by_insert = _stored(session, [row["id"] for row in inserted])
    assert len(by_copy) == 5
    assert by_copy == by_insert


def test_the_rows_are_writes_of_the_unit_of_work(runtime):
    with runtime.db.session() as session:
        assert not has_writes(session)
        insert_rows(session, Event.__table__, _rows(2))
        assert has_writes(session)
        session.rollback()
        assert not has_writes(session)
        assert session.scalar(select(Event.id).where(Event.name.like("tab%"))) is None


def test_no_rows_is_no_statement(runtime):
    with runtime.db.session() as session:
        insert_rows(session, Event.__table__, [])
        assert not has_writes(session)


def test_columns_left_out_get_their_defaults_as_the_insert_gives_them(runtime):
    """A new e-mail column with a Python-side default made every ingest COPY raise until ingest
    set it: the COPY now adds the defaults the INSERT would apply (scalars, callables)."""
    with runtime.db.session() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
        least = [{"inbox_id": inbox.id, "to_address": inbox.full_address, "size_bytes": 10,
                  "raw_key": f"raw/{n}"} for n in range(2)]
        insert_rows(session, Email.__table__, least[:1])
        session.execute(insert(Email.__table__), least[1:])
        by_copy, by_insert = (session.execute(
            select(Email).where(Email.raw_key == key)).scalar_one() for key in ("raw/0", "raw/1"))
        columns = [c.name for c in Email.__table__.columns
                   if c.name not in ("id", "raw_key", "received_at")]
        assert ({name: getattr(by_copy, name) for name in columns}
                == {name: getattr(by_insert, name) for name in columns})
        assert by_copy.id != by_insert.id
        assert abs(by_copy.received_at - by_insert.received_at) < timedelta(minutes=1)
        assert (by_copy.cc, by_copy.is_read, by_copy.subject) == ([], False, "")


def test_a_left_out_column_whose_default_only_sql_computes_is_refused(runtime):
    table = Table("sql_defaults", MetaData(), Column("id", Integer, primary_key=True),
                  Column("at", DateTime, default=func.now()))
    with runtime.db.session() as session, pytest.raises(ValueError, match="at"):
        insert_rows(session, table, [{"id": 1}])


def test_inside_a_pipeline_the_rows_go_by_insert_and_are_stored_the_same(runtime, engine):
    # A COPY cannot run in pipeline mode: there the rows are an INSERT queued with the block's
    # other statements (and a nested block joins the outer one rather than waiting on it).
    piped = _rows(3)
    inserted = [{**row, "id": uuid.uuid4()} for row in piped]
    with runtime.db.session() as session:
        with recorded(engine) as statements, pipelined(session), pipelined(session):
            insert_rows(session, Event.__table__, piped)
        session.execute(insert(Event.__table__), inserted)
        session.commit()
        assert _stored(session, [row["id"] for row in piped]) == _stored(
            session, [row["id"] for row in inserted])
    assert [s for s in statements if s.startswith("INSERT INTO events")], statements


@pytest.mark.postgres
def test_a_few_untagged_e_mails_are_written_in_one_pipeline_and_more_by_copy(
        committed_runtime, engine):
    # One round trip for a test suite's message (its e-mail, its event, the counts), where two
    # COPYs and the counts' pipeline took five; a bigger batch streams its rows by COPY. The
    # engine's statement events see an INSERT, never a COPY.
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        address = make_inbox(session, committed_runtime.settings, world).full_address

    def inserts_of(count):
        messages = [accept_message(message(address, subject=f"n{n}"), mail_from="a@b.example",
                                   recipients=[address]) for n in range(count)]
        with recorded(engine) as statements:
            assert all(store_messages(committed_runtime.db, committed_runtime.storage,
                                      messages))
        return [s.split("(")[0].strip() for s in statements
                if s.startswith(("INSERT INTO emails", "INSERT INTO events"))]

    assert inserts_of(1) == ["INSERT INTO emails", "INSERT INTO events"]
    assert inserts_of(PIPELINED_EMAILS + 1) == []
