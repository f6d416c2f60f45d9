"""An inbox scope's Mailpit list and message reads through the process's cache
(`compat.caches`) on PostgreSQL + Redis, and every time on SQLite: a poll never shows stale
mail or read state, and a message read again, read already, sends no statement at all.
Reading still marks a message read, whoever marked it unread in between."""

from __future__ import annotations

import base64
import json

import pytest

from compat.caches import InboxScopeReads
from tests.apikey_helpers import make_key
from tests.factories.mail import make_email, make_inbox
from tests.statements import recorded


@pytest.fixture
def scope(runtime, client, mail_world):
    """An inbox with two e-mails, its Mailpit base path, Basic headers of a team key, and the
    lead's native headers."""
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    emails = [make_email(runtime, inbox.full_address, subject=f"mail {n}") for n in range(2)]
    key = make_key(client, mail_world, scopes=["team.emails.view", "team.emails.manage"])
    token = base64.b64encode(f"ci:{key['raw_key']}".encode()).decode()
    return {"base": f"/compat/mailpit/inboxes/{inbox.id}", "inbox": inbox, "emails": emails,
            "headers": {"Authorization": f"Basic {token}"},
            "native": mail_world.headers["lead"]}


def _is_read(client, scope, email_id) -> bool:
    return client.get(f"/api/v1/emails/{email_id}", headers=scope["native"]).json["is_read"]


def test_a_polled_list_shows_new_and_deleted_mail_at_once(client, runtime, scope):
    def listed():
        answer = client.get(scope["base"] + "/api/v1/messages", headers=scope["headers"])
        return [item["ID"] for item in json.loads(answer.data)["messages"]]

    first, second = scope["emails"]
    assert listed() == listed() == [str(second), str(first)]
    kept = InboxScopeReads.of(runtime.caches).peek(
        (scope["inbox"].id, ("mailpit listing", 0, 50)))
    assert (kept is not None) == bool(runtime.settings.redis.url)
    new = make_email(runtime, scope["inbox"].full_address, subject="third")
    assert listed() == [str(new), str(second), str(first)]
    assert client.delete(f"/api/v1/emails/{second}", headers=scope["native"]).status_code == 200
    assert listed() == [str(new), str(first)]


def test_reading_marks_read_again_after_an_unmark_and_a_read_again_sends_nothing(
        client, runtime, scope):
    email_id = scope["emails"][0]
    path = f"{scope['base']}/api/v1/message/{email_id}"
    assert client.get(path, headers=scope["headers"]).status_code == 200
    assert _is_read(client, scope, email_id)
    assert client.patch(f"/api/v1/emails/{email_id}", headers=scope["native"],
                        json={"is_read": False}).status_code == 200
    assert client.get(path, headers=scope["headers"]).json["ID"] == str(email_id)
    assert _is_read(client, scope, email_id)
    client.get(path, headers=scope["headers"])
    with recorded(runtime.db.engine) as sent:
        assert client.get(path, headers=scope["headers"]).status_code == 200
    if runtime.settings.redis.url:
        assert sent == []
    else:
        assert sent  # no cache without Redis: read from the database each time


def test_a_listing_names_the_scopes_tags_whether_its_page_holds_every_message_or_not(
        client, scope):
    first, second = scope["emails"]
    for email_id, tags in ((first, ["Zeta", "alpha"]), (second, ["Beta"])):
        assert client.put(f"/api/v1/emails/{email_id}/tags", headers=scope["native"],
                          json={"tags": tags}).status_code == 200
    for query in ("", "?limit=1", "?start=1", "?limit=1&start=1"):
        answer = client.get(scope["base"] + "/api/v1/messages" + query, headers=scope["headers"])
        assert json.loads(answer.data)["tags"] == ["alpha", "Beta", "Zeta"], query
