"""Alembic: one head, no drift between models and migrated schema, a clean round trip."""

import json
from datetime import UTC, datetime, timedelta

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Column, MetaData, String, inspect, text
from sqlalchemy.orm import Session

import models
from burnbox.settings import load_settings
from models.db import make_engine
from models.domains.domains import Domain
from models.schema import alembic_config, heads, include_name, upgrade
from tests.factories.mail import make_inbox_rows, make_mail_world


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


def test_0014_moves_the_platform_columns_into_the_overrides_document(tmp_path):
    url = f"sqlite:///{tmp_path / 'platform.db'}"
    engine = make_engine(load_settings(environ={}, overrides={"database.url": url}))
    try:
        upgrade(engine, "0011")
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO platform_settings (id, registration_enabled, max_sessions_per_user,"
                " password_policy, updated_at) VALUES (1, 0, 3, :policy, '2026-11-01 10:00:00')"),
                {"policy": '{"min_length": 12, "require_digit": true, "gone_rule": true}'})
        upgrade(engine)
        with engine.connect() as connection:
            overrides, revision = connection.execute(text(
                "SELECT overrides, revision FROM platform_settings")).one()
        assert json.loads(overrides) == {
            "defaults.registration_enabled": False, "defaults.max_sessions_per_user": 3,
            "defaults.password_min_length": 12, "defaults.password_require_digit": True}
        assert revision == 0
    finally:
        engine.dispose()


def _later_columns(engine) -> list[tuple[str, str]]:
    """Add to the tables of the older schema in `engine` the columns of today's models it lacks
    (nullable, no constraints), so today's models and factories can write rows there; return
    them, to drop before the upgrade adds them for real."""
    added = []
    with engine.begin() as connection:
        present = inspect(connection)
        for table in models.Base.metadata.sorted_tables:
            if not present.has_table(table.name):
                continue
            have = {column["name"] for column in present.get_columns(table.name)}
            for column in table.columns:
                if column.name not in have:
                    kind = column.type.compile(dialect=engine.dialect)
                    connection.execute(text(
                        f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}"))
                    added.append((table.name, column.name))
    return added


def _drop_columns(engine, columns: list[tuple[str, str]]) -> None:
    with engine.begin() as connection:
        for table, column in columns:
            connection.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))


def test_0016_counts_the_inboxes_still_stored_into_the_inbox_counters(tmp_path):
    url = f"sqlite:///{tmp_path / 'counters.db'}"
    settings = load_settings(environ={}, overrides={"database.url": url,
                                                    "auth.jwt_secret": "test-secret-" + "x" * 40})
    engine = make_engine(settings)
    try:
        upgrade(engine, "0015")
        later = _later_columns(engine)
        with Session(engine) as session:
            world = make_mail_world(session, settings)
            domain = session.get(Domain, world.ids["domain"])
            ids = (world.ids["org"], world.ids["team"], domain.id)
            for count, minute in ((3, 5), (1, 65)):
                make_inbox_rows(session, domain, world.ids["team"], count,
                                created_at=datetime(2026, 11, 20, 9, tzinfo=UTC)
                                + timedelta(minutes=minute))
            session.commit()
        _drop_columns(engine, later)
        upgrade(engine)
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT org_id, team_id, domain_id, day, hour, inboxes FROM inbox_counters"
                " ORDER BY hour")).all()
        assert [tuple(row[3:]) for row in rows] == [("2026-11-20", 9, 3), ("2026-11-20", 10, 1)]
        assert {tuple(str(v).replace("-", "") for v in row[:3]) for row in rows} == {
            tuple(value.hex for value in ids)}
    finally:
        engine.dispose()


def test_0034_keeps_the_counts_as_shard_0_and_its_downgrade_sums_the_shards(tmp_path):
    settings = load_settings(environ={}, overrides={
        "database.url": f"sqlite:///{tmp_path / 'shards.db'}",
        "auth.jwt_secret": "test-secret-" + "x" * 40})
    engine = make_engine(settings)
    insert = ("INSERT INTO inbox_counters (org_id, team_id, domain_id, day, hour, {shard}inboxes)"
              " VALUES (:org, :team, :domain, '2026-12-01', 9, {value}:inboxes)")
    count = "SELECT {shard}inboxes FROM inbox_counters ORDER BY {shard}inboxes"
    try:
        upgrade(engine, "0033")
        later = _later_columns(engine)
        with Session(engine) as session:
            world = make_mail_world(session, settings)
            session.commit()
        key = {name: world.ids[name].hex for name in ("org", "team", "domain")}
        _drop_columns(engine, later)
        with engine.begin() as connection:
            connection.execute(text(insert.format(shard="", value="")), {**key, "inboxes": 3})
        upgrade(engine)
        with engine.begin() as connection:
            assert connection.execute(text(count.format(shard="shard, "))).all() == [(0, 3)]
            connection.execute(text(insert.format(shard="shard, ", value="5, ")),
                               {**key, "inboxes": 2})
        config = alembic_config()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0033")
        with engine.connect() as connection:
            assert connection.execute(text(count.format(shard=""))).all() == [(5,)]
    finally:
        engine.dispose()
