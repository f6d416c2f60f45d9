"""Mailpit's request bodies, read as Go's `encoding/json` reads them into Mailpit's structs:
field names in any case (the last of two spellings wins), `null` as absent, a value of the
wrong type an error; and Mailpit's refusal (`MailpitError`, a plain-text 400 or 404). Text a
body carries is checked before any query sees it: a NUL reached PostgreSQL and answered 500."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flask import request

from web.fields import Line


class MailpitError(Exception):
    """A refusal in Mailpit's words: `status` (400, 404; 403 and 429 refuse a stream)
    and its plain-text body."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.status = message, status


def fields(value: Mapping[Any, Any]) -> dict[str, Any]:
    """A decoded JSON object with its keys lower-cased, as Go matches them."""
    return {str(key).lower(): item for key, item in value.items()}


def decoded() -> dict[str, Any]:
    """The request's JSON object (`fields`); `null` is an empty one. MailpitError 400 for an
    empty body ("EOF", as Go says), one that is not JSON, or not an object."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        raise MailpitError("EOF")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise MailpitError("invalid JSON in the request body") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MailpitError(f"json: cannot unmarshal {type(value).__name__} into the request")
    return fields(value)


def line(text: str, name: str) -> str:
    """`text` when it is one line of text (no control character, no lone surrogate, which no
    stored value holds); MailpitError 400 naming `name` otherwise."""
    refused = Line.refusal(text)
    if refused is not None:
        raise MailpitError(f"{name}: {refused}")
    return text


def typed(body: Mapping[str, Any], name: str, kind: type, default: Any) -> Any:
    """The field `name` of `body` (lower-cased keys), `default` when absent or null;
    MailpitError 400 when it is not a `kind` (a JSON true is no number)."""
    value = body.get(name.lower())
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise MailpitError(f"json: cannot unmarshal {name}: a {kind.__name__} is expected")
    return value


def strings(body: Mapping[str, Any], name: str, *, lines: bool = True) -> list[str]:
    """The array of strings `name`, each one line of text unless `lines` is false (ids, which
    are only compared)."""
    value = typed(body, name, list, [])
    if not all(isinstance(item, str) for item in value):
        raise MailpitError(f"json: cannot unmarshal {name}: an array of strings is expected")
    return [line(item, name) for item in value] if lines else value


def string(body: Mapping[str, Any], name: str) -> str:
    """The one-line string `name` ("" when absent)."""
    return line(typed(body, name, str, ""), name)
