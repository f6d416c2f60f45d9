"""The string rule of requests: `web.fields.Text` and `Line` decide which characters a request may
carry, the same on SQLite and PostgreSQL (NUL and unpaired surrogates used to give 500s: refused by
PostgreSQL, unencodable for the database and argon2), and every string a request schema loads goes
through one of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from marshmallow import Schema, ValidationError, fields

from tests.factories.mail import MailWorld, make_inbox
from tests.identity import PASSWORD
from web.fields import Email, JsonBoolean, Line, Text

SURROGATE = "\udc80"
NUL = "\x00"


def _send(client: Any, world: MailWorld, method: str, template: str, body: dict[str, Any]
          ) -> Any:
    """Call the API as the world's org owner; json.dumps escapes a surrogate as \\udc80."""
    return client.open(world.path(template), method=method, headers=world.headers["owner"],
                       data=json.dumps(body), content_type="application/json")


def _assert_refused(response: Any, field: str) -> None:
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["code"] == "validation_error"
    assert field in body["details"], body


@pytest.mark.parametrize("password", ["correct" + SURROGATE + "horse", "correct" + NUL + "horse"])
def test_a_login_password_with_a_surrogate_or_nul_is_a_400(client, user, password):
    response = client.post("/api/v1/auth/login", data=json.dumps({
        "email": "user@example.test", "password": password}), content_type="application/json")
    _assert_refused(response, "password")


# (method, path, body without the bad field, the field, whether it is free text)
FIELDS = [
    ("POST", "/auth/register", {"email": "new@example.test", "password": PASSWORD},
     "display_name", False),
    ("POST", "/orgs", {}, "name", False),
    ("PATCH", "/orgs/{org}", {}, "name", False),
    ("POST", "/orgs/{org}/teams", {"name": "Ops"}, "description", True),
    ("POST", "/orgs/{org}/teams", {}, "name", False),
    ("PATCH", "/orgs/{org}/teams/{team}", {}, "name", False),
    ("PATCH", "/orgs/{org}/teams/{team}", {}, "description", True),
    ("POST", "/orgs/{org}/teams/{team}/api-keys", {"scopes": ["team.view"]}, "name", False),
    ("POST", "/orgs/{org}/teams/{team}/webhooks", {"events": ["email.received"]}, "url", False),
    ("POST", "/orgs/{org}/invites", {"role": "member"}, "email", False),
    ("POST", "/orgs/{org}/domains", {"domain_name": "night.example.com"}, "description", True),
    ("PATCH", "/orgs/{org}/domains/{domain}", {}, "description", True),
]
VALUES = {"name": "Night shift", "display_name": "Night shift", "description": "Night shift",
          "url": "https://hooks.example.com/in", "email": "night@example.test"}


@pytest.mark.parametrize(("method", "path", "body", "field", "free_text"), FIELDS,
                         ids=[f"{m} {p} {f}" for m, p, _, f, _ in FIELDS])
def test_control_characters_and_surrogates_are_a_400_naming_the_field(
        client, mail_world, method, path, body, field, free_text):
    value = VALUES[field]
    for bad in (NUL, SURROGATE, "\x1b", "\x7f", "\x85"):
        response = _send(client, mail_world, method, path,
                         {**body, field: value[:5] + bad + value[5:]})
        _assert_refused(response, field)
        assert f"U+{ord(bad):04X}" in response.get_json()["details"][field][0]


@pytest.mark.parametrize(("method", "path", "body", "field", "free_text"), FIELDS,
                         ids=[f"{m} {p} {f}" for m, p, _, f, _ in FIELDS])
def test_tab_and_line_breaks_are_kept_in_free_text_and_refused_in_one_line_fields(
        client, mail_world, method, path, body, field, free_text):
    response = _send(client, mail_world, method, path, {**body, field: "Night\tshift\r\nrota"})
    if free_text:
        assert response.status_code in (200, 201), response.get_json()
        assert response.get_json()[field] == "Night\tshift\r\nrota"
    else:
        _assert_refused(response, field)


def test_settings_keys_are_one_line_strings(client, mail_world):
    response = _send(client, mail_world, "PATCH", "/orgs/{org}/teams/{team}",
                     {"settings": {"inbox_default_ttl" + NUL: "1h"}})
    _assert_refused(response, "settings")


SEARCHES = [("/inboxes", "q"), ("/orgs/{org}/teams/{team}/inboxes", "q"),
            ("/inboxes/{inbox}/emails", "q"), ("/orgs/{org}/members/search", "q"),
            ("/orgs/{org}/domains", "q"), ("/files", "key")]


@pytest.mark.parametrize(("path", "name"), SEARCHES, ids=[path for path, _ in SEARCHES])
def test_control_characters_in_a_query_string_are_a_400(client, runtime, mail_world, path, name):
    with runtime.db.transaction() as session:
        mail_world.ids["inbox"] = make_inbox(session, runtime.settings, mail_world).id
    for bad in ("a%00b", "a%1Bb", "a%0Ab"):  # NUL, escape, newline
        response = client.get(f"{mail_world.path(path)}?{name}={bad}",
                              headers=mail_world.headers["owner"])
        _assert_refused(response, name)


