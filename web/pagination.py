"""The pagination envelope: `?page=&per_page=` in, `{data, total, page, per_page, total_pages}` out.

Defaults: page 1, per_page 20; per_page above 100 is clamped to 100; a value that is not an
integer, is below 1, or (page) is beyond MAX_PAGE is a 400.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from marshmallow import Schema, fields, post_load, validate

from models.pagination import MAX_PER_PAGE

# The largest page asked for: its row offset must fit the databases' 64-bit integers.
MAX_PAGE = 2**31 - 1


class PageArgsSchema(Schema):
    """Query parameters of every paginated list."""

    page = fields.Integer(load_default=1, validate=validate.Range(min=1, max=MAX_PAGE))
    per_page = fields.Integer(load_default=20, validate=validate.Range(min=1))

    @post_load
    def clamp(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        """Clamp per_page to the maximum instead of refusing it."""
        data["per_page"] = min(data["per_page"], MAX_PER_PAGE)
        return data


@cache
def page_schema(item_schema: type[Schema]) -> type[Schema]:
    """The envelope schema for a list of `item_schema` (one class per item type, for OpenAPI)."""
    name = item_schema.__name__.removesuffix("Schema") + "PageSchema"
    return type(name, (Schema,), {
        "data": fields.List(fields.Nested(item_schema), required=True),
        "total": fields.Integer(required=True),
        "page": fields.Integer(required=True),
        "per_page": fields.Integer(required=True),
        "total_pages": fields.Integer(required=True),
    })
