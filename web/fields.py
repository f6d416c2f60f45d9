"""Marshmallow fields shared by every resource's schemas, and the reading of the reference
system's field names.

Every string a request carries (body, query string) is loaded by `Line` or `Text`, so the
characters a request may send are decided here, once, whatever the backend: SQLite would store a
NUL that PostgreSQL refuses, and an unpaired surrogate cannot be encoded for the database or for
argon2. `tests/web/test_request_strings.py` checks that no request schema uses another string field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from marshmallow import ValidationError, fields, validate

from burnbox.durations import MAX_DURATION_LENGTH
from burnbox.timeutil import isoformat

# Unicode control characters (category Cc: C0, DEL, C1) and surrogate code points (Cs): a
# surrogate left in a decoded JSON string is unpaired, since the decoder joins valid pairs.
_TEXT_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# The same, plus tab, LF and CR, and the Unicode line and paragraph separators.
_LINE_REFUSED = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


class JsonBoolean(fields.Boolean):
    """A JSON true or false, nothing else: marshmallow's Boolean also takes 1, "yes", "on"...,
    which would let a mistyped setting pass as a choice the caller never made."""

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None,
                     **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("must be true or false")
        return value


class Timestamp(fields.DateTime):
    """A timestamp written as ISO 8601 UTC with a trailing Z ("2026-11-21T10:00:00.123456Z")."""

    def _serialize(self, value: datetime | None, attr: str | None, obj: Any,
                   **kwargs: Any) -> str | None:
        return isoformat(value)


def merge_aliases(data: dict[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """`data` (a loaded body) with each field given under its alias (the reference system's
    name, key of `aliases`) moved to our name; ValidationError when a body gives both names
    with different values."""
    for alias, ours in aliases.items():
        if alias in data:
            value = data.pop(alias)
            if data.get(ours, value) != value:
                raise ValidationError(f"{alias} is another name for {ours}: give one", alias)
            data[ours] = value
    return data


class Text(fields.String):
    """Free text (descriptions): tab, LF and CR are allowed; NUL, every other control character
    and unpaired surrogates are a validation error naming the first one found."""

    REFUSED: ClassVar[re.Pattern[str]] = _TEXT_REFUSED
    RULE: ClassVar[str] = "no control characters but tab and line breaks, no unpaired surrogates"
    default_error_messages = {"character": "{character} is not allowed here ({rule})"}

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        found = self.REFUSED.search(text)
        if found:
            raise self.make_error("character", character=f"U+{ord(found.group()):04X}",
                                  rule=self.RULE)
        return text


class Line(Text):
    """One line of text (names, addresses, URLs, tokens, passwords, query strings): no control
    character at all, tab and line breaks included (U+2028 and U+2029 too), no unpaired
    surrogate."""

    REFUSED = _LINE_REFUSED
    RULE = "one line of text: no control characters, no unpaired surrogates"


class Duration(Line):
    """A Go-style duration as sent ("90m", "1h30m"): a `Line` of 1 to MAX_DURATION_LENGTH
    characters, checked here so no request hands a longer text to the parser; the domain action
    parses it and says what else is wrong. Keyword arguments are a Line's; `purpose` is added to
    the documented description."""

    def __init__(self, purpose: str = "", **kwargs: Any) -> None:
        description = "a Go-style duration such as '10m', '1h30m' or '24h'"
        metadata = {"description": f"{description}; {purpose}" if purpose else description,
                    "example": "1h"}
        super().__init__(validate=validate.Length(min=1, max=MAX_DURATION_LENGTH),
                         metadata=metadata, **kwargs)


class Email(Line, fields.Email):
    """An e-mail address: a `Line` that also passes marshmallow's e-mail syntax check."""
