"""Marshmallow fields shared by every resource's schemas."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from marshmallow import fields

from burnbox.timeutil import isoformat


class Timestamp(fields.DateTime):
    """A timestamp written as ISO 8601 UTC with a trailing Z ("2026-11-21T10:00:00.123456Z")."""

    def _serialize(self, value: datetime | None, attr: str | None, obj: Any,
                   **kwargs: Any) -> str | None:
        return isoformat(value)
