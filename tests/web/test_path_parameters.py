"""Every parameter of every route's path, read from the app's URL map, with a NUL, a lone
surrogate as sent (`%ED%A0%80`) and 10 kB: never a 5xx, every 4xx in the error envelope, and a
NUL a 400 `validation_error` naming the parameter (web.routing) whatever converter reads it.
On PostgreSQL a NUL in `GET /inboxes/by-address/:address` reached the query and answered 500."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.routing import Rule

from tests.factories.mail import make_inbox

BAD = {"nul": "%00", "surrogate": "%ED%A0%80", "long": "a" * 10_000}
_PARAMETER = re.compile(r"<(?:(?P<converter>[^:<>(]+)(?:\([^)]*\))?:)?(?P<name>[^<>]+)>")
# A path parameter's name -> the key of the world's id it takes when it is not the one swept,
# so that the request gets as far as it can (an unknown name takes a random UUID).
# A WebSocket route matches only a request asking for the upgrade.
UPGRADE = {"Upgrade": "websocket", "Connection": "Upgrade"}
WORLD_IDS = {"org_id": "org", "team_id": "team", "domain_id": "domain", "inbox_id": "inbox"}


def _parameters(app: Flask) -> Iterator[tuple[Rule, str, str]]:
    """(rule, parameter, converter) of every parameter of every rule of `app`."""
    for rule in app.url_map.iter_rules():
        for match in _PARAMETER.finditer(rule.rule):
            yield rule, match["name"], match["converter"] or "default"


def _value(name: str, converter: str, ids: dict[str, Any], address: str) -> str:
    """A valid-looking value for a parameter that is not the one swept."""
    if converter == "uuid":
        return str(ids.get(WORLD_IDS.get(name, ""), uuid.uuid4()))
    if name == "address":
        return address
    if converter.startswith("any"):
        return "inboxes"
    return "google" if name == "provider" else "value"


def _swept(name: str, bad: str, address: str) -> str:
    """The swept value: `bad` inside a plausible value (inside the inbox's own address for an
    address, so the look-up runs with it), or on its own when it is the long one."""
    if len(bad) > 100:
        return bad
    if name == "address":
        local, _, domain = address.partition("@")
        return f"{local}{bad}@{domain}"
    return f"val{bad}ue"


def _url(rule: Rule, swept: str, value: str, ids: dict[str, Any], address: str) -> str:
    def fill(match: re.Match[str]) -> str:
        if match["name"] == swept:
            return value
        return _value(match["name"], match["converter"] or "default", ids, address)

    return _PARAMETER.sub(fill, rule.rule)


def _check(response: Any, where: str) -> None:
    assert response.status_code < 500, (where, response.get_data(as_text=True)[:300])
    if response.status_code >= 400 and " /compat/" in where and response.mimetype != "text/plain":
        # A compat face answers in its peer's shape, plain text (tests/compat sweep its ids),
        # unless no rule matched at all (a bad scope kind): then the app's 404.
        assert response.status_code == 404 and response.get_json()["code"] == "not_found", where
    elif response.status_code >= 400 and " /compat/" not in where:
        body = response.get_json(silent=True)
        assert isinstance(body, dict) and {"error", "code"} <= set(body), (where, body)


def test_no_path_parameter_of_any_route_gets_a_5xx(app, client, runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    mail_world.ids["inbox"] = inbox.id
    address = inbox.full_address
    swept: set[tuple[str, str]] = set()
    for rule, name, converter in _parameters(app):
        methods = sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})
        for label, bad in BAD.items():
            url = _url(rule, name, _swept(name, bad, address), mail_world.ids, address)
            for method in methods:
                where = f"{method} {rule.rule} {name}={label}"
                headers = {**mail_world.headers["owner"], **(UPGRADE if rule.websocket else {})}
                response = client.open(url, method=method, json={}, headers=headers)
                _check(response, where)
                if (label == "nul" and response.status_code != 404  # 404: no rule matches
                        and not rule.rule.startswith("/compat/")):
                    body = response.get_json()
                    assert (response.status_code, body["code"]) == (400, "validation_error"), (
                        where, body)
                    assert name in body["details"], (where, body)
        swept.add((converter.split("(")[0], name))
    # The walk reaches every kind of converter the routes use.
    assert {converter for converter, _ in swept} >= {"uuid", "string", "path", "any",
                                                     "sso_provider"}
    assert ("string", "address") in swept and len(swept) > 20


@pytest.mark.parametrize("path", ["/inboxes/by-address/{address}",
                                  "/inboxes/by-address/{address}/emails/wait?timeout=1s"])
def test_a_nul_in_an_address_in_the_path_is_a_400_naming_it(client, runtime, mail_world,
                                                            path):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    local, _, domain = inbox.full_address.partition("@")
    response = client.get("/api/v1" + path.format(address=f"{local}%00@{domain}"),
                          headers=mail_world.headers["owner"])
    assert response.status_code == 400
    body = response.get_json()
    assert body["code"] == "validation_error"
    assert body["details"]["address"] == [
        "U+0000 is not allowed here (one line of text: no control characters, no unpaired "
        "surrogates)"]
    assert client.get("/api/v1" + path.format(address=inbox.full_address),
                      headers=mail_world.headers["owner"]).status_code == 200
