"""Property tests: arbitrary JSON bodies and query strings, sent by real identities to a sample of
endpoints (auth, orgs, teams, webhooks, API keys, invites, inboxes and the searches), never get a
5xx, and every 4xx is the error envelope."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from sqlalchemy import select

from models.mail.entities import Email
from models.mail.tag_entities import Tag
from models.mail.tags import change_email_tags
from tests.factories.mail import make_email, make_inbox
from tests.properties import property_settings

FUZZ = property_settings(50, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# Any code point, with the ones that used to give 500s drawn often: NUL (PostgreSQL refuses it),
# unpaired surrogates (no UTF-8 encoder takes them), other controls and line separators.
TROUBLE = ("\x00", "\udc80", "\ud800", "\x1b", "\x85", "\u2028", "\t", "\n")
strings = st.lists(st.sampled_from(TROUBLE) | st.characters(exclude_categories=()),
                   max_size=30).map("".join)
# Values close to valid ones, so that some requests get past validation into the actions.
SEEDS = ("Night shift", "user@example.test", "https://hooks.example.com/in", "http://①②⑦.⓪.⓪.①",
         "team.view", "email.received", "member", "10.0.0.0/8", "1h", "90m", "YYYY-MM-DD", "any",
         "tag:", "subject:")
near_valid = st.builds(lambda seed, tail: seed + tail, st.sampled_from(SEEDS), strings)
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | strings | near_valid
           | st.sampled_from(SEEDS))
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner,
                                                                          max_size=3),
    max_leaves=8)


def bodies(fields: tuple[str, ...]) -> st.SearchStrategy[bytes]:
    """Request bodies: objects with some of the endpoint's fields (any JSON in each), objects
    with any keys, any JSON document, and bytes that are not JSON at all."""
    values = strings | near_valid | json_values
    own = st.fixed_dictionaries({}, optional={name: values for name in fields})
    documents = own | st.dictionaries(strings, json_values, max_size=3) | json_values
    return documents.map(lambda doc: json.dumps(doc).encode()) | st.binary(max_size=64)


# (method, path, fields of its body, who calls: a role of the mail world, or None for nobody)
BODY_ENDPOINTS = [
    ("POST", "/auth/login", ("email", "password", "use_cookie"), None),
    ("POST", "/auth/register", ("email", "password", "display_name", "invite_token"), None),
    ("PATCH", "/auth/me", ("display_name", "timezone", "date_format", "time_format", "theme"),
     "owner"),
    ("POST", "/orgs", ("name",), "owner"),
    ("PATCH", "/orgs/{org}", ("name",), "owner"),
    ("POST", "/orgs/{org}/teams", ("name", "description"), "owner"),
    ("PATCH", "/orgs/{org}/teams/{team}", ("name", "description", "settings"), "owner"),
    ("POST", "/orgs/{org}/teams/{team}/webhooks", ("url", "events", "is_active"), "owner"),
    ("POST", "/orgs/{org}/teams/{team}/api-keys", ("name", "scopes", "allowed_ips",
                                                   "expires_in"), "lead"),
    ("POST", "/orgs/{org}/invites", ("email", "role", "team_assignments", "auth_method"),
     "owner"),
    ("POST", "/inboxes", ("domain", "alias", "ttl"), "team_member"),
    ("PATCH", "/orgs/{org}/teams/{team}/domains/{domain}",
     ("access_level", "settings", "catch_all"), "owner"),
    ("PUT", "/inboxes/{inbox}/chaos", ("rules",), "owner"),
    ("PUT", "/orgs/{org}/teams/{team}/domains/{domain}/chaos", ("rules",), "owner"),
    ("POST", "/inboxes/{inbox}/smtp-credentials", ("username", "secret"), "owner"),
    ("POST", "/inboxes/{inbox}/messages", ("from", "to", "cc", "subject", "text", "html",
                                           "attachments", "headers", "tags"), "team_member"),
    ("POST", "/emails/{email}/release", ("recipients",), "owner"),
    ("PUT", "/orgs/{org}/release-recipients", ("patterns",), "owner"),
    ("PUT", "/orgs/{org}/teams/{team}/release-recipients", ("patterns",), "owner"),
    ("POST", "/inboxes/{inbox}/release-rules", ("query", "recipients"), "owner"),
    ("POST", "/orgs/{org}/teams/{team}/domains/{domain}/release-rules", ("query", "recipients"),
     "owner"),
    ("PUT", "/emails/{email}/tags", ("tags",), "owner"),
    ("POST", "/emails/{email}/tags", ("tags",), "team_member"),
    ("POST", "/orgs/{org}/teams/{team}/tag-rules", ("query", "tags"), "owner"),
    ("PATCH", "/orgs/{org}/teams/{team}/tags/{tag}", ("name",), "owner"),
]


def _check(response: Any) -> None:
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        assert {"error", "code"} <= set(response.get_json()), response.get_data(as_text=True)


@pytest.fixture
def inbox(runtime, mail_world):
    """A live inbox of team T, named in mail_world.ids["inbox"] for the paths, with an e-mail
    tagged `t` (its ids in "email" and "tag")."""
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    mail_world.ids["inbox"] = inbox.id
    mail_world.ids["email"] = make_email(runtime, inbox.full_address)
    with runtime.db.transaction() as session:
        email = session.get(Email, mail_world.ids["email"])
        change_email_tags(session, email, inbox.team_id, ["t"])
        mail_world.ids["tag"] = session.scalar(select(Tag.id).where(Tag.team_id == inbox.team_id))
    return inbox


@pytest.mark.parametrize(("method", "path", "fields", "who"), BODY_ENDPOINTS,
                         ids=[f"{m} {p}" for m, p, _, _ in BODY_ENDPOINTS])
def test_no_body_gets_a_5xx(client, mail_world, inbox, method, path, fields, who):
    headers = mail_world.headers[who] if who else {}

    @FUZZ
    @given(body=bodies(fields))
    def send(body: bytes) -> None:
        _check(client.open(mail_world.path(path), method=method, headers=headers, data=body,
                           content_type="application/json"))

    send()


# Chaos rules close to valid ones: each field of a rule, with strings, numbers out of every
# bound (NaN, infinities, huge integers) and any JSON.
RULE_FIELDS = ("stage", "action", "code", "status", "text", "delay_seconds", "times", "percent")
rule_values = (st.sampled_from(["rcpt", "data", "reply", "delay", "close", "4.7.1", 451, 550,
                                99, 600, -1, 0, 100, 101, 60, 61, 2**64, float("nan"),
                                float("inf"), 1e308]) | strings | json_values)
rules = st.lists(st.fixed_dictionaries({}, optional=dict.fromkeys(RULE_FIELDS, rule_values)),
                 max_size=3)


@pytest.mark.parametrize("path", ["/inboxes/{inbox}/chaos",
                                  "/orgs/{org}/teams/{team}/domains/{domain}/chaos"])
def test_no_chaos_rule_gets_a_5xx(client, mail_world, inbox, path):
    @FUZZ
    @given(rules=rules)
    def send(rules: list[dict[str, Any]]) -> None:
        _check(client.put(mail_world.path(path), headers=mail_world.headers["owner"],
                          data=json.dumps({"rules": rules}), content_type="application/json"))

    send()


# Path and the query parameters it reads (plus page and per_page, which every list takes).
QUERY_ENDPOINTS = [
    ("/inboxes", ("q", "status")),
    ("/orgs/{org}/teams/{team}/inboxes", ("q", "status")),
    ("/inboxes/{inbox}/emails", ("q",)),
    ("/orgs/{org}/members/search", ("q",)),
    ("/orgs/{org}/domains", ("q", "status")),
    ("/files", ("key",)),
]
query_values = st.binary(max_size=30) | near_valid.map(
    lambda text: text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(("path", "names"), QUERY_ENDPOINTS, ids=[p for p, _ in QUERY_ENDPOINTS])
def test_no_query_string_gets_a_5xx(client, mail_world, inbox, path, names):
    params = st.lists(st.tuples(st.sampled_from((*names, "page", "per_page")), query_values),
                      max_size=3)

    @FUZZ
    @given(params=params)
    def send(params: list[tuple[str, bytes]]) -> None:
        query = "&".join(f"{name}={quote_from_bytes(value, safe='')}" for name, value in params)
        _check(client.get(f"{mail_world.path(path)}?{query}",
                          headers=mail_world.headers["owner"]))

    send()


@pytest.mark.parametrize(("method", "prefix"), [("GET", "/inboxes/by-address/"),
                                               ("DELETE", "/emails/{email}/tags/")])
def test_no_name_in_the_path_gets_a_5xx(client, mail_world, inbox, method, prefix):
    """An address (`by-address`) or a tag name (taking a tag off) of any bytes."""
    @FUZZ
    @given(name=query_values)
    def send(name: bytes) -> None:
        _check(client.open(mail_world.path(prefix) + quote_from_bytes(name, safe=""),
                           method=method, headers=mail_world.headers["owner"]))

    send()
