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

from burnbox.timeutil import time_zone

MIN_DAYS = 1
MAX_DAYS = 365
DEFAULT_DAYS = 30


def zone(name: str | None) -> zoneinfo.ZoneInfo:
    """The IANA zone `name` (UTC when None); ValueError for a name that is not one."""
    return zoneinfo.ZoneInfo("UTC") if name is None else time_zone(name)


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

    @functools.cached_property
    def dates(self) -> tuple[date, ...]:
        """Every local date of the window, oldest first (for zero-filled series; made once:
        the domain series fills one per domain)."""
        return tuple(self.first + timedelta(days=n)
                     for n in range((self.last - self.first).days + 1))

    @property
    def bounds(self) -> tuple[datetime, datetime]:
        """The first UTC hour of the window and the first one after it. Both are rounded up to
        a whole hour, so that an hour belongs to the local day of its first instant in every
        zone (see the module's note)."""
        return (_hour_ceiling(datetime.combine(self.first, time(), self.tz)),
                _hour_ceiling(datetime.combine(self.last + timedelta(days=1), time(), self.tz)))

    def local_hours(self, day: date) -> tuple[tuple[date, int], ...]:
        """The local (date, hour) of each of the 24 UTC hours of `day`, hour 0 first."""
        return _local_hours(self.tz, day)

    def runs(self, day: date, by: str) -> tuple[tuple[date | int, int, int], ...]:
        """The 24 UTC hours of `day` cut into runs of consecutive hours that share their local
        date (`by="date"`: at most three runs) or their local hour (`by="hour"`): (the date or
        hour, first UTC hour, UTC hour after the last)."""
        return _runs(self.tz, day, by)

    def date_runs(self, day: date) -> tuple[date, tuple[tuple[date, int, int], ...]]:
        """The local date that most of the UTC `day`'s hours fall in (its longest run of
        `runs(day, "date")`; of two equal ones the later, so that a zone at +12 hours
        in winter and +13 in summer needs the same early hours all year), and the day's other
        runs."""
        return _date_runs(self.tz, day)

    def edges(self, first: date, last: date) -> tuple[int, int]:
        """The UTC hours `[start, end)` of the day that hold every hour outside its longest
        run (`date_runs`) on each UTC day from `first` to `last`; (0, 0) when there is none,
        as in UTC. A reader of a day's total needs only those hours to split it by date."""
        start, end = 24, 0
        for n in range((last - first).days + 1):
            for _, begin, after in _date_runs(self.tz, first + timedelta(days=n))[1]:
                start, end = min(start, begin), max(end, after)
        return (start, end) if start < end else (0, 0)


@functools.lru_cache(maxsize=1024)
def _date_runs(tz: zoneinfo.ZoneInfo, day: date
               ) -> tuple[date, tuple[tuple[date, int, int], ...]]:
    runs = _runs(tz, day, "date")
    main = max(runs, key=lambda run: (run[2] - run[1], run[1]))
    return main[0], tuple(run for run in runs if run is not main)  # type: ignore[misc]


def _local_hours(tz: zoneinfo.ZoneInfo, day: date) -> tuple[tuple[date, int], ...]:
    """The local (date, hour) of the first instant of each UTC hour of `day`. Two conversions
    and integer arithmetic on a day whose offset does not change (all but two a year in zones
    with summer time), one conversion per hour on the others."""
    first = datetime.combine(day, time(0), UTC).astimezone(tz)
    offset = first.utcoffset()
    if datetime.combine(day, time(23), UTC).astimezone(tz).utcoffset() != offset:
        moments = (datetime.combine(day, time(hour), UTC).astimezone(tz) for hour in range(24))
        return tuple((moment.date(), moment.hour) for moment in moments)
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    dates = {shift: day + timedelta(days=shift) for shift in (-1, 0, 1)}
    return tuple((dates[(hour * 60 + minutes) // 1440], (hour * 60 + minutes) % 1440 // 60)
                 for hour in range(24))


# Small: a year of runs is about a thousand tuples per zone for dates (a few per day), and a
# cache of per-hour tuples for every day would make each full garbage collection of a web
# process walk hundreds of thousands of them (measured: 100 ms pauses).
@functools.lru_cache(maxsize=2048)
def _runs(tz: zoneinfo.ZoneInfo, day: date, by: str) -> tuple[tuple[date | int, int, int], ...]:
    runs: list[tuple[date | int, int, int]] = []
    for hour, (local_date, local_hour) in enumerate(_local_hours(tz, day)):
        slot = local_date if by == "date" else local_hour
        if runs and runs[-1][0] == slot:
            runs[-1] = (slot, runs[-1][1], hour + 1)
        else:
            runs.append((slot, hour, hour + 1))
    return tuple(runs)


def _hour_ceiling(moment: datetime) -> datetime:
    """`moment` in UTC, rounded up to a whole hour."""
    utc = moment.astimezone(UTC)
    floor = utc.replace(minute=0, second=0, microsecond=0)
    return floor if floor == utc else floor + timedelta(hours=1)
