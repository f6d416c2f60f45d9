"""`burnbox inboxes`: create, list, show, delete and follow a team's inboxes: over HTTP with
the API key in the environment, or on the database through the domain actions the API uses
(`models.mail.inboxes`), acting as a member of the org (`burnbox.cli.remote` says which)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from burnbox.cli.acting import acting_option, operating
from burnbox.cli.errors import fail
from burnbox.cli.follow import Following, follow, from_api
from burnbox.cli.output import echo_json, json_option, page_options, print_fields, print_page
from burnbox.cli.remote import only_domain, through_api

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from models.mail.inboxes import Inbox
    from models.tenancy.teams import Team

# The application is imported inside each verb's database path only: over HTTP, and for
# `burnbox inboxes --help`, a verb imports none of it.
TEAM_HELP = ("team id, org-slug/team-slug, or a team slug only one org uses (default: the only "
             "team, or with --as the member's only team); given, the verb acts on the database")
# The inbox list's states (STATUSES of `models.mail.inboxes`, which a test compares).
STATUSES = ("active", "expired", "all")

# Over the API's JSON for an inbox (InboxSchema).
COLUMNS = (("id", lambda inbox: inbox["id"]), ("address", lambda inbox: inbox["full_address"]),
           ("expires", lambda inbox: inbox["expires_at"]),
           ("emails", lambda inbox: inbox["email_count"]),
           ("unread", lambda inbox: inbox["unread_count"]))


@click.group("inboxes")
def group() -> None:
    """Disposable inboxes of a team. An inbox is named by its id or its address."""


@group.command("create")
@click.option("--team", "team_ref", default=None, metavar="TEAM", help=TEAM_HELP)
@click.option("--domain", default=None,
              help="a domain assigned to the team (needed when it has several)")
@click.option("--alias", default=None, help="the local part (random when omitted)")
@click.option("--ttl", default=None, help="lifetime such as 30m or 2h (default: the team's)")
@acting_option
@json_option
def create(team_ref: str | None, domain: str | None, alias: str | None, ttl: str | None,
           acting: str | None, as_json: bool) -> None:
    """Create an inbox in a team."""
    api = through_api(acting, team_ref)
    if api is not None:
        body = {"domain": domain or only_domain(api), "alias": alias, "ttl": ttl}
        _print(api.checked("POST", "/inboxes", body={k: v for k, v in body.items() if v}),
               as_json)
        return
    from models.mail import inboxes

    with operating("inboxes create", acting) as op:
        access = op.team(team_ref, inboxes.CREATE)
        if domain is None:
            domain = _only_domain(op.session, access.team)
        target = inboxes.resolve_create_target(op.session, op.grants, access.org.caller,
                                               domain=domain, only_team=access.team.id)
        inbox = inboxes.create_inbox(op.session, op.runtime.settings, target.assignment,
                                     org=access.org.org, created_by=access.org.caller.user_id,
                                     alias=alias, ttl=ttl)
    _print(_dumped(inbox), as_json)


def _only_domain(session: Session, team: Team) -> str:
    """The name of the one domain through which the team creates inboxes."""
    from models.domains.assignments import list_assignments
    from models.mail.inboxes import CREATING_LEVELS

    names = [assignment.domain.domain_name
             for assignment in list_assignments(session, team, 1, 100).data
             if assignment.access_level in CREATING_LEVELS]
    if len(names) != 1:
        fail("the team has no domain to create inboxes on" if not names else
             f"the team has several domains ({', '.join(names)}): choose one with --domain")
    return names[0]


def _known_status(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
    """The --status asked for (the live inboxes when none); a state the inbox list does not
    know ends the command naming the ones it does."""
    if value is None:
        return STATUSES[0]
    if value not in STATUSES:
        raise click.BadParameter(f"{value!r} is not one of {', '.join(STATUSES)}")
    return value


@group.command("list")
@click.option("--team", "team_ref", default=None, metavar="TEAM", help=TEAM_HELP)
@click.option("--status", default=None, callback=_known_status,
              help="which inboxes, by state (default: the live ones)")
@click.option("--search", "q", default=None, help="part of the address")
@page_options
@acting_option
@json_option
def list_(team_ref: str | None, status: str, q: str | None, page: int, per_page: int,
          acting: str | None, as_json: bool) -> None:
    """List a team's inboxes, newest first."""
    api = through_api(acting, team_ref)
    if api is not None:
        print_page(api.get("/inboxes", status=status, q=q, page=page, per_page=per_page),
                   COLUMNS, as_json, "inboxes")
        return
    from burnbox.cli.output import dump_page
    from models.mail import inboxes
    from web.views.inboxes import InboxSchema

    with operating("inboxes list", acting) as op:
        access = op.team(team_ref, inboxes.VIEW)
        found = inboxes.list_team_inboxes(op.session, access.team.id, status=status, q=q,
                                          page=page, per_page=per_page)
        print_page(dump_page(found, InboxSchema), COLUMNS, as_json, "inboxes")


