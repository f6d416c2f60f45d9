"""Go-style duration strings ("90m", "24h", "1h30m", "1.5s") to and from timedelta."""

from __future__ import annotations

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
# The longest duration text accepted anywhere (requests, settings, configuration). Go's longest
# duration, "2562047h47m16.854775807s", has 24 characters. The cap is checked before any work:
# an uncapped 900 kB value once took 29 s of CPU (a number of that many digits costs quadratic
# time to convert), long enough for gunicorn to kill the worker and drop every socket.
MAX_DURATION_LENGTH = 64
_DIGITS = frozenset("0123456789")


class DurationError(ValueError):
    """Raised when a string is not a Go-style duration."""


def parse_duration(text: str) -> timedelta:
    """Parse a Go-style duration such as "1h30m"; raise DurationError on anything else.

    Like Go's time.ParseDuration, a unit is required on every number (except a bare "0"),
    and negative durations are refused because nothing in Burnbox can use one. Digits are
    ASCII only (a fullwidth "1" is refused), and a text longer than MAX_DURATION_LENGTH is
    refused before it is read. The scan reads each character once.
    """
    if not isinstance(text, str):
        raise DurationError("a duration must be a string such as '90m' or '24h'")
    if len(text) > MAX_DURATION_LENGTH:
        raise DurationError(f"invalid duration: longer than {MAX_DURATION_LENGTH} characters")
    value = text.strip()
    if value == "0":
        return timedelta(0)
    if not value:
        raise DurationError(f"invalid duration {text!r}: use a string such as '90m' or '1h30m'")
    position, micros = 0, Decimal(0)
    while position < len(value):
        number, position = _number(value, position)
        unit, position = _unit(value, position)
        if number is None or unit is None:
            raise DurationError(f"invalid duration {text!r}: use a string such as '90m' or '1h30m'")
        micros += number * _UNITS[unit]
    try:
        return timedelta(microseconds=int(micros.to_integral_value()))
    except OverflowError as exc:  # beyond timedelta's ~2.7 million years
        raise DurationError(f"invalid duration {text!r}: too long") from exc


def _number(value: str, position: int) -> tuple[Decimal | None, int]:
    """The decimal number (`12`, `1.5`, `1.`, `.5`) starting at `position` and the position
    after it; None when there is none there (a lone "." is none)."""
    end = position
    while end < len(value) and value[end] in _DIGITS:
        end += 1
    digits = end > position
    if end < len(value) and value[end] == ".":
        end += 1
        fraction = end
        while end < len(value) and value[end] in _DIGITS:
            end += 1
        digits = digits or end > fraction
    return (Decimal(value[position:end]) if digits else None), end


def _unit(value: str, position: int) -> tuple[str | None, int]:
    """The unit starting at `position` (two-letter units first, so "1ms" is milliseconds, not
    minutes) and the position after it; None when there is none there."""
    for width in (2, 1):
        unit = value[position:position + width]
        if len(unit) == width and unit in _UNITS:
            return unit, position + width
    return None, position


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
