"""The compat faces' scopes (compat.scopes) through a probe route on the real app: a key as HTTP
Basic's password or as Bearer, 401 without one, one 404 for a scope unknown, malformed or of
another team, 403 for a key lacking the permission; what a scope holds (an inbox, or every inbox
of an assignment) and that its "all" actions never reach beyond it; usage counted as natively."""

from __future__ import annotations

import base64
import uuid

import pytest
from flask import Blueprint, jsonify, request
from sqlalchemy import select

from compat import scopes
from compat.scopes import SCOPE_PATH, CompatError, ScopeRef, authenticate_scope
from models.domains.assignments import DomainAssignment
from models.mail.entities import Email
from tests.apikey_helpers import flush, key_auth, make_key, stored
from tests.factories.domains import make_assignment, make_verified_domain
from tests.factories.mail import make_email, make_inbox
from web.context import db

READ_AND_MANAGE = ["team.emails.view", "team.emails.manage"]


def _probe() -> Blueprint:
    """Routes that do what a face does: authenticate the scope, then list, count or clear."""
    probe = Blueprint("scope_probe", __name__, url_prefix="/compat/probe")
    probe.record_once(scopes.install_converter)

    @probe.errorhandler(CompatError)
    def refused(error: CompatError):
        return error.message, error.status, {**error.headers, "Content-Type": "text/plain"}

    @probe.get(SCOPE_PATH + "/list")
    def listed(kind: str, scope_id: str):
        scope = authenticate_scope(ScopeRef.parse(kind, scope_id), scopes.VIEW)
        session = db()
        total, unread = scope.counts(session)
        ids = [str(i) for i in session.scalars(scope.emails(Email.id))]
        return jsonify(ids=ids, total=total, unread=unread)

    @probe.post(SCOPE_PATH + "/<action>")
    def acted(kind: str, scope_id: str, action: str):
        ref = ScopeRef.parse(kind, scope_id)
        session = db()
        if action == "delete-all":
            changed = authenticate_scope(ref, scopes.MANAGE).delete_all(session)
        elif action in ("read-all", "unread-all"):
            changed = authenticate_scope(ref, scopes.VIEW).mark_all(session, action == "read-all")
        else:
            scope = authenticate_scope(ref, scopes.VIEW)
            scope.authorize(scopes.MANAGE)
            found = scope.find(session, [uuid.UUID(action)])
            scope.delete(session, found)
            changed = len(found)
        return jsonify(changed=changed)

    @probe.route(SCOPE_PATH + "/chaos", methods=["GET", "PUT"])
    def chaos_rules(kind: str, scope_id: str):
        scope = authenticate_scope(ScopeRef.parse(kind, scope_id), scopes.VIEW)
        if request.method == "PUT":
            rules = scope.set_chaos_rules(db(), request.get_json()["rules"])
        else:
            rules = scope.chaos_rules(db())
        return jsonify(rules=[{"stage": rule.stage, "code": rule.code} for rule in rules])

    return probe


@pytest.fixture
def probe_app(make_app):
    app = make_app()
    app.register_blueprint(_probe())
    return app


@pytest.fixture
def probe(probe_app):
    return probe_app.test_client()


@pytest.fixture
def inboxes(runtime, mail_world):
    """Two inboxes of team T through its assignment, one through a second assignment, one of
    the other org's team; an e-mail in each (two in the first)."""
    with runtime.db.transaction() as session:
        first = make_inbox(session, runtime.settings, mail_world)
        second = make_inbox(session, runtime.settings, mail_world)
        domain = make_verified_domain(session, runtime.settings, mail_world.users["owner"],
                                      mail_world.ids["org"])
        team = session.get(DomainAssignment, mail_world.ids["assignment"]).team
        extra = make_assignment(session, runtime.settings, mail_world.users["owner"], team,
                                domain.id)
        mail_world.ids["extra_assignment"] = extra.id
        elsewhere = make_inbox(session, runtime.settings, mail_world,
                               assignment="extra_assignment")
        foreign = make_inbox(session, runtime.settings, mail_world, role="outsider",
                             assignment="other_assignment")
    made = {"first": first, "second": second, "elsewhere": elsewhere, "foreign": foreign}
    for name, inbox in made.items():
        make_email(runtime, inbox.full_address, subject=f"to {name}")
    make_email(runtime, first.full_address, subject="to first again")
    return made


def basic(password: str, user: str = "anyone") -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _key(client, world, scopes_=READ_AND_MANAGE) -> str:
    return make_key(client, world, scopes=scopes_)["raw_key"]


