"""`burnbox analytics backfill`: rebuild the analytics rollups from the counters
(`models.analytics.rollups`), for one org or all of them, from a day on or from the start.

The rollup job of the clock keeps the rollups current by itself; the backfill is for an operator
who wants them at once (after an upgrade that added them, or a restore of the counters) or
suspects them: every closed day it touches is recomputed and replaced, so running it twice, or
while the job runs, changes nothing.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import TYPE_CHECKING

import click

from burnbox.cli.errors import fail
from burnbox.cli.ready import SchemaCommand, load

if TYPE_CHECKING:
    from models.db import Database


@click.group("analytics")
def group() -> None:
    """Analytics rollups."""


def _org_id(database: Database, ref: str) -> uuid.UUID:
    """The id of the org `ref` names (its id or its slug); ends the command when none does."""
    from sqlalchemy import select

    from models.tenancy.orgs import Org

    with database.session() as session:
        try:
            criterion = Org.id == uuid.UUID(ref)
        except ValueError:
            criterion = Org.slug == ref
        found = session.scalar(select(Org.id).where(criterion))
    if found is None:
        fail(f"no org {ref!r}")
    return found


@group.command("backfill", cls=SchemaCommand)
@click.option("--org", "org_ref", metavar="ID|SLUG", help="only this org (default: every org)")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]), metavar="YYYY-MM-DD",
              help="recompute the UTC days from this one on (default: the days not rolled up "
              "yet; an org with none rolled up starts at its first counted day)")
def backfill(org_ref: str | None, since: datetime | None) -> None:
    """Rebuild the analytics rollups of the closed UTC days from the counters."""
    from burnbox.timeutil import utcnow
    from models.analytics.rollups import last_closed_day
    from models.db import Database
    from tasks.analytics import roll_up_committing  # the actors' package: only when run

    database = Database(load())
    try:
        org_id = _org_id(database, org_ref) if org_ref is not None else None
        now = utcnow()
        since_day: date | None = since.date() if since is not None else None
        with database.session() as session:
            done = roll_up_committing(session, now, org_id, since_day)
    finally:
        database.dispose()
    days = sum(done.values())
    click.echo(f"rolled up {days} day(s) of {len(done)} org(s), through "
               f"{last_closed_day(now).isoformat()} (UTC)")
