"""A test suite's loop writes with few round trips: `POST /inboxes` sends at most four SQL
statements, the wait for mail already stored two and `DELETE /inboxes/:id` four, for a JWT
and an API key, plus the credential's own look-up where no Redis caches it (the embedded
shape); with Redis, a create makes two Redis round trips and a delete two. The row locks that
keep the per-domain cap, an alias's address check and the removal of an inbox's objects exact
are among those statements; a random address on a domain without a cap takes no domain lock.

Statements are counted on the engine (`tests.statements.recorded`), as in
tests/web/test_readpath_statements.py."""

from __future__ import annotations

import pytest
from flask import g, request_finished
from psycopg import pq
from sqlalchemy import event
from sqlalchemy.orm import Session

from models.db import READ_ONLY_KEY
from models.domains.domains import Domain
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email
from tests.statements import recorded, redis_round_trips

# The assignment with its team's org and the caller's roles in both (what the permission check
# reads), the inbox (an INSERT that gives way to a holder of its random address: no look for
# one first), its `inbox.created` event and its counter.
CREATE_STATEMENTS = 4
# And what a process keeps between requests with Redis (else one statement each): a create's
# credential and platform settings, a delete's credential.
CREATE_CACHED_READS = 2
# The inbox with the caller's roles, its row lock with its assignment's level, its objects'
# keys, the deletion.
DELETE_STATEMENTS = 4
DELETE_CACHED_READS = 1
# The inbox with the caller's roles, the e-mails waited for; their attachments only for mail
# that has any.
WAIT_STATEMENTS = 2
WAIT_CACHED_READS = 1
LOOP_SCOPES = ["team.view", "team.inboxes.view", "team.inboxes.create", "team.inboxes.manage",
               "team.emails.view"]


@pytest.fixture
def loop(client, mail_world):
    """How the loop's requests authenticate (the lead's JWT, an API key of theirs) and the two
    ways a body names where the inbox goes."""
    key = make_key(client, mail_world, "lead", scopes=LOOP_SCOPES)
    return {
        "auth": {"jwt": mail_world.headers["lead"], "key": key_auth(key["raw_key"])},
        "target": {"assignment": {"domain_assignment_id": str(mail_world.ids["assignment"])},
                   "domain": {"domain": mail_world.domain}},
    }


def _uncached(runtime) -> int:
    """The statements of one read a process keeps between requests with Redis (a credential:
    web.auth; the platform settings: models.platform.settings): none with Redis, else one."""
    return 0 if runtime.settings.redis.url else 1


def _create(client, loop, auth, target="assignment"):
    response = client.post("/api/v1/inboxes", json={**loop["target"][target], "ttl": "10m"},
                           headers=loop["auth"][auth])
    assert response.status_code == 201, response.get_json()
    return response.get_json()["id"]


def _delete(client, loop, auth, inbox_id):
    response = client.delete(f"/api/v1/inboxes/{inbox_id}", headers=loop["auth"][auth])
    assert response.status_code == 200, response.get_json()


@pytest.mark.parametrize("auth", ["jwt", "key"])
@pytest.mark.parametrize("target", ["assignment", "domain"])
def test_creating_an_inbox_sends_at_most_four_statements(client, engine, runtime, loop, auth,
                                                          target):
    _delete(client, loop, auth, _create(client, loop, auth, target))  # fills the caches
    with recorded(engine) as statements:
        _create(client, loop, auth, target)
    limit = CREATE_STATEMENTS + CREATE_CACHED_READS * _uncached(runtime)
    assert len(statements) <= limit, "\n\n".join(statements)


@pytest.mark.parametrize("auth", ["jwt", "key"])
def test_deleting_an_inbox_sends_at_most_four_statements(client, engine, runtime, loop, auth):
    _delete(client, loop, auth, _create(client, loop, auth))
    inbox_id = _create(client, loop, auth)
    with recorded(engine) as statements:
        _delete(client, loop, auth, inbox_id)
    limit = DELETE_STATEMENTS + DELETE_CACHED_READS * _uncached(runtime)
    assert len(statements) <= limit, "\n\n".join(statements)


@pytest.mark.parametrize("auth", ["jwt", "key"])
@pytest.mark.parametrize("attachments", [0, 1])
def test_the_wait_for_stored_mail_sends_at_most_two_statements(client, engine, runtime, loop,
                                                              auth, attachments):
    _delete(client, loop, auth, _create(client, loop, auth))
    inbox_id = _create(client, loop, auth)
    address = client.get(f"/api/v1/inboxes/{inbox_id}",
                         headers=loop["auth"][auth]).get_json()["full_address"]
    make_email(runtime, address, text="Your code is 482913",
               attachments=[("a.txt", "text/plain", b"hi")] * attachments)
    with recorded(engine) as statements:
        response = client.get(f"/api/v1/inboxes/{inbox_id}/emails/wait?timeout=5s",
                              headers=loop["auth"][auth])
    assert response.status_code == 200, response.get_json()
    [email] = response.get_json()["emails"]
    assert [a["filename"] for a in email["attachments"]] == ["a.txt"] * attachments
    limit = WAIT_STATEMENTS + attachments + WAIT_CACHED_READS * _uncached(runtime)
    assert len(statements) <= limit, "\n\n".join(statements)


