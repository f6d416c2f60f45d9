"""Logging: one JSON object per line for machines, one short sentence per line for a person.

`log.format = "auto"` (the default) chooses by where stderr goes: a terminal gets text, anything
else (a container's log, a platform, a file, a pipe) JSON. `json` and `text` force one.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime

from burnbox.settings import Settings

# The id of the HTTP request, actor message or SMTP session being handled by this thread/greenlet.
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Format records as single-line JSON with time, level, logger, message, request_id, extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = request_id.get()
        if rid:
            entry["request_id"] = rid
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    """Short lines for a person at a terminal: the time, the level when it is not INFO, and the
    message (the traceback below it, if any). The structured fields stay in the JSON form."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(message)s", datefmt="%H:%M:%S")

    def formatMessage(self, record: logging.LogRecord) -> str:
        """The line without its traceback, the level named when it is not INFO."""
        line = super().formatMessage(record)
        if record.levelno == logging.INFO:
            return line
        time, _, message = line.partition(" ")
        return f"{time} {record.levelname} {message}"


def line_format(settings: Settings) -> str:
    """"json" or "text": what `log.format` asks for, "auto" deciding by whether stderr is a
    terminal."""
    if settings.log.format != "auto":
        return settings.log.format
    return "text" if sys.stderr.isatty() else "json"


def configure_logging(settings: Settings) -> None:
    """Send every logger's records to stderr in the configured format and level (idempotent)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if line_format(settings) == "json" else TextFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, "_burnbox", False):
            root.removeHandler(existing)
    handler._burnbox = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(settings.log.level)
    # Libraries that log every connection at INFO; our own access log already covers HTTP.
    # Alembic's plugin registry says "setup plugin ..." at INFO on import, seven lines that
    # commands importing it after this point (lazily, see burnbox/cli) printed before their own.
    for chatty in ("werkzeug", "mail.log", "alembic.runtime.plugins"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, root.level))
    # Dramatiq's worker pools say "Shutting down..." and "Worker has been shut down." at INFO,
    # each pool (the general queues' and the deliveries') once: on a person's terminal Ctrl+C
    # printed its shutdown twice. A machine's JSON log keeps them, one per pool.
    logging.getLogger("dramatiq.worker").setLevel(
        max(logging.WARNING, root.level) if line_format(settings) == "text" else logging.NOTSET)
    aiosmtpd_log = logging.getLogger("mail.log")
    if not any(isinstance(existing, _AiosmtpdOwnDeprecation) for existing in aiosmtpd_log.filters):
        aiosmtpd_log.addFilter(_AiosmtpdOwnDeprecation())


def access_log_level(settings: Settings) -> int:
    """The level of the one line each HTTP request writes: INFO where `log.access` is on (by
    default wherever lines are JSON, for a platform's log), DEBUG where it is off (by default on
    a person's terminal, where a line per request buried everything else)."""
    if settings.log.access == "auto":
        on = line_format(settings) == "json"
    else:
        on = settings.log.access == "on"
    return logging.INFO if on else logging.DEBUG


class _AiosmtpdOwnDeprecation(logging.Filter):
    """Drops the warning aiosmtpd logs about its own `Session.login_data` at every successful
    SMTP AUTH: aiosmtpd itself sets that deprecated attribute (we read `auth_data`), so the line
    said nothing an operator could act on, once per login."""

    def filter(self, record: logging.LogRecord) -> bool:
        """False for that one message, True for every other record."""
        return not str(record.msg).startswith("Session.login_data is deprecated")