class _Probe(Schema):
    line = Line()
    text = Text()
    email = Email()


def _refusal(field: str, value: str) -> str | None:
    """The message `field` gives for `value`, or None when it takes it."""
    try:
        _Probe().load({field: value})
    except ValidationError as exc:
        return exc.messages[field][0]
    return None


@pytest.mark.parametrize("field", ["line", "text"])
@pytest.mark.parametrize(("char", "code"), [
    ("\x00", "U+0000"), ("\x07", "U+0007"), ("\x1b", "U+001B"), ("\x7f", "U+007F"),
    ("\x85", "U+0085"), ("\x9f", "U+009F"), ("\udc80", "U+DC80"), ("\ud800", "U+D800")])
def test_nul_controls_and_unpaired_surrogates_are_refused_naming_the_code_point(field, char,
                                                                                 code):
    message = _refusal(field, "ab" + char + "cd")
    assert message is not None and message.startswith(code)


@pytest.mark.parametrize("char", ["\t", "\n", "\r", "\u2028", "\u2029"])
def test_tab_and_line_breaks_are_free_text_not_one_line(char):
    assert _refusal("text", "one" + char + "two") is None
    assert _refusal("line", "one" + char + "two") is not None


def test_any_other_character_is_taken_a_surrogate_pair_as_the_character_it_encodes():
    decoded = json.loads('"caf\\u00e9 \\u2603 \\ud83d\\ude00 \\u200d \\u00a0 \\ufffd"')
    assert _refusal("line", decoded) is None and _refusal("text", decoded) is None


def test_an_email_is_a_line_with_the_email_syntax():
    assert _refusal("email", "a@example.test") is None
    assert _refusal("email", "a\x00@example.test").startswith("U+0000")
    assert _refusal("email", "not an address") == "Not a valid email address."


def _request_schemas(app: Flask, location: str | None = None) -> Iterator[tuple[str, Schema]]:
    """(endpoint and method, schema) of every @arguments of every route of `app` (of those
    loaded from `location` when given: "json", "query")."""
    for endpoint, view in app.view_functions.items():
        view_class: Any = getattr(view, "view_class", None)
        handlers = [getattr(view_class, method.lower()) for method in
                    getattr(view_class, "methods", None) or ()] or [view]
        for handler in handlers:
            documented = getattr(handler, "_apidoc", {}).get("arguments", {})
            for parameter in documented.get("parameters", []):
                if location not in (None, parameter["in"]):
                    continue
                schema = parameter["schema"]
                yield (f"{endpoint} {handler.__name__}",
                       schema() if isinstance(schema, type) else schema)


def _fields_of(schema: Schema, where: str, kind: type[fields.Field] = fields.String
               ) -> Iterator[tuple[str, fields.Field]]:
    """Every field of `schema` that loads a `kind` (a string by default), nested ones included,
    with its path."""
    pending: list[tuple[str, Any]] = [(f"{where}.{name}", field)
                                      for name, field in schema.fields.items()]
    while pending:
        path, field = pending.pop()
        if isinstance(field, kind):
            yield path, field
        elif isinstance(field, fields.Nested):
            pending.extend((f"{path}.{name}", inner) for name, inner in
                           field.schema.fields.items())
        elif isinstance(field, fields.List):
            pending.append((f"{path}[]", field.inner))
        elif isinstance(field, fields.Dict):
            pending.extend((f"{path}{{{part}}}", inner) for part, inner in
                           (("key", field.key_field), ("value", field.value_field)) if inner)


def test_every_string_a_request_schema_loads_is_a_text_field(app):
    schemas = list(_request_schemas(app))
    assert len(schemas) > 50  # the walk reaches the API's schemas
    found = [(path, field) for where, schema in schemas
             for path, field in _fields_of(schema, where)]
    assert any(path.endswith("teams.Teams post.name") for path, _ in found)
    # The SSO callback is a browser navigation: it takes plain strings and answers every bad
    # value with a redirect (models.sso.signin refuses what is too long or not printable, and
    # shows the provider's error only when it is an OAuth error code).
    callback = tuple(f"sso.SsoCallback get.{name}" for name in ("state", "code", "error"))
    assert [path for path, field in found
            if not isinstance(field, Text) and not path.endswith(callback)] == []


def test_every_boolean_a_json_body_loads_is_a_json_boolean(app):
    # marshmallow's Boolean took 1 and "true" for true: PATCH /admin/users/:id granted system
    # administration for `"is_system_admin": 1`, and `is_read: 0` marked an e-mail unread.
    # A query string has no JSON types, so its booleans stay marshmallow's.
    schemas = list(_request_schemas(app, "json"))
    found = [(path, field) for where, schema in schemas
             for path, field in _fields_of(schema, where, fields.Boolean)]
    assert any(path.endswith("admin.UserById patch.is_system_admin") for path, _ in found)
    assert [path for path, field in found if not isinstance(field, JsonBoolean)] == []
