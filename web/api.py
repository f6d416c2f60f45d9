"""flask-smorest glue: the Api with our error envelope, and the Blueprint every resource group uses.

Validation errors are 400 (never 422) and carry per-field details; the OpenAPI document names the
error body `Error` on every operation.
"""

from __future__ import annotations

from typing import Any

import flask_smorest
from flask import Flask
from marshmallow import Schema, fields
from webargs.flaskparser import FlaskParser

from web.errors import ErrorSchema, handle_http_exception


class Parser(FlaskParser):
    """webargs parser that reports validation failures as 400."""

    DEFAULT_VALIDATION_STATUS = 400


class Blueprint(flask_smorest.Blueprint):
    """A resource group: MethodViews with @arguments / @response, validated by `Parser`."""

    ARGUMENTS_PARSER = Parser()


class MessageSchema(Schema):
    """The body of an action with nothing else to return (a delete, a logout...): no endpoint
    answers 204, as clients written for the reference system read a JSON body from every 2xx."""

    message = fields.String(required=True, metadata={"description": "what was done",
                                                     "example": "Inbox deleted"})


class Api(flask_smorest.Api):
    """The API object: OpenAPI 3 document and the envelope for HTTP errors."""

    ERROR_SCHEMA = ErrorSchema

    def handle_http_exception(self, error: Any) -> Any:  # type: ignore[override]
        """Answer HTTP errors in the spec's envelope instead of flask-smorest's own."""
        return handle_http_exception(error)


def make_api(app: Flask) -> Api:
    """Create the Api for `app`: OpenAPI 3.0 at /api/v1/docs/openapi.json."""
    app.config.update(
        API_TITLE="Burnbox",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/api/v1/docs",
        OPENAPI_JSON_PATH="openapi.json",
        API_SPEC_OPTIONS={
            "info": {"description": "Disposable e-mail inboxes: REST API, WebSockets, webhooks."},
            "components": {"securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "JWT access token, or an API key starting with bb_"},
            }},
        },
    )
    return Api(app)