@group.command("show")
@click.argument("inbox")
@acting_option
@json_option
def show(inbox: str, acting: str | None, as_json: bool) -> None:
    """Show an inbox."""
    api = through_api(acting)
    if api is not None:
        _print(api.inbox(inbox), as_json)
        return
    from models.mail.inboxes import VIEW

    with operating("inboxes show", acting) as op:
        access = op.inbox(inbox, VIEW)
        _print(_dumped(access.inbox), as_json)


@group.command("delete")
@click.argument("inbox")
@acting_option
def delete(inbox: str, acting: str | None) -> None:
    """Delete an inbox with its e-mails and attachments."""
    api = through_api(acting)
    if api is not None:
        found = api.inbox(inbox)
        api.checked("DELETE", f"/inboxes/{found['id']}")
        click.echo(f"inbox {found['full_address']} deleted")
        return
    from models.mail import inboxes

    with operating("inboxes delete", acting) as op:
        access = op.inbox(inbox, inboxes.MANAGE)
        address = access.inbox.full_address
        inboxes.delete_inbox(op.session, access)
    click.echo(f"inbox {address} deleted")


@group.command("follow")
@click.argument("inbox")
@click.option("--interval", type=click.FloatRange(min=0.1), default=1.0, show_default=True,
              help="seconds between database reads (on the database, embedded default only; "
                   "over HTTP and with Redis, mail comes live)")
@click.option("--count", type=click.IntRange(min=1), default=None,
              help="stop after this many e-mails")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="give up after this many seconds (exit code 1)")
@acting_option
@json_option
def follow_(inbox: str, interval: float, count: int | None, timeout: float | None,
            acting: str | None, as_json: bool) -> None:
    """Print each new e-mail of an inbox as it arrives, with its codes and links (one JSON
    object a line with --json)."""
    api = through_api(acting)
    if api is not None:
        found = api.inbox(inbox)
        following = Following(inbox_id=found["id"], address=found["full_address"],
                              interval=interval, count=count, timeout=timeout, as_json=as_json)
        follow(from_api(api, found, following), following)
        return
    from burnbox.cli.follow_db import from_database
    from models.db import end_read_only_transaction
    from models.mail.inboxes import EMAILS_VIEW

    with operating("inboxes follow", acting) as op:
        access = op.inbox(inbox, EMAILS_VIEW)
        following = Following(inbox_id=access.inbox.id, address=access.inbox.full_address,
                              interval=interval, count=count, timeout=timeout, as_json=as_json)
        # Following reads in short transactions of its own; this one must not stay open
        # meanwhile (on SQLite every transaction holds the write lock).
        end_read_only_transaction(op.session)
        follow(from_database(op.runtime, following), following)


def _dumped(inbox: Inbox) -> dict[str, Any]:
    """The inbox as the API's JSON."""
    from web.views.inboxes import InboxSchema

    return InboxSchema().dump(inbox)


def _print(inbox: dict[str, Any], as_json: bool) -> None:
    """An inbox (the API's JSON): as it is with `--json`, else labelled lines."""
    if as_json:
        echo_json(inbox)
        return
    print_fields([("address", inbox["full_address"]), ("id", inbox["id"]),
                  ("team", inbox["team_id"]), ("created", inbox["created_at"]),
                  ("expires", inbox["expires_at"]), ("active", inbox["is_active"]),
                  ("emails", inbox["email_count"]), ("unread", inbox["unread_count"])])
