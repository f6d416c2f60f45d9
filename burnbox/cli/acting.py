"""Who an operator's command acts as, and where, when it acts on the database (a data verb
with an API key exported goes over HTTP instead, acting as the key: `burnbox.cli.remote`).

A verb acts in one org, named through a team (`--team <id | org-slug/team-slug | team-slug>`)
or through the inbox or e-mail it is about. It acts as a member of that org: the one named with
`--as <e-mail>`, else the org's longest-standing owner. The domain actions then apply the same
permission checks as the API does for that member (an owner reaches every team of the org), and
audited changes record that member as the actor, with the channel `cli` and the user agent
`burnbox <verb>`, so the trail tells them apart from the member's own requests.

Each verb is one unit of work (`operating`): the database is reached and its schema checked (or
migrated, see `burnbox.cli.ready`), the block runs in one transaction that commits when it ends.
With Redis configured, the events it records go to the worker at commit, as from the API; on
the embedded default the `burnbox serve` process picks them up with its outbox sweep
(`clock.outbox_grace`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from burnbox.cli.operator import Operator

F = TypeVar("F", bound=Callable[..., Any])


def acting_option(command: F) -> F:
    """The `--as` option of every verb that acts in an org."""
    return click.option("--as", "acting", metavar="EMAIL", default=None,
                        help="act as this member of the org, on the database (default: the key in "
                             "BURNBOX_API_KEY over HTTP, else the org's owner)")(command)


@contextmanager
def operating(verb: str, acting: str | None) -> Iterator[Operator]:
    """One verb's unit of work, acting as `acting` (None: the org's owner); it commits when
    the block ends."""
    from burnbox.cli.operator import Operator, open_runtime

    runtime = open_runtime()
    try:
        with runtime.db.transaction() as session:
            yield Operator(runtime=runtime, session=session, verb=verb, acting=acting)
    finally:
        runtime.db.dispose()