@pytest.mark.parametrize("scope", ["inbox", "team", "address"])
def test_the_wait_reads_in_a_read_only_session(app, client, runtime, mail_world, loop, scope):
    # No BEGIN and COMMIT round trips on PostgreSQL, and no write lock taken on SQLite, where
    # each wait's BEGIN IMMEDIATE queued behind the mail being committed.
    inbox = client.post("/api/v1/inboxes", json={**loop["target"]["assignment"], "ttl": "10m"},
                        headers=loop["auth"]["jwt"]).get_json()
    make_email(runtime, inbox["full_address"], text="Your code is 482913")
    path = {"inbox": f"/api/v1/inboxes/{inbox['id']}/emails/wait",
            "team": mail_world.path("/orgs/{org}/teams/{team}/emails/wait"),
            "address": f"/api/v1/inboxes/by-address/{inbox['full_address']}/emails/wait"}[scope]
    seen = []

    def note(_sender, **_extra) -> None:
        seen.append(g.db.info.get(READ_ONLY_KEY, False) if "db" in g else None)

    with request_finished.connected_to(note, app):
        response = client.get(f"{path}?timeout=5s", headers=loop["auth"]["jwt"])
    assert response.status_code == 200, response.get_json()
    [email] = response.get_json()["emails"]
    assert email["expires_at"] == inbox["expires_at"]
    assert seen == [True]


@pytest.mark.parametrize("auth", ["jwt", "key"])
def test_the_loop_s_writes_leave_nothing_for_the_unit_of_work_to_flush(client, loop, auth):
    # The create's inbox and every event are written by statements of their own: a flush of
    # one entity cost a request more CPU than its INSERT.
    pending = []

    def note(session, _context, _instances) -> None:
        pending.extend([*session.new, *session.dirty, *session.deleted])

    _delete(client, loop, auth, _create(client, loop, auth))
    event.listen(Session, "before_flush", note)
    try:
        _delete(client, loop, auth, _create(client, loop, auth))
    finally:
        event.remove(Session, "before_flush", note)
    assert pending == []


@pytest.mark.postgres
def test_a_create_sends_its_event_and_its_count_in_one_pipeline(client, engine, loop):
    # Two writes whose results nobody reads: one round trip where they took two.
    sent = []

    def note(conn, _cursor, statement, *_args) -> None:
        if statement.startswith(("INSERT INTO events", "INSERT INTO inbox_counters")):
            status = conn.connection.driver_connection.pgconn.pipeline_status
            sent.append(status != pq.PipelineStatus.OFF)

    event.listen(engine, "before_cursor_execute", note)
    try:
        _create(client, loop, "key")
    finally:
        event.remove(engine, "before_cursor_execute", note)
    assert sent == [True, True]


def _domain_locks(statements):
    return [s for s in statements if "FROM domains" in s and "FOR UPDATE" in s]


@pytest.mark.postgres
def test_the_loop_s_writes_keep_their_row_locks(client, engine, loop):
    # The inbox's row keeps its objects' keys complete against mail committing meanwhile; a
    # random address on a domain without a cap needs no lock of the domain's row.
    with recorded(engine) as created:
        inbox_id = _create(client, loop, "key")
    with recorded(engine) as deleted:
        _delete(client, loop, "key", inbox_id)
    assert _domain_locks(created) == [], created
    assert [s for s in deleted if "FROM inboxes" in s and "FOR UPDATE" in s], deleted


@pytest.mark.postgres
@pytest.mark.parametrize("needs", ["alias", "cap"])
def test_an_alias_or_a_cap_locks_the_domain_s_row(client, engine, runtime, mail_world, loop,
                                                  needs):
    # The domain's row serialises the creations whose checks must hold until the commit: the
    # alias's holder (live: 409; lapsed: removed first) and the cap's count of live inboxes.
    if needs == "cap":
        with runtime.db.transaction() as session:
            session.get(Domain, mail_world.ids["domain"]).settings = {
                "max_inboxes_per_domain": 5}
    body = {**loop["target"]["assignment"], "ttl": "10m"}
    if needs == "alias":
        body["alias"] = "locked"
    with recorded(engine) as created:
        response = client.post("/api/v1/inboxes", json=body, headers=loop["auth"]["key"])
    assert response.status_code == 201, response.get_json()
    assert len(_domain_locks(created)) == 1, created


@pytest.mark.postgres
@pytest.mark.parametrize("step, round_trips", [("create", 2), ("delete", 2)])
def test_the_loop_s_writes_make_few_redis_round_trips(monkeypatch, client, loop, step,
                                                      round_trips):
    # Both: the rate limiter's script, which reads the cache revisions too. A create: the
    # `inbox.created` event's enqueue with the wake-up of an idle worker, one pipeline (a new
    # inbox moves no cache revision: models.caching.is_family_parent). A delete: the revisions
    # it moves.
    _delete(client, loop, "key", _create(client, loop, "key"))
    inbox_id = _create(client, loop, "key") if step == "delete" else None
    sent = redis_round_trips(monkeypatch)
    if step == "create":
        _create(client, loop, "key")
    else:
        _delete(client, loop, "key", inbox_id)
    assert len(sent) == round_trips, sent
