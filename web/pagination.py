"""The pagination envelope: `?page=&per_page=` in, `{data, total, page, per_page, total_pages}` out.

Defaults: page 1, per_page 20; per_page above 100 is clamped to 100; a value that is not an
integer, is below 1, or (page) is beyond MAX_PAGE is a 400.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from flask import Response, jsonify
from marshmallow import Schema, fields, post_load, validate

from models.pagination import MAX_PER_PAGE, Page

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
def page_schema(item_schema: type[Schema], capped: bool = False) -> type[Schema]:
    """The envelope schema for a list of `item_schema` (one class per item type, for OpenAPI);
    `capped` adds `total_capped`, for lists whose count stops at a cap (`models.pagination`)."""
    name = item_schema.__name__.removesuffix("Schema") + "PageSchema"
    body: dict[str, Any] = {
        "data": fields.List(fields.Nested(item_schema), required=True),
        "total": fields.Integer(required=True),
        "page": fields.Integer(required=True),
        "per_page": fields.Integer(required=True),
        "total_pages": fields.Integer(required=True),
    }
    if capped:
        body["total"] = fields.Integer(required=True, metadata={
            "description": "the matching entries, exact unless total_capped"})
        body["total_capped"] = fields.Boolean(required=True, metadata={
            "description": "true when counting stopped at the cap: total (and total_pages) "
                           "are then lower bounds, and the next page is not empty"})
    return type(name, (Schema,), body)


def page_response(page: Page[Any]) -> Response:
    """The envelope of `page` as the response itself, its items written as they are (dicts of
    what the app's JSON writer takes: UUIDs, UTC datetimes, web.encoding): for hot lists,
    where the schema's dump costs more than the rest of the request's Python (1.2 ms against
    0.36 ms for 20 e-mails, docs/performance.md). flask-smorest passes a Response through
    untouched, so the view keeps its schema for the OpenAPI document, and the items must come
    out exactly as that schema would write them (a test compares them)."""
    return jsonify({"data": page.data, "total": page.total, "page": page.page,
                    "per_page": page.per_page, "total_pages": page.total_pages})
