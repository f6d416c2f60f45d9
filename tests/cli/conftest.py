"""Running `burnbox` verbs against the test database: in this process through click's runner
(real commits, so on `committed_runtime`), or as a child process (`cli_env`); and against the
API of the test runtime on a real server, with a team API key (`api_env`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator

import dramatiq
import pytest
from click.testing import CliRunner, Result

from burnbox.cli import main
from mailin.server import MailinThread
from models.apikeys.keys import create_key
from models.runtime import Runtime
from models.tenancy.access import resolve_org_access
from models.tenancy.rbac import load_grants
from models.tenancy.teams import resolve_team_access
from tasks import start_worker
from tests.factories.mail import MailWorld, make_inbox, make_mail_world
from tests.factories.tenancy import caller_of
from tests.processes import ROOT
from tests.web.conftest import serving

# The mail world's team T, as an operator names it: <org slug>/<team slug>.
TEAM = "org-a/team-t"
# What a verb's help, or a data verb over HTTP, must not import: the application and its
# libraries (importing them was the start-up time of a verb).
HEAVY = ("flask", "sqlalchemy", "dramatiq", "alembic", "marshmallow", "models", "web", "tasks",
         "mailin", "redis", "psycopg", "requests", "mcp", "mcp_server", "uvicorn", "starlette")
PRINT_IMPORTED = """
import json, sys
from burnbox.cli import main
try:
    main(sys.argv[1:], prog_name="burnbox")
except SystemExit:
    pass
print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})), file=sys.stderr)
"""
# How long a test waits for a `burnbox` child to end: only a guard against a hang. The database
# path alone starts in 2.5 s of CPU, which a loaded machine stretched past 15 s of wall time.
HANG = 180
# The scopes of the key the data verbs use over HTTP.
SCOPES = ["team.view", "team.inboxes.view", "team.inboxes.create", "team.inboxes.manage",
          "team.emails.view"]


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


def imported(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The top-level packages imported by `burnbox <args>` run in a new interpreter (with
    `env`); a failure of the command fails the test with its output."""
    result = subprocess.run([sys.executable, "-c", PRINT_IMPORTED, *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    assert "Error" not in result.stderr, result.stderr
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def team_key(runtime: Runtime, world: MailWorld, scopes: list[str]) -> str:
    """A new API key of team T, the lead's, with `scopes`, committed: its secret."""
    with runtime.db.transaction() as session:
        org = resolve_org_access(session, load_grants(session), caller_of(world.users["lead"]),
                                 world.ids["org"])
        team = resolve_team_access(session, org, world.ids["team"])
        return create_key(session, team, name="cli", scopes=scopes).raw_key


@pytest.fixture
def api_env(committed_runtime: Runtime, committed_world: MailWorld) -> Iterator[dict[str, str]]:
    """The test runtime's API on a real threaded server (as `burnbox serve` runs it) and a key
    of team T with SCOPES: the client variables a shell exports for the data verbs."""
    key = team_key(committed_runtime, committed_world, SCOPES)
    with serving(committed_runtime) as base:
        yield {"BURNBOX_API": f"{base}/api/v1", "BURNBOX_API_KEY": key}


@pytest.fixture
def delivering(committed_runtime: Runtime, inbox_address: str) -> Iterator[tuple[str, int]]:
    """The SMTP server and two worker threads (the fan-out that publishes to Redis): its
    address."""
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    worker = start_worker(dramatiq.get_broker(), threads=2)
    yield server.address
    worker.stop()
    server.stop()
