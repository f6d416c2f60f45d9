"""How a command fails: one line on stderr and exit code 1, never a traceback, for what an
operator can fix (a refusal of the domain rules or of the API, an unreachable server, database
or Redis, a missing schema, a library at a version Burnbox's patches were not proved on).
Anything else is a bug and keeps its traceback.

A person reads the line as a sentence, `Error: ...`; a command run with `--json` (a script)
gets the same failure as the API's error envelope instead, one JSON object on stderr
(`{"error": "...", "code": "..."}`, with `details` when there are some), so stdout holds only
results. Usage mistakes stay click's (exit code 2) either way.

`CommandGroup` is the class of the `burnbox` group: every command, nested groups included, runs
inside its `invoke`, so the translation is in one place.
"""

from __future__ import annotations

import json
import re
from typing import IO, TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from burnbox.settings import Settings

SETTINGS_KEY = "burnbox.settings"
JSON_KEY = "burnbox.json"
# The code of a failure that is not a refusal of the API (which brings its own code).
FAILED = "failed"


class Failure(click.ClickException):
    """A failure an operator can fix: its sentence, a stable code and the field details (as
    the API's envelope has them); shown as JSON when the command was run with `--json`."""

    def __init__(self, message: str, code: str = FAILED, details: Any = None,
                 as_json: bool = False) -> None:
        super().__init__(message)
        self.code, self.details, self.as_json = code, details, as_json

    def show(self, file: IO[Any] | None = None) -> None:
        """The sentence on stderr, or with `--json` the envelope as one JSON object."""
        if not self.as_json:
            super().show(file)
            return
        envelope = {"error": self.message, "code": self.code}
        if self.details:
            envelope["details"] = self.details
        click.echo(json.dumps(envelope, ensure_ascii=False), err=file is None, file=file)


def wants_json(value: bool) -> None:
    """Remember that the running command was asked for JSON (its `--json` flag), so that a
    failure is shown as JSON too."""
    context = click.get_current_context(silent=True)
    if context is not None and value:
        context.find_root().meta[JSON_KEY] = True


def masked(url: str) -> str:
    """`url` with its password replaced by `***` (database and Redis URLs alike)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        scheme, _, rest = url.partition("://")
        return f"{scheme}://***@{rest.rpartition('@')[2]}" if "@" in rest else url


def reason(exc: BaseException) -> str:
    """The useful end of a connection error's message, on one line: `connection refused` out of
    psycopg's 'connection failed: connection to server at "h", port 5432 failed: Connection
    refused\n\tIs the server running...'."""
    cause = getattr(exc, "orig", None) or exc
    if isinstance(cause, OSError) and cause.strerror:
        text = cause.strerror + (f": {cause.filename}" if cause.filename else "")
    else:
        first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        text = first.rpartition("failed: ")[2].strip() or first
        # psycopg's "FATAL:  ..." and redis-py's "Error 111 connecting to h:p. Connection
        # refused." keep only the reason.
        text = re.sub(r"^(FATAL|ERROR):\s+|^Error \d+ connecting to \S+\.\s+", "", text)
        text = text.rstrip(".")
    return text[:1].lower() + text[1:]


def fail(message: str, code: str = FAILED, details: Any = None) -> NoReturn:
    """End the command with `message` on stderr and exit code 1 (`code` and `details` are
    shown with `--json`)."""
    raise Failure(message, code, details)


def detailed(message: str, details: Any) -> str:
    """`message` with the field details of a refusal, as one sentence: `invalid alias (alias:
    2-64 characters ...)`."""
    if not isinstance(details, dict) or not details:
        return message
    parts = "; ".join(f"{field}: {', '.join(map(str, problems))}"
                      if isinstance(problems, list) else f"{field}: {problems}"
                      for field, problems in details.items())
    return f"{message} ({parts})"


def remember(settings: Settings) -> Settings:
    """Keep the command's settings for the error messages (they name the URLs)."""
    context = click.get_current_context(silent=True)
    if context is not None:
        context.find_root().meta[SETTINGS_KEY] = settings
    return settings


def unreachable_database(settings: Settings, exc: BaseException) -> str:
    """The one line for a database that cannot be reached."""
    return f"cannot reach the database at {masked(settings.database_url)}: {reason(exc)}"


def unreachable_redis(settings: Settings, exc: BaseException) -> str:
    """The one line for a Redis that cannot be reached."""
    return f"cannot reach Redis at {masked(settings.redis.url)}: {reason(exc)}"


class CommandGroup(click.Group):
    """A click group whose commands fail with one line (see the module docstring)."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn a domain refusal or an outage into a one-line error."""
        try:
            try:
                return super().invoke(ctx)
            except (click.ClickException, click.exceptions.Exit, click.Abort):
                raise
            except Exception as exc:
                self._fail_with_one_line(ctx, exc)
                raise
        except click.UsageError:
            raise
        except click.ClickException as exc:
            if not ctx.meta.get(JSON_KEY):
                raise
            code, details = (exc.code, exc.details) if isinstance(exc, Failure) else (FAILED,
                                                                                     None)
            raise Failure(exc.message, code, details, as_json=True) from exc

    @staticmethod
    def _fail_with_one_line(ctx: click.Context, exc: Exception) -> None:
        """End the command with one line for a domain refusal or an outage; return for
        anything else (a bug: its traceback is kept). The application is imported only here,
        when something failed, so `burnbox --help` and a verb's help stay quick."""
        from burnbox.outages import DATABASE, KEY_VALUE_STORE, unavailable_dependency
        from burnbox.patches import UnprovedLibrary
        from models.errors import DomainError

        if isinstance(exc, DomainError):
            fail(detailed(exc.message, exc.details), exc.code, exc.details)
        if isinstance(exc, UnprovedLibrary):
            fail(str(exc))
        settings = ctx.meta.get(SETTINGS_KEY)
        dependency = unavailable_dependency(exc)
        if settings is None or dependency is None:
            return
        if dependency == DATABASE:
            fail(unreachable_database(settings, exc))
        if dependency == KEY_VALUE_STORE:
            fail(unreachable_redis(settings, exc))
