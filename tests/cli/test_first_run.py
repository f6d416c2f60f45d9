"""The first-run papercuts: every command that needs the schema migrates the embedded default
or says what to run, and an unreachable database or Redis is one line naming the URL without
its password, never a traceback."""

import subprocess

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine

from burnbox.cli import main
from models.schema import upgrade
from tests.cli.conftest import cli_env
from tests.identity import PASSWORD
from tests.processes import BIN, ROOT, free_port, process_env

# A fixed secret, as every scaled deployment must set: these tests are about the schema and the
# database, and without it a non-SQLite URL would stop at the secret first.
CHEAP_HASHES = {"BURNBOX_ENV": "test", "BURNBOX_LOG__FORMAT": "text",
                "BURNBOX_AUTH__JWT_SECRET": "test-secret-" + "x" * 40,
                "BURNBOX_AUTH__ARGON2_TIME_COST": "1", "BURNBOX_AUTH__ARGON2_MEMORY_KIB": "1024",
                "BURNBOX_AUTH__ARGON2_PARALLELISM": "1"}


def _run(env, *args):
    """Run `burnbox <args>` with only `env` configuring it (None removes a variable)."""
    unset = {name: None for name in ("BURNBOX_DATABASE__URL", "BURNBOX_REDIS__URL",
                                     "DATABASE_URL", "REDIS_URL", "BURNBOX_DATA_DIR")}
    return CliRunner(env={**unset, **CHEAP_HASHES, **env}).invoke(main, list(args))


def test_create_admin_on_a_fresh_data_folder_migrates_it_first(tmp_path):
    result = _run({"BURNBOX_DATA_DIR": str(tmp_path / "data")}, "create-admin", "--email",
                  "root@example.test", "--password", PASSWORD)
    assert result.exit_code == 0, result.output
    assert result.stderr == "migrated the database to the newest schema\n"
    assert "system administrator root@example.test created" in result.stdout
    again = _run({"BURNBOX_DATA_DIR": str(tmp_path / "data")}, "inboxes", "list", "--team", "x")
    assert (again.exit_code, again.stderr) == (1, "Error: no team 'x'\n")  # no migration now


def test_a_configured_database_without_schema_or_behind_says_to_run_migrate(tmp_path):
    url = f"sqlite:///{tmp_path / 'configured.db'}"
    folder = {"BURNBOX_DATA_DIR": str(tmp_path)}
    commands = (("create-admin", "--email", "root@example.test", "--password", PASSWORD),
                ("inboxes", "list", "--team", "x"), ("keys", "list", "--team", "x"),
                ("emails", "list", "a@b.test"))
    for args in commands:
        result = _run({**folder, "BURNBOX_DATABASE__URL": url}, *args)
        assert (result.exit_code, result.stderr) == (
            1, "Error: the database has no schema: run `burnbox migrate`\n"), args
    engine = create_engine(url)
    upgrade(engine, "0009")
    engine.dispose()
    behind = _run({**folder, "BURNBOX_DATABASE__URL": url}, "inboxes", "list", "--team", "x")
    assert (behind.exit_code, behind.stderr) == (
        1, "Error: the database schema is older than this version of Burnbox: run "
           "`burnbox migrate`\n")
    assert _run({**folder, "BURNBOX_DATABASE__URL": url}, "migrate").exit_code == 0
    migrated = _run({**folder, "BURNBOX_DATABASE__URL": url}, "inboxes", "list", "--team", "x")
    assert migrated.stderr == "Error: no team 'x'\n"


@pytest.mark.parametrize("args", [
    ("migrate",), ("create-admin", "--email", "root@example.test", "--password", PASSWORD),
    ("inboxes", "list", "--team", "x"), ("keys", "list", "--team", "x"),
    ("inboxes", "follow", "a@b.test")])
def test_an_unreachable_database_is_one_line_without_the_password(args, tmp_path):
    port = free_port()
    result = _run({"DATABASE_URL": f"postgresql://burnbox:s3cret@127.0.0.1:{port}/burnbox",
                   "BURNBOX_DATA_DIR": str(tmp_path)}, *args)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (f"Error: cannot reach the database at postgresql+psycopg://"
                             f"burnbox:***@127.0.0.1:{port}/burnbox: connection refused\n")


def test_the_installed_command_prints_the_one_line_too(tmp_path):
    port = free_port()
    env = {**process_env(), **CHEAP_HASHES,
           "DATABASE_URL": f"postgresql://burnbox:s3cret@127.0.0.1:{port}/burnbox"}
    result = subprocess.run([str(BIN / "burnbox"), "create-admin", "--email", "a@b.test",
                             "--password", PASSWORD], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: cannot reach the database at postgresql+psycopg://burnbox:***@127.0.0.1:"
        f"{port}/burnbox: connection refused"]


def test_an_unreachable_redis_is_one_line_without_the_password(committed_runtime):
    port = free_port()
    result = CliRunner(env={**cli_env(committed_runtime),
                            "BURNBOX_REDIS__URL": f"redis://:s3cret@127.0.0.1:{port}/0"}
                       ).invoke(main, ["inboxes", "list", "--team", "x"])
    assert (result.exit_code, result.stderr) == (
        1, f"Error: cannot reach Redis at redis://:***@127.0.0.1:{port}/0: connection refused\n")
