"""Alembic: one head, no drift between models and migrated schema, a clean round trip."""

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Column, MetaData, String, inspect

import models
from burnbox.settings import load_settings
from models.db import make_engine
from models.schema import alembic_config, heads, include_name, upgrade


def _drift(engine, metadata):
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True,
                                                               "include_name": include_name})
        return compare_metadata(context, metadata)


def test_the_migration_graph_has_exactly_one_head():
    assert len(heads()) == 1, f"merge the heads: {heads()}"


def test_the_migrated_database_is_at_the_head(engine):
    with engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_heads() == tuple(heads())


def test_the_models_match_the_migrated_schema(engine):
    diff = _drift(engine, models.Base.metadata)
    changes = "\n".join(str(change) for change in diff)
    assert diff == [], f"the models drifted from the migrations; migrate:\n{changes}"


def test_the_drift_check_notices_a_column_the_migrations_lack(engine):
    metadata = MetaData()
    for table in models.Base.metadata.tables.values():
        table.to_metadata(metadata)
    metadata.tables["events"].append_column(Column("unmigrated", String(10)))
    assert [change[0] for change in _drift(engine, metadata)] == ["add_column"]


def test_migrations_downgrade_to_nothing_and_upgrade_again(tmp_path):
    """On a fresh embedded-mode SQLite file, whatever the backend under test."""
    url = f"sqlite:///{tmp_path / 'roundtrip.db'}"
    engine = make_engine(load_settings(environ={}, overrides={"database.url": url}))
    try:
        upgrade(engine)
        tables = set(inspect(engine).get_table_names())
        assert set(models.Base.metadata.tables) <= tables
        config = alembic_config()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        upgrade(engine)
        assert set(models.Base.metadata.tables) <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
