"""UTC time helpers: every timestamp Burnbox stores or prints is timezone-aware UTC."""

from __future__ import annotations

import functools
import zoneinfo
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


@functools.cache
def _zone_names() -> frozenset[str]:
    """The installed zone names, read once: listing them walks the zone database on disk."""
    return frozenset(zoneinfo.available_timezones())


def time_zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA time zone `name` ("Europe/Paris"); ValueError for a name that is not one."""
    # Only names of the installed database: ZoneInfo would also open paths like "../x".
    if name not in _zone_names():
        raise ValueError(f"{name!r} is not an IANA time zone name")
    return zoneinfo.ZoneInfo(name)
