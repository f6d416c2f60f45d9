"""URL rules: a malformed UUID in a path is a 400, not a 404, and so is any path value holding a
character no request string may carry; and the view a request matched.

Werkzeug's `<uuid:name>` converter only matches well-formed UUIDs, so `/inboxes/xyz` matched no
rule and answered 404, as if the id were merely unknown. Here `<uuid:name>` takes any path
segment, and one that is not a UUID answers 400 `validation_error` naming the parameter, for
every route at once (`Rule` is the app's `url_rule_class`). An id that is well formed but names
nothing stays a 404, from the view. Static segments still win over a parameter
(`/orgs/:id/members/search` is not read as a member id).

Every other parameter (`<string:...>`, `<path:...>`, the blueprints' own converters) refuses
what a `web.fields.Line` refuses (NUL, other control characters, unpaired surrogates) with the
same 400 naming it, before any view sees the value (a converter whose class sets
`RAW_TEXT = True` is left unchecked: its views refuse bad text in their own API's shape, as the
compat faces answer in their peer's): `GET /inboxes/by-address/<address>` with a
NUL in the address reached PostgreSQL, which refuses NUL in text, and answered 500 (SQLite
found nothing: 404). A value the check passes is the converter's as before.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flask import current_app, request
from werkzeug import routing
from werkzeug.exceptions import BadRequest

from web.fields import Line

if TYPE_CHECKING:
    from werkzeug.routing import Map

_CANONICAL = re.compile(routing.UUIDConverter.regex)


class MalformedParameter(BadRequest):
    """A path parameter the route cannot take: `message` says why."""

    def __init__(self, name: str, message: str, summary: str = "") -> None:
        super().__init__(summary or f"{name}: {message}")
        # Where webargs puts its messages, so the error envelope lists them as `details`.
        self.data = {"messages": {"path": {name: [message]}}}


class MalformedId(MalformedParameter):
    """A path parameter that should be a UUID is not one."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "Not a valid UUID.", f"{name} is not a valid UUID")


class UUIDConverter(routing.UUIDConverter):
    """`<uuid:name>` matching any segment; a malformed one raises MalformedId."""

    regex = "[^/]+"

    def __init__(self, map: Map, name: str) -> None:
        super().__init__(map)
        self.name = name

    def to_python(self, value: str) -> uuid.UUID:
        """The UUID; MalformedId (400) unless `value` is one in its canonical form."""
        if _CANONICAL.fullmatch(value) is None:
            raise MalformedId(self.name)
        return uuid.UUID(value)


@functools.cache
def _line_checked(converter: type[routing.BaseConverter]) -> type[routing.BaseConverter]:
    """`converter` refusing a value that holds a character a `Line` refuses, with
    MalformedParameter (400) naming the parameter (its `name`)."""

    class LineChecked(converter):  # type: ignore[valid-type,misc]
        name = ""

        def to_python(self, value: str) -> Any:
            refused = Line.refusal(value)
            if refused is not None:
                raise MalformedParameter(self.name, refused)
            return super().to_python(value)

    LineChecked.__name__ = LineChecked.__qualname__ = f"LineChecked{converter.__name__}"
    return LineChecked


class Rule(routing.Rule):
    """A URL rule whose `<uuid:...>` parameters are `UUIDConverter`s and every other parameter
    a converter refusing control characters (`_line_checked`), each knowing its name."""

    def get_converter(self, variable_name: str, converter_name: str, args: tuple[Any, ...],
                      kwargs: Mapping[str, Any]) -> routing.BaseConverter:
        """Our UUIDConverter for `uuid`; the map's converter of that name, line-checked, for
        the rest."""
        if converter_name == "uuid":
            return UUIDConverter(self.map, variable_name)
        if converter_name not in self.map.converters:
            raise LookupError(f"the converter {converter_name!r} does not exist")
        chosen = self.map.converters[converter_name]
        if getattr(chosen, "RAW_TEXT", False):
            return chosen(self.map, *args, **kwargs)
        converter = _line_checked(chosen)(self.map, *args, **kwargs)
        converter.name = variable_name  # type: ignore[attr-defined]
        return converter


def matched_view() -> Callable[..., Any] | None:
    """The function that will answer the current request: the view of the matched endpoint,
    or the method of a MethodView for the request's method; None when nothing matched. Marks
    that decorators set on a view (its rate bucket, read-only) are read from it."""
    view = current_app.view_functions.get(request.endpoint or "")
    if view is None:
        return None
    view_class = getattr(view, "view_class", None)
    if view_class is not None:
        return getattr(view_class, request.method.lower(), None) or view_class
    return view  # type: ignore[no-any-return]
