"""`burnbox keys`: create, list and revoke a team's API keys, through the domain actions the
API uses (`models.apikeys.keys`), acting as a member of the org (`burnbox.cli.acting`). The key
belongs to that member (it acts with their roles, narrowed to its scopes); each change is
audited with the channel `cli`."""

from __future__ import annotations

import uuid
from typing import Any

import click

from burnbox.cli.acting import acting_option, operating
from burnbox.cli.output import (
    dump_page,
    echo_json,
    json_option,
    page_options,
    print_fields,
    print_page,
)

VIEW = "team.apikeys.view"
MANAGE = "team.apikeys.manage"
TEAM_HELP = ("team id, org-slug/team-slug, or a team slug only one org uses (default: the only "
             "team, or with --as the member's only team)")


def _state(key: dict[str, Any]) -> str:
    if key["revoked_at"] is not None:
        return "revoked"
    return "active" if key["is_active"] else "disabled"


# Over the API's JSON for a key (ApiKeySchema).
COLUMNS = (("id", lambda key: key["id"]), ("name", lambda key: key["name"]),
           ("prefix", lambda key: key["prefix"]), ("state", _state),
           ("expires", lambda key: key["expires_at"]),
           ("last used", lambda key: key["last_used_at"]), ("scopes", lambda key: key["scopes"]))


@click.group("keys")
def group() -> None:
    """API keys of a team."""


@group.command("create")
@click.option("--team", "team_ref", default=None, metavar="TEAM", help=TEAM_HELP)
@click.option("--name", required=True, help="what the key is for")
@click.option("--scope", "scopes", multiple=True, required=True, metavar="PERMISSION",
              help="a team permission the key may use, e.g. team.inboxes.create (repeat it)")
@click.option("--expires-in", default=None, help="lifetime such as 720h (default: never)")
@click.option("--allowed-ip", "allowed_ips", multiple=True, metavar="ADDRESS|CIDR",
              help="only from this address or range (repeat it; default: anywhere)")
@acting_option
@json_option
def create(team_ref: str | None, name: str, scopes: tuple[str, ...], expires_in: str | None,
           allowed_ips: tuple[str, ...], acting: str | None, as_json: bool) -> None:
    """Create an API key; its secret is printed this once."""
    from models.apikeys import keys as apikeys
    from web.views.apikeys import IssuedKeySchema

    with operating("keys create", acting) as op:
        access = op.team(team_ref, MANAGE)
        issued = apikeys.create_key(op.session, access, name=name, scopes=list(scopes),
                                    expires_in=expires_in, allowed_ips=list(allowed_ips))
        dumped = IssuedKeySchema().dump(issued) if as_json else None
    # Printed once the key is committed: a secret shown for a key that failed to commit would
    # be useless.
    if dumped is not None:
        echo_json(dumped)
        return
    click.echo(issued.raw_key)
    click.echo(f"API key {issued.key.name!r} ({issued.key.id}) created; the key above is shown "
               "this once", err=True)


@group.command("list")
@click.option("--team", "team_ref", default=None, metavar="TEAM", help=TEAM_HELP)
@page_options
@acting_option
@json_option
def list_(team_ref: str | None, page: int, per_page: int, acting: str | None,
          as_json: bool) -> None:
    """List a team's API keys (revoked ones included), newest first."""
    from models.apikeys import keys as apikeys
    from web.views.apikeys import ApiKeySchema

    with operating("keys list", acting) as op:
        access = op.team(team_ref, VIEW)
        found = apikeys.list_keys(op.session, access.team.id, page, per_page)
        print_page(dump_page(found, ApiKeySchema), COLUMNS, as_json, "API keys")


@group.command("show")
@click.option("--team", "team_ref", default=None, metavar="TEAM", help=TEAM_HELP)
@click.argument("key_id", type=click.UUID)
@acting_option
@json_option
def show(team_ref: str | None, key_id: uuid.UUID, acting: str | None, as_json: bool) -> None:
    """Show an API key with its usage (never its secret)."""
    from models.apikeys import keys as apikeys
    from web.views.apikeys import ApiKeySchema

    with operating("keys show", acting) as op:
        key = ApiKeySchema().dump(apikeys.get_key(op.session, op.team(team_ref, VIEW).team.id,
                                                  key_id))
        if as_json:
            echo_json(key)
            return
        print_fields([(header, get(key)) for header, get in COLUMNS]
                     + [("allowed ips", key["allowed_ips"]), ("requests", key["request_count"]),
                        ("created", key["created_at"]), ("revoked", key["revoked_at"])])


@group.command("revoke")
@click.option("--team", "team_ref", default=None, metavar="TEAM", help=TEAM_HELP)
@click.argument("key_id", type=click.UUID)
@acting_option
def revoke(team_ref: str | None, key_id: uuid.UUID, acting: str | None) -> None:
    """Revoke an API key for good (its row stays, for the audit trail)."""
    from models.apikeys import keys as apikeys

    with operating("keys revoke", acting) as op:
        apikeys.revoke_key(op.session, op.team(team_ref, MANAGE), key_id)
    click.echo(f"API key {key_id} revoked")
