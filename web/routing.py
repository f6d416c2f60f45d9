"""URL rules: a malformed UUID in a path is a 400, not a 404; and the view a request matched.

Werkzeug's `<uuid:name>` converter only matches well-formed UUIDs, so `/inboxes/xyz` matched no
rule and answered 404, as if the id were merely unknown. Here `<uuid:name>` takes any path
segment, and one that is not a UUID answers 400 `validation_error` naming the parameter, for
every route at once (`Rule` is the app's `url_rule_class`). An id that is well formed but names
nothing stays a 404, from the view. Static segments still win over a parameter
(`/orgs/:id/members/search` is not read as a member id).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flask import current_app, request
from werkzeug import routing
from werkzeug.exceptions import BadRequest

if TYPE_CHECKING:
    from werkzeug.routing import Map

_CANONICAL = re.compile(routing.UUIDConverter.regex)


class MalformedId(BadRequest):
    """A path parameter that should be a UUID is not one."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not a valid UUID")
        # Where webargs puts its messages, so the error envelope lists them as `details`.
        self.data = {"messages": {"path": {name: ["Not a valid UUID."]}}}


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


class Rule(routing.Rule):
    """A URL rule whose `<uuid:...>` parameters are `UUIDConverter`s knowing their names."""

    def get_converter(self, variable_name: str, converter_name: str, args: tuple[Any, ...],
                      kwargs: Mapping[str, Any]) -> routing.BaseConverter:
        """Our UUIDConverter for `uuid`, werkzeug's converters for the rest."""
        if converter_name == "uuid":
            return UUIDConverter(self.map, variable_name)
        return super().get_converter(variable_name, converter_name, args, kwargs)


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
