"""The error envelope: every error leaves as `{"error": <text>, "code": <code>}` (+ details)."""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import psycopg
from flask import Flask, Response, jsonify
from marshmallow import Schema, fields
from werkzeug.exceptions import HTTPException

from burnbox.outages import unavailable_dependency
from models.errors import DomainError
from models.schema import CURRENT, schema_state
from web.context import commit_db, db

log = logging.getLogger(__name__)

# The error code of each status, as docs/architecture.md ("HTTP contracts") lists them.
CODES = {
    400: "validation_error",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "validation_error",
    422: "validation_error",
    429: "rate_limited",
    503: "unavailable",
}
MESSAGES = {
    400: "invalid request",
    404: "resource not found",
    405: "method not allowed",
    413: "request body too large",
    429: "rate limit exceeded",
    503: "temporarily unavailable, try again shortly",
}
# Seconds a client is told to wait after a 503: a database or Redis restart takes a few.
RETRY_AFTER = 5


class ErrorSchema(Schema):
    """The error body of every non-2xx response."""

    error = fields.String(required=True, metadata={"description": "human-readable message"})
    code = fields.String(required=True, metadata={"description": "stable machine-readable code"})
    details = fields.Dict(metadata={"description": "per-field validation messages"})


def error_response(status: int, message: str, code: str | None = None,
                   details: Any = None, extra: dict[str, Any] | None = None) -> Response:
    """A JSON error response in the error envelope, `{"error": message, "code": code}`."""
    body: dict[str, Any] = {**(extra or {}), "error": message,
                            "code": code or CODES.get(status, "internal_error")}
    if details:
        body["details"] = details
    response = jsonify(body)
    response.status_code = status
    return response


def _validation_details(exc: HTTPException) -> dict[str, Any] | None:
    """Per-field messages webargs attached to the exception, merged across locations."""
    messages = (getattr(exc, "data", None) or {}).get("messages")
    if not isinstance(messages, dict):
        return None
    merged: dict[str, Any] = {}
    for location, value in messages.items():
        if isinstance(value, dict):
            merged.update(value)
        else:
            merged[location] = value
    return merged


def handle_http_exception(exc: HTTPException) -> Response:
    """Turn Werkzeug/flask-smorest HTTP errors (404, 405, 413, validation...) into the envelope."""
    status = exc.code or 500
    if status >= 500:
        # An exception escaping an error or after-request handler reaches Flask as a 500 that
        # wraps it: an outage there is still a 503.
        original = getattr(exc, "original_exception", None)
        if original is not None and unavailable_dependency(original):
            return handle_unavailable(original)
        return error_response(500, "internal server error", "internal_error")
    details = _validation_details(exc)
    status = 400 if status == 422 else status
    message = MESSAGES.get(status) or (exc.description or "request failed")
    if details:
        message = "validation failed: " + ", ".join(sorted(details))
    response = error_response(status, message, details=details)
    if status == 405 and hasattr(exc, "valid_methods") and exc.valid_methods:
        response.headers["Allow"] = ", ".join(exc.valid_methods)
    return response


def handle_domain_error(exc: DomainError) -> Response:
    """Turn a domain error raised by an action into the envelope with its status and code,
    after committing the request's session when the error keeps the action's changes (any
    other error leaves them to the rollback at the end of the request)."""
    if exc.keeps_changes:
        commit_db()
    return error_response(exc.status, exc.message, exc.code, exc.details, exc.extra)


def handle_unavailable(exc: BaseException) -> Response:
    """A dependency the request needs cannot be reached (burnbox.outages decides which): log
    it and answer 503 `unavailable` with Retry-After, naming no internals."""
    log.warning("dependency unavailable", extra={"dependency": unavailable_dependency(exc),
                                                 "reason": _reason(exc)})
    return _retry_later()


def _retry_later() -> Response:
    response = error_response(503, MESSAGES[503])
    response.headers["Retry-After"] = str(RETRY_AFTER)
    return response


def _reason(exc: BaseException) -> str:
    """The failure in one line: the driver's own message, without SQLAlchemy's statement and
    parameters (which may hold personal data)."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0] if lines else ''}"


def _schema_not_migrated(exc: Exception) -> bool:
    """Whether `exc` is a missing table of a database not yet at this version's schema: the
    web process serving while `release` still migrates (honcho and most platforms start every
    process together). A missing table in a migrated database is a bug, and stays a 500."""
    cause = getattr(exc, "orig", None)
    missing = (isinstance(cause, psycopg.errors.UndefinedTable)
               or (isinstance(cause, sqlite3.OperationalError) and "no such table" in str(cause)))
    if not missing:
        return False
    # Asked on the request's own connection, rolled back first (the request answers an error
    # anyway): SQLite's one pooled connection is that one, and a second would wait for it.
    session = db()
    session.rollback()
    try:
        return schema_state(session.connection()) != CURRENT
    except Exception:  # the question is asked only on the way to an error answer
        return False


def handle_unexpected(exc: Exception) -> Response:
    """Answer 503 for an outage or a database not migrated yet; log any other unexpected
    exception and answer 500 without any internals."""
    if isinstance(exc, HTTPException):
        return handle_http_exception(exc)
    if unavailable_dependency(exc):
        return handle_unavailable(exc)
    if _schema_not_migrated(exc):
        log.warning("database schema not migrated yet: run `burnbox release` (or migrate)")
        return _retry_later()
    log.exception("unhandled exception")
    return error_response(500, "internal server error", "internal_error")


def register_error_handlers(app: Flask) -> None:
    """Install the envelope handlers on the app."""
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(DomainError, handle_domain_error)
    app.register_error_handler(Exception, handle_unexpected)
