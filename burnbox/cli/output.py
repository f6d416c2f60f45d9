"""What the verbs print: aligned columns for people, or with `--json` exactly the JSON the API
answers for the same thing, for scripts. Either way the verbs print the API's JSON shapes: over
HTTP they are the answer itself, on the database the same marshmallow schemas dump them, so one
printer serves both (`burnbox.cli.remote` says which way a verb goes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from burnbox.cli.errors import wants_json

if TYPE_CHECKING:
    from marshmallow import Schema

    from models.pagination import Page

F = TypeVar("F", bound=Callable[..., Any])
MAX_PER_PAGE = 100
Column = tuple[str, Callable[[Any], object]]


def json_option(command: F) -> F:
    """The `--json` flag of the list and show verbs."""
    return click.option("--json", "as_json", is_flag=True, callback=_remember_json,
                        help="print the JSON the API answers, and failures as JSON (for "
                             "scripts)")(command)


def _remember_json(_ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    wants_json(value)
    return value


def page_options(command: F) -> F:
    """`--page` and `--per-page`, as the API's lists take them."""
    command = click.option("--per-page", type=click.IntRange(min=1), default=20,
                           show_default=True, callback=_within_page_limit,
                           help="at most the API's page limit")(command)
    return click.option("--page", type=click.IntRange(min=1), default=1,
                        show_default=True)(command)


def _within_page_limit(_ctx: click.Context, _param: click.Parameter, value: int) -> int:
    """Refuse a page size above the API's (MAX_PER_PAGE of `models.pagination`, which a test
    compares with this one: the verbs that go over HTTP must not import the application)."""
    if value > MAX_PER_PAGE:
        raise click.BadParameter(f"{value} is above the page limit, {MAX_PER_PAGE}")
    return value


def text(value: object) -> str:
    """A value as a cell or a field shows it: timestamps in ISO 8601 UTC, None as '-'."""
    if value is None:
        return "-"
    if hasattr(value, "isoformat"):  # a value read on the database (the API's are strings)
        from burnbox.timeutil import isoformat

        return isoformat(value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "-"
    return str(value)


def echo_json(dumped: Any) -> None:
    """Dumped values as indented JSON (dump inside the command's transaction, print after its
    commit, when what is printed must exist: a new key's secret)."""
    click.echo(json.dumps(dumped, indent=2, ensure_ascii=False))


def print_table(rows: Sequence[Any], columns: Sequence[Column]) -> None:
    """`rows` as left-aligned columns under their headers."""
    cells = [[header.upper() for header, _ in columns]]
    cells += [[text(get(row)) for _, get in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    for line in cells:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True))
                   .rstrip())


def dump_page(page: Page[Any], schema: type[Schema]) -> dict[str, Any]:
    """A page of the database as the API's envelope dumps it."""
    from web.pagination import page_schema

    return page_schema(schema)().dump(page)


def print_page(page: dict[str, Any], columns: Sequence[Column], as_json: bool,
               noun: str) -> None:
    """One page of a list, the API's envelope (`{data, total, page, per_page,
    total_pages}`): as it is with `--json`, else a table and where it sits in the list."""
    if as_json:
        echo_json(page)
        return
    if not page["data"]:
        click.echo(f"no {noun}" if page["total"] == 0 else f"page {page['page']} is past the "
                   f"end ({page['total']} {noun}, {page['total_pages']} pages)")
        return
    print_table(page["data"], columns)
    if page["total_pages"] > 1:
        click.echo(f"page {page['page']} of {page['total_pages']} ({page['total']} {noun}); "
                   "--page N for more", err=True)


def print_fields(fields: Sequence[tuple[str, object]]) -> None:
    """Labelled values, one a line."""
    width = max(len(label) for label, _ in fields)
    for label, value in fields:
        click.echo(f"{label + ':':<{width + 1}} {text(value)}")
