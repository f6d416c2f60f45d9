"""flask-smorest glue: the Api with our error envelope, and the Blueprint every resource group uses.

Validation errors are 400 (never 422) and carry per-field details; the OpenAPI document names the
error body `Error` on every operation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import flask_smorest
from flask import Flask, Request, request
from marshmallow import Schema, fields
from webargs.flaskparser import FlaskParser, abort

from web.context import flush_db
from web.errors import ErrorSchema, handle_http_exception

F = TypeVar("F", bound=Callable[..., Any])

# No request schema nests beyond a few levels; the limit keeps deeply nested bodies away from
# every recursive walk that would follow (validation, error messages, JSON columns).
MAX_JSON_DEPTH = 32


def _nesting(value: Any) -> int:
    """How deep arrays and objects nest in a decoded JSON value (a scalar is 0); iterative, so
    any depth can be measured."""
    deepest = 0
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth + 1)
            pending.extend((child, depth + 1) for child in item)
    return deepest


class Parser(FlaskParser):
    """webargs parser that reports validation failures as 400."""

    DEFAULT_VALIDATION_STATUS = 400

    def load_json(self, req: Request, schema: Schema) -> Any:
        """The JSON body, as webargs loads it; 400 when it nests deeper than MAX_JSON_DEPTH or
        holds an integer too long for Python to convert."""
        try:
            data = super().load_json(req, schema)
            too_deep = _nesting(data) > MAX_JSON_DEPTH
        except RecursionError:  # the decoder recurses once per level and gave up first
            too_deep = True
        except ValueError:
            # webargs turns only syntax errors into a 400: an integer of more than
            # sys.get_int_max_str_digits() digits (4,300) is valid JSON that the decoder
            # refuses with a plain ValueError, which was a 500 on every JSON route.
            abort(400, messages={"json": [
                f"numbers may have at most {sys.get_int_max_str_digits()} digits"]})
        if too_deep:
            abort(400, messages={"json": [
                f"arrays and objects may nest at most {MAX_JSON_DEPTH} levels deep"]})
        return data


class Blueprint(flask_smorest.Blueprint):
    """A resource group: MethodViews with @arguments / @response, validated by `Parser`."""

    ARGUMENTS_PARSER = Parser()

    def arguments(self, schema: type[Schema] | Schema, *, location: str = "json",
                  required: bool = True, **kwargs: Any) -> Any:
        """flask-smorest's `arguments`, with a schema class made an instance once, and a
        required JSON body enforced: a request without one (no bytes, or not JSON) is a 400
        `validation_error`, where webargs would load it as `{}` and run the action with
        nothing the caller chose. Routes whose body may be left out say `required=False`.

        The instance: given a class, webargs built a new instance for every request (its
        declared fields deep-copied), a tenth of a cached read's CPU. A marshmallow 4 schema
        keeps no state between loads, and a gevent worker never switches inside one."""
        decorate = super().arguments(schema() if isinstance(schema, type) else schema,
                                     location=location, required=required, **kwargs)
        if location != "json" or not required:
            return decorate

        def decorator(view: Callable[..., Any]) -> Callable[..., Any]:
            parsed = decorate(view)

            @wraps(parsed)
            def body_required(*args: Any, **view_kwargs: Any) -> Any:
                if not request.is_json or not request.get_data(cache=True):
                    abort(400, messages={"json": ["a JSON body is required"]})
                return parsed(*args, **view_kwargs)

            return body_required

        return decorator

    def response(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        """flask-smorest's `response`, with the request's unit of work flushed between the view
        and the writing of its result: what the ORM fills at a flush (ids, `created_at`, an
        `updated_at` moved) is in the answer, and a write the database refuses is answered as
        the view's error. The commit stays the app's one commit point
        (`web.context.UnitOfWorkApp`), right after."""
        write = super().response(*args, **kwargs)

        def decorator(view: F) -> F:
            @wraps(view)
            def flushed(*view_args: Any, **view_kwargs: Any) -> Any:
                result = view(*view_args, **view_kwargs)
                flush_db()
                return result

            return write(flushed)

        return decorator


class MessageSchema(Schema):
    """The body of an action with nothing else to return (a delete, a logout...): no endpoint
    answers 204, as clients written for the reference system read a JSON body from every 2xx."""

    message = fields.String(required=True, metadata={"description": "what was done",
                                                     "example": "Inbox deleted"})


class Api(flask_smorest.Api):
    """The API object: OpenAPI 3 document and the envelope for HTTP errors."""

    ERROR_SCHEMA = ErrorSchema

    def handle_http_exception(self, error: Any) -> Any:  # type: ignore[override]
        """Answer HTTP errors in our error envelope instead of flask-smorest's own."""
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
