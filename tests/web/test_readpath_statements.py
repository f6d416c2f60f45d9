"""The hot reads send at most four SQL statements each, for a JWT and an API key:
e-mails list and detail, inboxes list and detail, the team, and /auth/me.

Statements are counted on the engine (`tests.statements.recorded`): every query the request
sends, whichever code path sends it, the test runtime's savepoints left out."""

from __future__ import annotations

import pytest
from flask import g, request_finished

from models.db import READ_ONLY_KEY
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email, make_inbox
from tests.statements import recorded, redis_round_trips

MAX_STATEMENTS = 4
READ_SCOPES = ["team.view", "team.inboxes.view", "team.emails.view"]



@pytest.fixture
def reads(client, runtime, mail_world):
    """The world's lead with an inbox holding three e-mails (one with an attachment), and the
    hot read paths with the headers of a JWT and of an API key."""
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="lead")
    for n in range(3):
        email_id = make_email(runtime, inbox.full_address, subject=f"n{n}", attachments=(
            (("photo.png", "image/png", b"\x89PNG"),) if n == 0 else ()))
    key = make_key(client, mail_world, "lead", scopes=READ_SCOPES)
    return {
        "paths": {
            "emails": f"/api/v1/inboxes/{inbox.id}/emails",
            "email": f"/api/v1/emails/{email_id}",
            "inboxes": "/api/v1/inboxes",
            "inbox": f"/api/v1/inboxes/{inbox.id}",
            "team": mail_world.path("/orgs/{org}/teams/{team}"),
        },
        "auth": {"jwt": mail_world.headers["lead"], "key": key_auth(key["raw_key"])},
    }


@pytest.mark.parametrize("auth", ["jwt", "key"])
@pytest.mark.parametrize("read", ["emails", "email", "inboxes", "inbox", "team"])
def test_a_hot_read_sends_at_most_four_statements(client, engine, reads, read, auth):
    path, headers = reads["paths"][read], reads["auth"][auth]
    client.get(path, headers=headers)  # the first request of a process fills its caches
    with recorded(engine) as statements:
        response = client.get(path, headers=headers)
    assert response.status_code == 200, response.get_json()
    assert len(statements) <= MAX_STATEMENTS, "\n\n".join(statements)


def test_auth_me_sends_at_most_four_statements(client, engine, reads):
    headers = reads["auth"]["jwt"]
    client.get("/api/v1/auth/me", headers=headers)
    with recorded(engine) as statements:
        response = client.get("/api/v1/auth/me", headers=headers)
    assert response.status_code == 200, response.get_json()
    assert len(statements) <= MAX_STATEMENTS, "\n\n".join(statements)


@pytest.mark.parametrize("read", ["emails", "email", "inboxes", "inbox", "team", "me"])
def test_a_hot_read_uses_a_read_only_session(app, client, reads, read):
    # Read-only: no BEGIN and ROLLBACK round trips on PostgreSQL (models.db.Database.session).
    path = "/api/v1/auth/me" if read == "me" else reads["paths"][read]
    seen = []

    def note(_sender, **_extra) -> None:
        seen.append(g.db.info.get(READ_ONLY_KEY, False) if "db" in g else None)

    with request_finished.connected_to(note, app):
        assert client.get(path, headers=reads["auth"]["jwt"]).status_code == 200
    assert seen == [True]


@pytest.mark.postgres
@pytest.mark.parametrize("auth", ["jwt", "key"])
def test_a_hot_read_makes_one_redis_round_trip(monkeypatch, client, reads, auth):
    # The rate limiter's script also reads the cache revisions (models.caching), and counts a
    # known key's usage (web.key_usage.write_ahead).
    path, headers = reads["paths"]["emails"], reads["auth"][auth]
    client.get(path, headers=headers)
    sent = redis_round_trips(monkeypatch)
    assert client.get(path, headers=headers).status_code == 200
    assert len(sent) == 1, sent
