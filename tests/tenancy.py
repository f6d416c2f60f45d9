"""Calling the API as the users of a factories world (tests.factories.tenancy.World): request
bodies with the world's ids filled in, and a caller bound to a client."""

from __future__ import annotations

from typing import Any

from tests.factories.tenancy import World

TEAM_PATH = "/orgs/{org}/teams/{team}"


def fill_ids(value: Any, world: World) -> Any:
    """A request body with every "{name}" placeholder replaced by the world's id of that name."""
    if isinstance(value, dict):
        return {key: fill_ids(item, world) for key, item in value.items()}
    if isinstance(value, list):
        return [fill_ids(item, world) for item in value]
    if isinstance(value, str) and value.startswith("{"):
        return str(world.ids[value.strip("{}")])
    return value


def route_id(route: tuple[Any, ...]) -> str:
    """The test id of a (method, template, ...) route: "METHOD template"."""
    return f"{route[0]} {route[1]}"


def world_caller(client: Any, world: World, default: str) -> Any:
    """api(method, template, who=default, **kwargs): call the API as one of the world's users,
    the template's placeholders filled by `world.path`."""

    def call(method: str, template: str, who: str = default, **kwargs: Any) -> Any:
        return client.open(world.path(template), method=method, headers=world.headers[who],
                           **kwargs)

    return call
