"""Marshmallow fields shared by every resource's schemas, and the reading of the reference
system's field names.

Every string a request carries (body, query string) is loaded by `Line` or `Text`, and every
value in a path is checked by `Line.refusal` (web.routing), so the characters a request may send
are decided here, once, whatever the backend: SQLite would store a NUL that PostgreSQL refuses
(and a NUL compared with a column in a query failed on PostgreSQL with a 500), and an unpaired
surrogate cannot be encoded for the database or for argon2. `tests/web/test_request_strings.py`
checks that no request schema uses another string field, `tests/web/test_path_parameters.py`
that no path value gets past the check.
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


class WholeNumber(fields.Integer):
    """A whole number as JSON writes it: an integer, or a number without a fraction (`451.0`);
    a fraction, a string or a boolean is a validation error. marshmallow's Integer takes
    `451.5` as 451 and `true` as 1, so a value was stored other than it was written."""

    default_error_messages = {"whole": "must be a whole number"}

    def _deserialize(self, value: Any, attr: str | None, data: Mapping[str, Any] | None,
                     **kwargs: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.make_error("whole")
        if isinstance(value, float):
            if not value.is_integer():  # a fraction, NaN or an infinity
                raise self.make_error("whole")
            value = int(value)
        return super()._deserialize(value, attr, data, **kwargs)  # type: ignore[no-any-return]


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
    MESSAGE: ClassVar[str] = "{character} is not allowed here ({rule})"
    default_error_messages = {"character": MESSAGE}

    @classmethod
    def refusal(cls, text: str) -> str | None:
        """Why `text` is refused (the message naming the first refused character), or None
        when this field takes every character of it. For strings a request carries outside
        a schema: the values of a path (web.routing)."""
        found = cls.REFUSED.search(text)
        if found is None:
            return None
        return cls.MESSAGE.format(character=f"U+{ord(found.group()):04X}", rule=cls.RULE)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        refused = self.refusal(text)
        if refused is not None:
            raise ValidationError(refused)
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