def _email_ids(runtime, inbox) -> set[str]:
    with runtime.db.session() as session:
        return {str(i) for i in session.scalars(select(Email.id)
                                                .where(Email.inbox_id == inbox.id))}


def test_a_key_as_basic_password_or_bearer_reads_the_inbox_scope(client, probe, runtime,
                                                                  mail_world, inboxes):
    key = _key(client, mail_world)
    first = inboxes["first"]
    for headers in (basic(key), basic(key, user=""), key_auth(key)):
        answer = probe.get(f"/compat/probe/inboxes/{first.id}/list", headers=headers)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        body = answer.get_json()
        assert set(body["ids"]) == _email_ids(runtime, first)
        assert (body["total"], body["unread"]) == (2, 2)


@pytest.mark.parametrize("headers", [
    {}, basic("bb_not-a-key"), basic("not-even-prefixed"), {"Authorization": "Basic %%%"},
    {"Authorization": "Bearer bb_not-a-key"}, {"Authorization": "Digest x"}])
def test_no_valid_key_is_a_401_asking_for_basic(probe, inboxes, headers):
    answer = probe.get(f"/compat/probe/inboxes/{inboxes['first'].id}/list", headers=headers)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="Burnbox"'
    assert answer.mimetype == "text/plain"


def test_a_signed_in_users_token_is_not_a_key_here(probe, mail_world, inboxes):
    answer = probe.get(f"/compat/probe/inboxes/{inboxes['first'].id}/list",
                       headers=mail_world.headers["lead"])
    assert answer.status_code == 401


def test_a_revoked_key_is_a_401(client, probe, mail_world, inboxes):
    made = make_key(client, mail_world, scopes=READ_AND_MANAGE)
    revoked = client.delete(mail_world.path(f"/orgs/{{org}}/teams/{{team}}/api-keys/{made['id']}"),
                            headers=mail_world.headers["lead"])
    assert revoked.status_code == 200
    answer = probe.get(f"/compat/probe/inboxes/{inboxes['first'].id}/list",
                       headers=basic(made["raw_key"]))
    assert answer.status_code == 401


def test_unknown_malformed_and_other_teams_scopes_are_one_404(client, probe, mail_world,
                                                               inboxes):
    key = _key(client, mail_world)
    answers = set()
    for kind, scope_id in [("inboxes", inboxes["foreign"].id), ("inboxes", uuid.uuid4()),
                           ("inboxes", "not-a-uuid"), ("inboxes", "a" * 10_000),
                           ("inboxes", "x%00y"), ("inboxes", "%ED%A0%80"),
                           ("catch-all", mail_world.ids["other_assignment"]),
                           ("catch-all", uuid.uuid4()), ("catch-all", inboxes["first"].id)]:
        answer = probe.get(f"/compat/probe/{kind}/{scope_id}/list", headers=basic(key))
        answers.add((answer.status_code, answer.get_data(as_text=True)))
    assert answers == {(404, "Not found")}


def test_a_key_without_the_permission_is_a_403_in_its_own_scope_only(client, probe,
                                                                      mail_world, inboxes):
    key = _key(client, mail_world, ["team.view"])
    mine = probe.get(f"/compat/probe/inboxes/{inboxes['first'].id}/list", headers=basic(key))
    assert mine.status_code == 403
    assert "scope" in mine.get_data(as_text=True)
    theirs = probe.get(f"/compat/probe/inboxes/{inboxes['foreign'].id}/list", headers=basic(key))
    assert theirs.status_code == 404
    reader = _key(client, mail_world, ["team.emails.view"])
    refused = probe.post(f"/compat/probe/inboxes/{inboxes['first'].id}/delete-all",
                         headers=basic(reader))
    assert refused.status_code == 403
    [one] = sorted(_email_ids(client.application.extensions["burnbox"], inboxes["first"]))[:1]
    also_refused = probe.post(f"/compat/probe/inboxes/{inboxes['first'].id}/{one}",
                              headers=basic(reader))
    assert also_refused.status_code == 403


def test_a_catch_all_scope_is_every_inbox_of_its_assignment(client, probe, runtime,
                                                            mail_world, inboxes):
    key = _key(client, mail_world)
    answer = probe.get(f"/compat/probe/catch-all/{mail_world.ids['assignment']}/list",
                       headers=basic(key))
    assert answer.status_code == 200
    body = answer.get_json()
    assert set(body["ids"]) == (_email_ids(runtime, inboxes["first"])
                                | _email_ids(runtime, inboxes["second"]))
    assert (body["total"], body["unread"]) == (3, 3)


