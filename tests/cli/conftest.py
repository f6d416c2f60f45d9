"""Running `burnbox` verbs against the test database: in this process through click's runner
(real commits, so on `committed_runtime`), or as a child process (`burnbox_env`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import CliRunner, Result

from burnbox.cli import main
from models.runtime import Runtime
from tests.factories.mail import MailWorld, make_inbox, make_mail_world

# The mail world's team T, as an operator names it: <org slug>/<team slug>.
TEAM = "org-a/team-t"


def cli_env(runtime: Runtime) -> dict[str, str]:
    """The environment that points a `burnbox` command at the test runtime's database, Redis
    (when the backend has it) and object folder, with the cheap password hashing of tests."""
    settings = runtime.settings
    return {"BURNBOX_ENV": "test", "BURNBOX_DATA_DIR": settings.data_dir,
            "BURNBOX_DATABASE__URL": settings.database.url,
            "BURNBOX_REDIS__URL": settings.redis.url,
            "BURNBOX_STORAGE__PATH": str(runtime.storage.root),
            "BURNBOX_AUTH__JWT_SECRET": settings.auth.jwt_secret,
            "BURNBOX_LOG__FORMAT": "text", "BURNBOX_LOG__LEVEL": "WARNING",
            "BURNBOX_AUTH__ARGON2_TIME_COST": "1", "BURNBOX_AUTH__ARGON2_MEMORY_KIB": "1024",
            "BURNBOX_AUTH__ARGON2_PARALLELISM": "1"}


@pytest.fixture
def burnbox(committed_runtime: Runtime) -> Callable[..., Result]:
    """Run `burnbox <args>` on the committed test runtime; the click Result (stdout in
    `.stdout`, stderr in `.stderr`)."""

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        return CliRunner(env={**cli_env(committed_runtime), **(env or {})}).invoke(
            main, list(args))

    return run


@pytest.fixture
def committed_world(committed_runtime: Runtime) -> MailWorld:
    """The mail world (tests/factories/mail.py), committed."""
    with committed_runtime.db.transaction() as session:
        return make_mail_world(session, committed_runtime.settings)


@pytest.fixture
def inbox_address(committed_runtime: Runtime, committed_world: MailWorld) -> str:
    """A live inbox of team T, made by the team member, committed: its address."""
    with committed_runtime.db.transaction() as session:
        inbox = make_inbox(session, committed_runtime.settings, committed_world, alias="box")
        return inbox.full_address
