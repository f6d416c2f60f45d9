"""Substring search in SQL: a LIKE whose user-given text matches only itself."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement


def contains(column: ColumnElement[Any], text: str) -> ColumnElement[bool]:
    """`column` contains `text` literally: its `%`, `_` and `\\` are characters, not wildcards.

    Case follows the backend's LIKE (SQLite ignores ASCII case, PostgreSQL does not), so callers
    lower both sides for the same case-blind match on both.
    """
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return column.like(f"%{escaped}%", escape="\\")
