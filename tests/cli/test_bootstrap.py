"""`burnbox bootstrap`: shell variables on stdout (the key only when this run made it up), the
next steps on stderr; options override the `bootstrap.*` settings."""

import stat

from click.testing import CliRunner
from sqlalchemy import func, select

from burnbox.cli import main
from models.apikeys.keys import ApiKey, find_key
from models.tenancy.teams import Team
from tests.cli.conftest import cli_env

GIVEN = "bb_" + "ab" * 32


def _run(runtime, *args, **env):
    return CliRunner(env={**cli_env(runtime), **env}).invoke(main, ["bootstrap", *args])


def _variables(stdout):
    return dict(line.split("=", 1) for line in stdout.splitlines())


def test_bootstrap_prints_the_key_once_then_only_says_it_exists(committed_runtime):
    first = _run(committed_runtime)
    assert first.exit_code == 0, first.output
    variables = _variables(first.stdout)
    assert variables["BURNBOX_DOMAIN"] == "burnbox.test"
    assert variables["BURNBOX_API_KEY"].startswith("bb_")
    assert "curl -s -X POST" in first.stderr and "made admin, setup, api_key" in first.stderr

    again = _run(committed_runtime)
    assert again.exit_code == 0, again.output
    assert "BURNBOX_API_KEY" not in _variables(again.stdout)
    assert "nothing to do" in again.stderr
    assert f"{variables['BURNBOX_API_KEY'][:11]}... (not shown" in again.stderr


def test_a_key_given_in_the_environment_is_used_and_never_printed(committed_runtime):
    result = _run(committed_runtime, "--team", "CI",
                  BURNBOX_BOOTSTRAP__API_KEY=GIVEN)
    assert result.exit_code == 0, result.output
    assert GIVEN not in result.output
    with committed_runtime.db.session() as session:
        [(prefix, team)] = session.execute(
            select(ApiKey.prefix, Team.name).join(Team, Team.id == ApiKey.team_id)).all()
    assert (prefix, team) == (GIVEN[:11], "CI")


def test_a_malformed_key_fails_with_a_message(committed_runtime):
    result = _run(committed_runtime, "--api-key", "bb_not-hex")
    assert result.exit_code == 1
    assert "invalid API key format" in result.output


def _works(runtime, secret):
    """Whether `secret` is the unrevoked bootstrap key's."""
    with runtime.db.session() as session:
        key = find_key(session, secret)
        return key is not None and key.revoked_at is None and key.name == "bootstrap"


def test_with_an_env_file_a_second_run_keeps_the_working_key_in_the_file(
        committed_runtime, tmp_path):
    env_file = tmp_path / "burnbox.env"
    first = _run(committed_runtime, "--env-file", str(env_file))
    assert first.exit_code == 0, first.output
    assert first.stdout == ""
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    written = _variables(env_file.read_text())
    assert written["BURNBOX_DOMAIN"] == "burnbox.test"
    assert _works(committed_runtime, written["BURNBOX_API_KEY"])
    assert written["BURNBOX_API_KEY"] not in first.stderr  # in the file, not on the terminal
    assert f"load the variables: set -a; . {env_file}; set +a" in first.stderr

    again = _run(committed_runtime, "--env-file", str(env_file))
    assert again.exit_code == 0, again.output
    assert "nothing to do" in again.stderr
    assert _variables(env_file.read_text()) == written
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    with committed_runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(ApiKey)) == 1


def test_an_env_file_written_without_the_key_gets_a_new_one_and_the_old_stops(
        committed_runtime, tmp_path):
    # What `burnbox bootstrap > burnbox.env` left after a second run: no key in the file.
    shown = _variables(_run(committed_runtime).stdout)["BURNBOX_API_KEY"]
    env_file = tmp_path / "burnbox.env"
    env_file.write_text(_run(committed_runtime).stdout)
    result = _run(committed_runtime, "--env-file", str(env_file))
    assert result.exit_code == 0, result.output
    assert "made api_key_rotated" in result.stderr
    assert "the secret it held before stops working" in result.stderr
    secret = _variables(env_file.read_text())["BURNBOX_API_KEY"]
    assert _works(committed_runtime, secret) and not _works(committed_runtime, shown)
    with committed_runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(ApiKey)) == 1


def test_without_an_env_file_a_second_run_says_where_the_key_is_kept(committed_runtime):
    _run(committed_runtime)
    again = _run(committed_runtime)
    assert "--env-file burnbox.env` keeps it" in again.stderr
