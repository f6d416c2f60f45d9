"""`burnbox bootstrap`: the admin, org, team, trusted local domain, its assignment and a team API
key a script or a CI job needs, in one idempotent step (`models.admin.bootstrap`). `serve` and
`release` run the same step on start when `bootstrap.enabled`, for containers configured only
through the environment.

The key's secret is shown once; `--env-file FILE` keeps it across runs instead: the command
writes the shell variables into FILE itself (mode 0600) and, run again, keeps the key FILE
holds while it still works, or gives the key a new secret and writes that (a FILE written by an
earlier `> FILE` without the key, a key rotated since). So the README's steps can be run twice
and `. ./burnbox.env` still gives a working key.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from burnbox.cli.ready import SchemaCommand
from burnbox.cli.ready import load as load_settings

if TYPE_CHECKING:
    from burnbox.settings import Settings

KEY_VARIABLE = "BURNBOX_API_KEY"


@click.command(cls=SchemaCommand)
@click.option("--email", help="the administrator's e-mail (bootstrap.admin_email)")
@click.option("--password", help="their password when made (bootstrap.admin_password; "
              "default: made up and printed once)")
@click.option("--org", "org_name", help="the org's name (bootstrap.org)")
@click.option("--team", "team_name", help="the team's name (bootstrap.team)")
@click.option("--domain", "domain_name",
              help="the team's domain (bootstrap.domain; default: the first trusted name)")
@click.option("--api-key", help="fix the team's API key to this bb_ + 64 hex secret "
              "(bootstrap.api_key; default: one is made and printed once)")
@click.option("--env-file", type=click.Path(dir_okay=False), default=None,
              help="write the shell variables, the key included, into this file (mode 0600) "
                   "instead of stdout, and keep its key on later runs")
def bootstrap(env_file: str | None, **options: str | None) -> None:
    """Make the admin, org, team, domain, assignment and team API key a script needs; running
    it again changes nothing. Prints shell variables on stdout (or writes them with
    --env-file), the next steps on stderr."""
    report_bootstrap(load_settings(**{f"bootstrap.{key}": value for key, value in (
        ("admin_email", options["email"]), ("admin_password", options["password"]),
        ("org", options["org_name"]), ("team", options["team_name"]),
        ("domain", options["domain_name"]), ("api_key", options["api_key"]))}), env=True,
        env_file=env_file)


def report_bootstrap(settings: Settings, env: bool = False, env_file: str | None = None) -> None:
    """Run the bootstrap the settings describe on a migrated database and report it: with
    `env`, the shell variables on stdout (into `env_file` instead, when given) and the guide
    on stderr; else the guide alone."""
    from models.admin.bootstrap import BootstrapRequest, bootstrap_report, run_bootstrap
    from models.db import Database
    from models.platform.audit import CLI, Origin

    request = BootstrapRequest.from_settings(settings)
    if env_file is not None:
        request = dataclasses.replace(request, held_key=_read_env(env_file).get(KEY_VARIABLE, ""))
    database = Database(settings)
    try:
        # The command is the face: the transaction commits when the action returns.
        with database.transaction() as session:
            done = run_bootstrap(session, settings, request,
                                 Origin(user_agent="burnbox bootstrap", channel=CLI))
            variables, guide = bootstrap_report(settings, done, env_file)
    finally:
        database.dispose()
    lines = "".join(f"{name}={value}\n" for name, value in variables.items())
    if env_file is not None:
        _write_private(env_file, lines)
    elif env:
        click.echo(lines, nl=False)
        if KEY_VARIABLE not in variables:
            guide += (f"\n{KEY_VARIABLE} is not among the variables: its secret was shown when "
                      "the key was made. `burnbox bootstrap --env-file burnbox.env` keeps it "
                      "in a file across runs.")
    click.echo(guide, err=True)


def _read_env(path: str) -> dict[str, str]:
    """The NAME=VALUE lines of an env file (empty when there is no file)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    pairs = (line.strip().removeprefix("export ").partition("=")
             for line in text.splitlines() if "=" in line and not line.lstrip().startswith("#"))
    return {name.strip(): value.strip().strip("'\"") for name, _, value in pairs}


def _write_private(path: str, text: str) -> None:
    """Replace the file at `path` with `text`, readable and writable by its owner only (it
    holds an API key); a reader never sees it half written."""
    temporary = f"{path}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    os.chmod(temporary, 0o600)  # an older temporary file kept its own mode through O_CREAT
    os.replace(temporary, path)
