"""`burnbox set-password`: an account's password set from a shell on the server, for the
operator who lost the one `bootstrap` printed once (or any user's, with no mail configured)."""

from __future__ import annotations

import click

from burnbox.cli.ready import SchemaCommand
from burnbox.cli.ready import load as load_settings


@click.command("set-password", cls=SchemaCommand)
@click.argument("email")
@click.option("--password", help="the new password (default: one is made up and printed once)")
def set_password(email: str, password: str | None) -> None:
    """Set the password of the account with this e-mail address and sign out every session of
    it; prints the new password when it made one up."""
    from burnbox.kv import make_store
    from models.db import Database
    from models.identity.accounts import made_up_password
    from models.identity.accounts import set_password as set_account_password
    from models.platform.audit import CLI, Origin

    settings = load_settings()
    chosen = password or made_up_password()
    database = Database(settings)
    try:
        # The command is the face: the transaction commits when the action returns. A domain
        # error (unknown address, a password the policy refuses) is the group's one line.
        with database.transaction() as session:
            user = set_account_password(session, make_store(settings), settings, email=email,
                                        password=chosen,
                                        origin=Origin(user_agent="burnbox set-password",
                                                      channel=CLI))
    finally:
        database.dispose()
    shown = "" if password else f": {chosen} (shown once)"
    click.echo(f"password of {user.email} set{shown}; every session of theirs is signed out")
