"""Schema migrations through Alembic, for `burnbox migrate`, the release step and tests."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

ROOT = Path(__file__).resolve().parent.parent


def alembic_config() -> Config:
    """The Alembic configuration of the repository (alembic.ini + migrations/)."""
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind `engine` to `revision`."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def heads() -> list[str]:
    """The head revisions of the migration graph (exactly one when it is healthy)."""
    return list(ScriptDirectory.from_config(alembic_config()).get_heads())
