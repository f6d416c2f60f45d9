"""The days an analytics question covers, in a time zone, and how the counters' UTC hours fall
into them.

The counters are kept per UTC hour. A UTC hour belongs to the local day (and local hour) of its
first instant: exact for every zone whose offset is a whole number of hours, and off by the
fraction for the few that are not (e.g. Asia/Kolkata, +05:30: the UTC hour 18:00-19:00 is
23:30-00:30 local and counts on the earlier day).
"""

from __future__ import annotations

import functools
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

MIN_DAYS = 1
MAX_DAYS = 365
DEFAULT_DAYS = 30


@functools.cache
def _zone_names() -> frozenset[str]:
    """The installed zone names, read once: listing them walks the zone database on disk."""
    return frozenset(zoneinfo.available_timezones())


def zone(name: str | None) -> zoneinfo.ZoneInfo:
    """The IANA zone `name` (UTC when None); ValueError for a name that is not one."""
    if name is None:
        return zoneinfo.ZoneInfo("UTC")
    # Only names of the installed database: ZoneInfo would also open paths like "../x".
    if name not in _zone_names():
        raise ValueError(f"{name!r} is not an IANA time zone name")
    return zoneinfo.ZoneInfo(name)


@dataclass(frozen=True)
class Window:
    """The `days` local days ending with today (in `tz`), oldest first."""

    first: date
    last: date
    tz: zoneinfo.ZoneInfo

    @classmethod
    def ending(cls, now: datetime, days: int, tz: zoneinfo.ZoneInfo) -> Window:
        """The window of `days` (1-365) local days ending on the local date of `now`."""
        if not MIN_DAYS <= days <= MAX_DAYS:
            raise ValueError(f"days must be {MIN_DAYS}-{MAX_DAYS}")
        last = now.astimezone(tz).date()
        return cls(first=last - timedelta(days=days - 1), last=last, tz=tz)

    @property
    def dates(self) -> list[date]:
        """Every local date of the window, oldest first (for zero-filled series)."""
        return [self.first + timedelta(days=n) for n in range((self.last - self.first).days + 1)]

    @property
    def bounds(self) -> tuple[datetime, datetime]:
        """The first UTC hour of the window and the first one after it. Both are rounded up to
        a whole hour, so that an hour belongs to the local day of its first instant in every
        zone (see the module's note)."""
        return (_hour_ceiling(datetime.combine(self.first, time(), self.tz)),
                _hour_ceiling(datetime.combine(self.last + timedelta(days=1), time(), self.tz)))

    def local(self, day: date, hour: int) -> datetime:
        """The local time of UTC hour `hour` of `day`."""
        return datetime.combine(day, time(hour), UTC).astimezone(self.tz)


def _hour_ceiling(moment: datetime) -> datetime:
    """`moment` in UTC, rounded up to a whole hour."""
    utc = moment.astimezone(UTC)
    floor = utc.replace(minute=0, second=0, microsecond=0)
    return floor if floor == utc else floor + timedelta(hours=1)
