"""Go-style duration strings ("90m", "24h", "1h30m", "1.5s") to and from timedelta."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

# Microseconds per unit. Decimal, not float: "2562047h47m16.854775s" must parse exactly.
_UNITS = {
    "ns": Decimal("0.001"),
    "us": Decimal(1),
    "µs": Decimal(1),
    "ms": Decimal(1_000),
    "s": Decimal(1_000_000),
    "m": Decimal(60_000_000),
    "h": Decimal(3_600_000_000),
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
    position, micros = 0, Decimal(0)
    while position < len(value):
        match = _PART.match(value, position)
        if match is None:
            raise DurationError(f"invalid duration {text!r}: use a string such as '90m' or '1h30m'")
        micros += Decimal(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    try:
        return timedelta(microseconds=int(micros.to_integral_value()))
    except OverflowError as exc:  # beyond timedelta's ~2.7 million years
        raise DurationError(f"invalid duration {text!r}: too long") from exc


def format_duration(delta: timedelta) -> str:
    """Format a timedelta the way Go prints durations, e.g. "1h30m0s", "10s", "1.5ms", "0s".

    The text is exact to the microsecond, so `parse_duration(format_duration(d)) == d`.
    """
    micros = delta // timedelta(microseconds=1)
    if micros < 0:
        return "-" + format_duration(-delta)
    if micros == 0:
        return "0s"
    # Like Go, durations under a second use the largest unit below the second.
    if micros < 1_000:
        return f"{micros}µs"
    if micros < 1_000_000:
        return f"{_decimal(micros, 1_000)}ms"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    text = f"{_decimal(rest, 1_000_000)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return text


def _decimal(value: int, unit: int) -> str:
    """`value / unit` written exactly, without trailing zeros (unit is a power of ten)."""
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    return f"{whole}.{fraction:0{len(str(unit)) - 1}d}".rstrip("0")
