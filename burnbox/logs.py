"""Structured logging: one JSON object per line, carrying the request or message id in context."""

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
    """Human-readable lines for a terminal, with the request id when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        rid = request_id.get()
        return f"{line} [{rid}]" if rid else line


def configure_logging(settings: Settings) -> None:
    """Send every logger's records to stderr in the configured format and level (idempotent)."""
    handler = logging.StreamHandler(sys.stderr)
    if settings.log.format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, "_burnbox", False):
            root.removeHandler(existing)
    handler._burnbox = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(settings.log.level)
    # Libraries that log every connection at INFO; our own access log already covers HTTP.
    for chatty in ("werkzeug", "mail.log"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, root.level))
