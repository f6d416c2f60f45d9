"""Schema migrations through Alembic, for `burnbox migrate`, the release step and tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

ROOT = Path(__file__).resolve().parent.parent


# Full-text search objects that exist only in the migrations, one engine each (see
# models.mail.emails): Alembic must neither compare them with the models nor drop them.
SEARCH_INDEX = "ix_emails_search"
SEARCH_TABLE = "emails_fts"
# Expression indexes only the migrations declare (the models cannot spell them alike on both
# backends): the e-mail search, and the audit list's actor e-mail and resource-name filters.
MIGRATION_ONLY_INDEXES = frozenset({SEARCH_INDEX, "ix_audit_log_org_id_actor_email_created_at",
                                    "ix_audit_log_resource_name_trgm"})


def include_name(name: str | None, type_: str, _parent_names: Any) -> bool:
    """Alembic's `include_name` hook: False for the migration-only objects (the FTS5 table and
    its shadow tables, the expression indexes of MIGRATION_ONLY_INDEXES)."""
    if type_ == "table" and name is not None:
        return not (name == SEARCH_TABLE or name.startswith(SEARCH_TABLE + "_"))
    return not (type_ == "index" and name in MIGRATION_ONLY_INDEXES)


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


def upgrade_counted(engine: Engine) -> tuple[str, int]:
    """Migrate the database behind `engine` to the newest schema; (the revision it is at now,
    how many migrations ran)."""
    with engine.connect() as connection:
        before = MigrationContext.configure(connection).get_current_revision()
    upgrade(engine)
    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head()
    assert head is not None  # tests/test_migrations.py keeps the graph at one head
    return head, sum(1 for _ in script.iterate_revisions(head, before or "base"))


def heads() -> list[str]:
    """The head revisions of the migration graph (exactly one when it is healthy)."""
    return list(ScriptDirectory.from_config(alembic_config()).get_heads())


# What `schema_state` finds: no schema at all, an older one (migrations pending), the newest,
# or a revision this version of the code does not know (the database was migrated by a newer
# release).
MISSING = "missing"
BEHIND = "behind"
CURRENT = "current"
UNKNOWN = "unknown"


def schema_state(bind: Engine | Connection) -> str:
    """How the database behind `bind` compares with the migrations of this code: MISSING,
    BEHIND, CURRENT or UNKNOWN. An engine connects (the caller handles an unreachable
    database); a connection is used as it is."""
    if isinstance(bind, Connection):
        current = set(MigrationContext.configure(bind).get_current_heads())
    else:
        with bind.connect() as connection:
            current = set(MigrationContext.configure(connection).get_current_heads())
    if not current:
        return MISSING
    script = ScriptDirectory.from_config(alembic_config())
    if current == set(script.get_heads()):
        return CURRENT
    known = {revision.revision for revision in script.walk_revisions()}
    return BEHIND if current <= known else UNKNOWN
