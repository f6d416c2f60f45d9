"""Every state-changing endpoint of the tenancy API writes an audit entry: each is called, on a
fresh world, by a caller allowed to make it (the routes and bodies of the permission tests),
and must leave at least one new entry, in the org it changed."""

import pytest
from sqlalchemy import func, select

from models.platform.audit import AuditEntry
from tests.factories.tenancy import make_world
from tests.tenancy import fill_ids, route_id
from tests.web.test_permissions import ROUTES, SYSTEM_ADMIN

CHANGES = [route for route in ROUTES if route[0] != "GET" and not route[1].endswith("/impact")]
TEAM = "/orgs/{org}/teams/{team}"
# Where the permission tests' call changes nothing (a role set to the one held, restoring a team
# that is not archived, the owner leaving a team they already left, adding someone already a
# member), the call that does: (caller, body or a function of the world giving it, a call made
# first).
REAL_CHANGES = {
    ("POST", "/orgs/{org}/members"): (
        "owner", lambda world: {"email": world.users["stranger"].email, "role": "member"}, None),
    ("PATCH", "/orgs/{org}/members/{user_target}"): ("owner", {"role": "admin"}, None),
    ("PATCH", TEAM + "/members/{user_target}"): ("owner", {"role": "lead"}, None),
    ("POST", TEAM + "/restore"): ("owner", None, ("POST", TEAM + "/archive")),
    ("POST", TEAM + "/leave"): ("team_member", None, None),
}


def _entries(runtime):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(AuditEntry))


@pytest.mark.parametrize("route", CHANGES, ids=route_id)
def test_the_change_writes_an_audit_entry(runtime, client, route):
    method, template, permission, body = route
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    who = "sysadmin" if permission == SYSTEM_ADMIN else "owner"
    who, body, first = REAL_CHANGES.get((method, template), (who, body, None))
    if first:
        assert client.open(world.path(first[1]), method=first[0],
                           headers=world.headers[who]).status_code == 200
    before = _entries(runtime)
    body = body(world) if callable(body) else fill_ids(body, world)
    response = client.open(world.path(template), method=method, json=body,
                           headers=world.headers[who])
    assert response.status_code < 400, response.get_json()
    assert _entries(runtime) > before, f"{method} {template} changed state without an entry"


# The endpoints of team and org resources found by their id: (collection, creation body, the
# calls on the created resource, as (method, suffix, body)).
RESOURCES = [
    (TEAM + "/webhooks", {"url": "https://hooks.example.com/in", "events": ["email.received"]},
     [("PATCH", "", {"is_active": False}), ("DELETE", "", None)]),
    (TEAM + "/api-keys", {"name": "ci", "scopes": ["team.view"]},
     [("PATCH", "", {"name": "renamed"}), ("POST", "/rotate", None), ("DELETE", "", None)]),
    ("/orgs/{org}/domains", {"domain_name": "audited.example.com"},
     [("PATCH", "", {"description": "changed"}), ("DELETE", "", None)]),
]


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda resource: resource[0])
def test_every_change_of_a_resource_writes_an_audit_entry(runtime, client, world, resource):
    collection, body, calls = resource
    headers = world.headers["owner"]
    before = _entries(runtime)
    created = client.post(world.path(collection), json=body, headers=headers)
    assert created.status_code == 201, created.get_json()
    assert _entries(runtime) > before, f"POST {collection} changed state without an entry"
    path = world.path(collection) + "/" + created.get_json()["id"]
    for method, suffix, call_body in calls:
        before = _entries(runtime)
        response = client.open(path + suffix, method=method, json=call_body, headers=headers)
        assert response.status_code < 400, (method, suffix, response.get_json())
        if response.status_code == 201:  # a rotation: the new key is the one to act on next
            path = world.path(collection) + "/" + response.get_json()["id"]
        assert _entries(runtime) > before, f"{method} {collection}/:id{suffix} wrote no entry"
