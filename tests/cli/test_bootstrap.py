"""`burnbox bootstrap`: shell variables on stdout (the key only when this run made it up), the
next steps on stderr; options override the `bootstrap.*` settings."""

from click.testing import CliRunner
from sqlalchemy import select

from burnbox.cli import main
from models.apikeys.keys import ApiKey
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
