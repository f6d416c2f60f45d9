"""Marshmallow fields shared by every resource's schemas, and the reading of the reference
system's field names."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from marshmallow import ValidationError, fields

from burnbox.timeutil import isoformat


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