def test_delete_all_never_reaches_beyond_the_scope(client, probe, runtime, mail_world,
                                                   inboxes):
    key = _key(client, mail_world)
    cleared = probe.post(f"/compat/probe/inboxes/{inboxes['first'].id}/delete-all",
                         headers=basic(key))
    assert cleared.get_json() == {"changed": 2}
    assert _email_ids(runtime, inboxes["first"]) == set()
    assert len(_email_ids(runtime, inboxes["second"])) == 1
    swept = probe.post(f"/compat/probe/catch-all/{mail_world.ids['assignment']}/delete-all",
                       headers=basic(key))
    assert swept.get_json() == {"changed": 1}
    for name in ("elsewhere", "foreign"):
        assert len(_email_ids(runtime, inboxes[name])) == 1, name


def test_an_email_of_another_scope_is_not_found_in_this_one(client, probe, runtime,
                                                            mail_world, inboxes):
    key = _key(client, mail_world)
    [other] = _email_ids(runtime, inboxes["second"])
    answer = probe.post(f"/compat/probe/inboxes/{inboxes['first'].id}/{other}",
                        headers=basic(key))
    assert answer.get_json() == {"changed": 0}
    assert _email_ids(runtime, inboxes["second"]) == {other}


def test_marking_all_keeps_the_inboxes_counters(client, probe, runtime, mail_world, inboxes):
    key = _key(client, mail_world)
    scope = f"/compat/probe/catch-all/{mail_world.ids['assignment']}"
    assert probe.post(scope + "/read-all", headers=basic(key)).get_json() == {"changed": 3}
    assert probe.get(scope + "/list", headers=basic(key)).get_json()["unread"] == 0
    assert probe.post(scope + "/read-all", headers=basic(key)).get_json() == {"changed": 0}
    assert probe.post(scope + "/unread-all", headers=basic(key)).get_json() == {"changed": 3}
    assert probe.get(scope + "/list", headers=basic(key)).get_json()["unread"] == 3
    foreign = probe.get(f"/compat/probe/inboxes/{inboxes['foreign'].id}/list",
                        headers=basic(_key(client, mail_world)))
    assert foreign.status_code == 404


def test_a_compat_request_counts_in_the_keys_usage(client, probe, runtime, mail_world, inboxes):
    made = make_key(client, mail_world, scopes=READ_AND_MANAGE)
    path = f"/compat/probe/inboxes/{inboxes['first'].id}/list"
    for _ in range(3):
        assert probe.get(path, headers=basic(made["raw_key"])).status_code == 200
    assert probe.get(path.replace(str(inboxes["first"].id), str(uuid.uuid4())),
                     headers=basic(made["raw_key"])).status_code == 404
    flush(runtime)
    assert stored(runtime, made["id"]).request_count == 4


def test_a_compat_request_counts_in_the_keys_rate_limit(client, probe, mail_world, inboxes):
    key = _key(client, mail_world)
    path = f"/compat/probe/inboxes/{inboxes['first'].id}/list"
    first = probe.get(path, headers=basic(key))
    second = probe.get(path, headers=key_auth(key))
    assert int(second.headers["X-RateLimit-Remaining"]) == (
        int(first.headers["X-RateLimit-Remaining"]) - 1)


RULE = {"stage": "rcpt", "action": "reply", "code": 451, "times": 1}


@pytest.mark.parametrize("kind", ["inboxes", "catch-all"])
def test_chaos_rules_need_the_native_routes_permissions(client, probe, mail_world, inboxes,
                                                         kind):
    scope_id = inboxes["first"].id if kind == "inboxes" else mail_world.ids["assignment"]
    path = f"/compat/probe/{kind}/{scope_id}/chaos"
    reader = _key(client, mail_world, ["team.emails.view"])
    assert probe.get(path, headers=basic(reader)).status_code == 403
    manage = ("team.inboxes.manage" if kind == "inboxes" else "team.domains.manage")
    view = ("team.inboxes.view" if kind == "inboxes" else "team.domains.view")
    key = _key(client, mail_world, ["team.emails.view", view, manage])
    assert probe.get(path, headers=basic(key)).get_json() == {"rules": []}
    assert probe.put(path, json={"rules": [RULE]}, headers=basic(key)).status_code == 200
    assert probe.get(path, headers=basic(key)).get_json() == {
        "rules": [{"stage": "rcpt", "code": 451}]}
    viewer = _key(client, mail_world, ["team.emails.view", view])
    assert probe.put(path, json={"rules": []}, headers=basic(viewer)).status_code == 403
