"""`burnbox bootstrap`: the admin, org, team, trusted local domain, its assignment and a team API
key a script or a CI job needs, in one idempotent step (`models.admin.bootstrap`). `serve` and
`release` run the same step on start when `bootstrap.enabled`, for containers configured only
through the environment."""

from __future__ import annotations

import click

from burnbox.cli.ready import SchemaCommand
from burnbox.cli.ready import load as load_settings
from burnbox.settings import Settings
from models.admin.bootstrap import BootstrapRequest, bootstrap_report, run_bootstrap
from models.db import Database
from models.platform.audit import CLI, Origin


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
def bootstrap(**options: str | None) -> None:
    """Make the admin, org, team, domain, assignment and team API key a script needs; running
    it again changes nothing. Prints shell variables on stdout, the next steps on stderr."""
    report_bootstrap(load_settings(**{f"bootstrap.{key}": value for key, value in (
        ("admin_email", options["email"]), ("admin_password", options["password"]),
        ("org", options["org_name"]), ("team", options["team_name"]),
        ("domain", options["domain_name"]), ("api_key", options["api_key"]))}), env=True)


def report_bootstrap(settings: Settings, env: bool = False) -> None:
    """Run the bootstrap the settings describe on a migrated database and report it: with
    `env`, the shell variables on stdout and the guide on stderr; else the guide alone."""
    database = Database(settings)
    try:
        # The command is the face: the transaction commits when the action returns.
        with database.transaction() as session:
            done = run_bootstrap(session, settings, BootstrapRequest.from_settings(settings),
                                 Origin(user_agent="burnbox bootstrap", channel=CLI))
            variables, guide = bootstrap_report(settings, done)
    finally:
        database.dispose()
    if env:
        click.echo("\n".join(f"{name}={value}" for name, value in variables.items()))
    click.echo(guide, err=True)
