"""Object keys are looked up by value whenever mail is deleted (`unreferenced_keys` asks which
keys no row still references), so every column holding one is indexed in the migrated schema:
an unindexed one made each deletion read its whole table."""

from sqlalchemy import inspect

from models.mail.entities import Attachment, Email

KEY_COLUMNS = [Email.__table__.c.raw_key, Attachment.__table__.c.storage_key,
               Attachment.__table__.c.thumbnail_key]


def test_every_object_key_column_is_indexed(engine):
    inspector = inspect(engine)
    for column in KEY_COLUMNS:
        indexed = {tuple(index["column_names"]) for index in
                   inspector.get_indexes(column.table.name)}
        assert (column.name,) in indexed, f"{column.table.name}.{column.name}"
