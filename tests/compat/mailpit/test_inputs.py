"""Bad input to the Mailpit face: ids, tags, queries and bodies with a NUL, a lone surrogate,
10 kB, the wrong types, or another tenant's ids. Each is answered in Mailpit's shape (a
plain-text 4xx), never a 5xx, and changes nothing; "delete all" with an unreadable body (which
Mailpit reads as everything) stays inside the scope. Also the catch-all scope's paths."""

from __future__ import annotations

import base64

import pytest
from sqlalchemy import func, select

from models.mail.entities import Email
from tests.apikey_helpers import make_key
from tests.factories.mail import make_email, make_inbox

BAD = ["x%00y", "%ED%A0%80", "a" * 10_000, "not-an-id"]


@pytest.fixture
def world(runtime, client, mail_world):
    """Two inboxes of team T (two e-mails in the first), one of the other org; a key."""
    with runtime.db.transaction() as session:
        first = make_inbox(session, runtime.settings, mail_world)
        second = make_inbox(session, runtime.settings, mail_world)
        foreign = make_inbox(session, runtime.settings, mail_world, role="outsider",
                             assignment="other_assignment")
    ids = {"first": [make_email(runtime, first.full_address, subject=f"mail {n}")
                     for n in range(2)],
           "second": [make_email(runtime, second.full_address)],
           "foreign": [make_email(runtime, foreign.full_address)]}
    key = make_key(client, mail_world, scopes=["team.emails.view", "team.emails.manage"])
    token = base64.b64encode(f"ci:{key['raw_key']}".encode()).decode()
    return {"base": f"/compat/mailpit/inboxes/{first.id}", "ids": ids, "first": first,
            "headers": {"Authorization": f"Basic {token}"},
            "catch_all": f"/compat/mailpit/catch-all/{mail_world.ids['assignment']}"}


def _state(runtime):
    with runtime.db.session() as session:
        return sorted((str(row.id), row.is_read, tuple(row.tags)) for row in session.execute(
            select(Email.id, Email.is_read, Email.tags)))


def _plain_4xx(answer, status=None):
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.get_data()[:200])
    assert answer.mimetype == "text/plain", answer.mimetype
    if status is not None:
        assert answer.status_code == status


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_message_id_is_mailpits_404_and_changes_nothing(client, runtime, world, bad):
    before = _state(runtime)
    for path in (f"/api/v1/message/{bad}", f"/api/v1/message/{bad}/headers",
                 f"/api/v1/message/{bad}/raw", f"/api/v1/message/{bad}/part/1",
                 f"/view/{bad}.html", f"/view/{bad}.txt"):
        answer = client.get(world["base"] + path, headers=world["headers"])
        _plain_4xx(answer, 404)
    assert _state(runtime) == before


def test_another_tenants_or_scopes_message_is_not_there(client, runtime, world):
    before = _state(runtime)
    for other in (world["ids"]["foreign"][0], world["ids"]["second"][0]):
        answer = client.get(f"{world['base']}/api/v1/message/{other}", headers=world["headers"])
        assert (answer.status_code, answer.get_data(as_text=True)) == (404, "404 page not found")
        for method, path, body in (
                ("PUT", "/api/v1/messages", {"IDs": [str(other)], "Read": True}),
                ("DELETE", "/api/v1/messages", {"IDs": [str(other)]}),
                ("PUT", "/api/v1/tags", {"IDs": [str(other)], "Tags": ["x"]})):
            done = client.open(world["base"] + path, method=method, json=body,
                               headers=world["headers"])
            assert (done.status_code, done.get_data(as_text=True)) == (200, "ok")
    assert _state(runtime) == before


@pytest.mark.parametrize("body", [
    b"", b"not json", b"[]", b'"IDs"', b'{"IDs": "x"}', b'{"Read": "yes"}', b'{"Search": 5}',
    b'{"IDs": [1]}', b'{"IDs": ["a"], "Search": "b"}', b"[" * 10_000 + b"]" * 10_000,
    b'{"Search": "subject:\\"never closed"}', b'{"Search": "bcc:x"}',
    b'{"Search": "a\\u0000b"}', b'{"Search": "\\ud800"}'])
def test_an_unreadable_mark_body_is_a_400_and_changes_nothing(client, runtime, world, body):
    before = _state(runtime)
    answer = client.put(world["base"] + "/api/v1/messages", data=body,
                        headers={**world["headers"], "Content-Type": "application/json"})
    _plain_4xx(answer, 400)
    assert _state(runtime) == before


@pytest.mark.parametrize("body", [b"", b"not json", b'{"IDs": "x"}', b'{"IDs": [null]}', b"[1]"])
def test_an_unreadable_delete_body_deletes_all_of_the_scope_only(client, runtime, world, body):
    answer = client.delete(world["base"] + "/api/v1/messages", data=body,
                           headers={**world["headers"], "Content-Type": "application/json"})
    assert (answer.status_code, answer.get_data(as_text=True)) == (200, "ok")
    with runtime.db.session() as session:
        left = session.scalar(select(func.count()).select_from(Email))
    assert left == 2  # the second inbox's and the other org's


# A lone surrogate's bytes (%ED%A0%80) are not UTF-8: the query reads them as U+FFFD.
@pytest.mark.parametrize("query", ["a%00b", "subject:%22open", "larger:huge", "bcc:a",
                                   "before:yesterday", "x" * 10_000, "%ED%A0%80"])
