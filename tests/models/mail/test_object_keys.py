"""Object keys are looked up by value whenever mail is deleted (`unreferenced_keys` asks which
keys no row still references), so every column holding one is indexed in the migrated schema:
an unindexed one made each deletion read its whole table."""

from sqlalchemy import inspect, select

from models.mail.entities import Attachment, Email, unreferenced_keys
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.statements import recorded

KEY_COLUMNS = [Email.__table__.c.raw_key, Attachment.__table__.c.storage_key,
               Attachment.__table__.c.thumbnail_key]


def test_every_object_key_column_is_indexed(engine):
    inspector = inspect(engine)
    for column in KEY_COLUMNS:
        indexed = {tuple(index["column_names"]) for index in
                   inspector.get_indexes(column.table.name)}
        assert (column.name,) in indexed, f"{column.table.name}.{column.name}"


def test_the_keys_no_row_references_are_found_in_one_statement(runtime, engine):
    # The worker asks it for every deleted inbox: three statements were a tenth of its CPU
    # under a test suite's loop.
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        address = make_inbox(session, runtime.settings, world).full_address
    email_id = make_email(runtime, address, attachments=[("a.txt", "text/plain", b"hi")])
    with runtime.db.session() as session:
        email = session.get(Email, email_id)
        attachment = session.scalars(select(Attachment).where(Attachment.email_id == email_id)
                                     ).one()
        kept = [email.raw_key, attachment.storage_key]
        with recorded(engine) as statements:
            assert unreferenced_keys(session, [*kept, "gone/1", "gone/1", "gone/2"]) == [
                "gone/1", "gone/2"]
        assert len(statements) == 1
        assert unreferenced_keys(session, []) == []
