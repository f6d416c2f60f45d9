"""Go-style duration strings ("90m", "24h", "1h30m", "1.5s") to and from timedelta."""

from __future__ import annotations

import re
from datetime import timedelta

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


class DurationError(ValueError):
    """Raised when a string is not a Go-style duration."""


def parse_duration(text: str) -> timedelta:
    """Parse a Go-style duration such as "1h30m"; raise DurationError on anything else.

    Like Go's time.ParseDuration, a unit is required on every number (except a bare "0"),
    and negative durations are refused because nothing in Burnbox can use one.
    """
    if not isinstance(text, str):
        raise DurationError("a duration must be a string such as '90m' or '24h'")
    value = text.strip()
    if value == "0":
        return timedelta(0)
    if not value or value.startswith(("-", "+")):
        raise DurationError(f"invalid duration {text!r}: use a string such as '90m' or '1h30m'")
    position, seconds = 0, 0.0
    while position < len(value):
        match = _PART.match(value, position)
        if match is None:
            raise DurationError(f"invalid duration {text!r}: use a string such as '90m' or '1h30m'")
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """Format a timedelta the way Go prints durations, e.g. "1h30m0s", "10s", "0s"."""
    total = delta.total_seconds()
    if total == 0:
        return "0s"
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{seconds:g}s"
    if hours or minutes:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return text