def test_a_bad_search_is_a_400_and_a_long_one_finds_nothing(client, runtime, world, query):
    before = _state(runtime)
    for method in ("GET", "DELETE"):
        answer = client.open(f"{world['base']}/api/v1/search?query={query}", method=method,
                             headers=world["headers"])
        if query.startswith(("xxx", "%ED")):
            assert answer.status_code == 200
        else:
            _plain_4xx(answer, 400)
    assert _state(runtime) == before


@pytest.mark.parametrize("tags", [["a\x00b"], ["\ud800"], ["x" * 10_000], [5], "x",
                                  ["t"] * 10_000])
def test_bad_tags_are_a_400_and_change_nothing(client, runtime, world, tags):
    before = _state(runtime)
    answer = client.put(world["base"] + "/api/v1/tags", headers=world["headers"],
                        json={"IDs": [str(world["ids"]["first"][0])], "Tags": tags})
    _plain_4xx(answer, 400)
    assert _state(runtime) == before


@pytest.mark.parametrize("tag", BAD)
def test_a_bad_tag_in_the_path_changes_nothing(client, runtime, world, tag):
    before = _state(runtime)
    for method, body in (("PUT", {"Name": "renamed"}), ("DELETE", None)):
        answer = client.open(f"{world['base']}/api/v1/tags/{tag}", method=method, json=body,
                             headers=world["headers"])
        assert answer.status_code < 500 and answer.mimetype == "text/plain"
    assert _state(runtime) == before


@pytest.mark.parametrize("name", ["", "a\x00b", "x" * 10_000, 5])
def test_a_bad_new_tag_name_is_a_400(client, runtime, world, name):
    client.put(world["base"] + "/api/v1/tags", headers=world["headers"],
               json={"IDs": [str(world["ids"]["first"][0])], "Tags": ["old"]})
    before = _state(runtime)
    answer = client.put(f"{world['base']}/api/v1/tags/old", json={"Name": name},
                        headers=world["headers"])
    _plain_4xx(answer, 400)
    assert _state(runtime) == before


def test_bad_paging_numbers_are_mailpits_defaults(client, world):
    for query in ({"start": "-5", "limit": "x"}, {"start": "a" * 10_000, "limit": "-1"},
                  {"start": "0", "limit": "0"}, {"before": "\x00"}):
        answer = client.get(world["base"] + "/api/v1/messages", query_string=query,
                            headers=world["headers"])
        assert answer.status_code == 200
        assert answer.get_json()["start"] == 0
        assert len(answer.get_json()["messages"]) == 2


@pytest.mark.parametrize("body", [{"From": "x"}, {"From": {"Email": 5}}, {"To": "x"},
                                  {"From": {"Email": "a@b.example"}, "Attachments": [{}]},
                                  {"From": {"Email": "a@b.example"}, "Subject": "\ud800"},
                                  {"From": {"Email": "a\x00@b.example"}}])
def test_a_bad_send_body_is_mailpits_json_400(client, runtime, mail_world, world, body):
    key = make_key(client, mail_world, scopes=["team.emails.view", "team.inboxes.manage"])
    token = base64.b64encode(f"ci:{key['raw_key']}".encode()).decode()
    before = _state(runtime)
    answer = client.post(world["base"] + "/api/v1/send", json=body,
                         headers={"Authorization": f"Basic {token}"})
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert set(answer.get_json()) == {"Error"}
    assert _state(runtime) == before


def test_the_catch_all_scope_lists_every_inbox_of_its_assignment(client, world):
    answer = client.get(world["catch_all"] + "/api/v1/messages", headers=world["headers"])
    assert answer.status_code == 200
    body = answer.get_json()
    assert (body["total"], body["messages_count"]) == (3, 3)
    mine = {str(i) for i in world["ids"]["first"] + world["ids"]["second"]}
    assert {m["ID"] for m in body["messages"]} == mine
    send = client.post(world["catch_all"] + "/api/v1/send", headers=world["headers"],
                       json={"From": {"Email": "a@b.example"}})
    assert send.status_code in (400, 403)


def test_probes_answer_without_credentials(client, world):
    for path in ("/livez", "/readyz"):
        answer = client.get(world["base"] + path)
        assert (answer.status_code, answer.get_data()) == (200, b"")
    assert client.get(world["base"] + "/api/v1/messages").status_code == 401


def test_the_doubled_slash_before_view_is_tolerated(client, world):
    """Clients that join a base URL ending in "/" with "/view/..." ask for "//view/": it is
    answered in place, as the one-slash page is, and refused as it is."""
    email_id = world["ids"]["first"][0]
    # The text page, and the HTML page of a message without HTML (Mailpit's 404).
    for page, status in ((f"/view/{email_id}.txt", 200), (f"/view/{email_id}.html", 404)):
        single = client.get(world["base"] + page, headers=world["headers"])
        doubled = client.get(f"{world['base']}/{page}", headers=world["headers"])
        assert (doubled.status_code, doubled.data) == (single.status_code, single.data)
        assert single.status_code == status
        assert (doubled.headers.get("Content-Security-Policy")
                == single.headers.get("Content-Security-Policy"))
        assert client.get(f"{world['base']}/{page}").status_code == 401
    assert client.get(f"{world['base']}//view/not-an-id.txt",
                      headers=world["headers"]).status_code == 404
