"""Getting a command ready to run: its settings, and a database it can reach and whose schema
is the one this code expects.

The schema rule: on the embedded default (no `database.url`: SQLite in `data_dir`), a command
migrates the database itself, as `burnbox serve` does, so a fresh data folder works with any
command. A configured database is migrated only by `burnbox migrate` (or the release step),
never as a side effect of an admin command: the command stops and says what to run.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import click

from burnbox.cli.errors import fail, remember, unreachable_database

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from burnbox.settings import Settings

# This module is imported by every command's definition, so it imports the settings, the
# database layer and logging only inside the functions that use them: `burnbox --help` and the
# data verbs over HTTP must not pay for them (bench/cli.py measures it).


def load(**overrides: Any) -> Settings:
    """The settings (defaults < file < environment < `overrides` that are not None), with
    logging configured and the JWT secret resolved; a bad setting (a scaled process without a
    secret among them) ends the command naming the key."""
    from burnbox.logs import configure_logging
    from burnbox.settings import SettingsError, load_settings
    from burnbox.signing_secret import resolve_jwt_secret

    try:
        settings = load_settings(overrides={k: v for k, v in overrides.items() if v is not None})
        configure_logging(settings)
        settings = resolve_jwt_secret(settings)
    except SettingsError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc
    return remember(settings)


def engine_for(settings: Settings) -> Engine:
    """The settings' database engine (nothing connects yet); a data folder that cannot be made
    ends the command with one line."""
    from models.db import make_engine

    try:
        return make_engine(settings)
    except OSError as exc:
        fail(unreachable_database(settings, exc))


def reach(settings: Settings, engine: Engine) -> None:
    """Connect once; any failure to (a refused or unresolvable host, a wrong password, a data
    folder that cannot be written) ends the command with one line naming the URL."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except (DBAPIError, OSError) as exc:
        fail(unreachable_database(settings, exc))


def ensure_schema(settings: Settings, engine: Engine) -> None:
    """Make sure the database is reachable and at the newest schema: migrate the embedded
    default, else end the command saying what to run (see the module docstring)."""
    import logging

    from models.schema import BEHIND, CURRENT, MISSING, schema_state, upgrade

    reach(settings, engine)
    # The command says in one line what it finds or does, instead of Alembic's lines.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    state = schema_state(engine)
    if state == CURRENT:
        return
    if not settings.database.url:
        upgrade(engine)
        click.echo("migrated the database to the newest schema", err=True)
        return
    if state == MISSING:
        fail("the database has no schema: run `burnbox migrate`")
    if state == BEHIND:
        fail("the database schema is older than this version of Burnbox: run `burnbox migrate`")
    fail("the database schema is newer than this version of Burnbox: upgrade Burnbox")


def wait_for_schema(engine: Engine, stop: threading.Event, interval: float = 1.0) -> bool:
    """Wait until the database holds this version's schema (or a newer one, as in a rolling
    deploy), saying once that it waits; False when `stop` was set first.

    Under honcho (and on platforms that start every process together) the clock starts while
    `release` is still migrating: the jobs it sent at once reached a worker as tracebacks about
    missing tables, and the queue dropped them. An unreachable database is waited out too."""
    import logging

    from sqlalchemy.exc import DBAPIError

    from models.schema import CURRENT, UNKNOWN, schema_state

    said = False
    while not stop.is_set():
        try:
            if schema_state(engine) in (CURRENT, UNKNOWN):
                return True
            reason = "is not migrated yet"
        except (DBAPIError, OSError) as exc:
            reason = f"cannot be reached ({type(exc).__name__})"
        if not said:
            logging.getLogger(__name__).warning(
                "waiting for the database schema: the database %s; `burnbox release` (or "
                "`burnbox migrate`) migrates it", reason)
            said = True
        stop.wait(interval)
    return False


class SchemaCommand(click.Command):
    """A command that needs the schema: `ensure_schema` runs before its body."""

    def invoke(self, ctx: click.Context) -> Any:
        """Check (or migrate) the database, then run the command."""
        settings = load()
        engine = engine_for(settings)
        try:
            ensure_schema(settings, engine)
        finally:
            engine.dispose()
        return super().invoke(ctx)
