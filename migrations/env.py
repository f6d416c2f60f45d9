"""Alembic environment: the URL comes from the Burnbox settings, or a connection passed in by
`models.schema` (tests and `burnbox migrate`). Works on PostgreSQL and SQLite (batch mode)."""

from alembic import context
from sqlalchemy import Connection

import models
from burnbox.settings import load_settings
from models.db import make_engine
from models.schema import include_name

target_metadata = models.Base.metadata


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        run(connection)
        return
    engine = make_engine(load_settings())
    with engine.connect() as fresh:
        run(fresh)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `burnbox migrate`")
main()
