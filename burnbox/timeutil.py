"""UTC time helpers: every timestamp Burnbox stores or prints is timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def isoformat(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with a trailing Z ("2026-11-21T10:00:00.123456Z"), or None."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
