"""An inbox's page in one call (`GET /inboxes/:id/overview`): each part is what its own
endpoint answers; it is authorized as its parts are (`team.emails.view` and
`team.inboxes.view`, both scopes for a key; another org's inbox is 404); and its
`stream_since` is where the inbox's stream stood before the list was read, so a socket
opened with it is sent what was published after."""

import json

import requests
import websocket

from models.delivery.realtime import inbox_channel, publish
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email, make_inbox, make_mail_world

PATH = "/inboxes/{inbox}/overview"


def test_the_overview_is_each_part_as_its_own_endpoint_answers_it(api, runtime, inbox):
    for subject in ("first", "second", "third"):
        make_email(runtime, inbox.full_address, subject=subject)
    assert api("PUT", "/inboxes/{inbox}/chaos", "lead", json={"rules": [
        {"stage": "rcpt", "action": "reply", "code": 451, "times": 1}]}).status_code == 200
    overview = api("GET", PATH + "?per_page=2&page=1")
    assert overview.status_code == 200, overview.get_json()
    body = overview.get_json()
    assert set(body) == {"inbox", "emails", "chaos", "smtp_credentials", "stream_since"}
    assert body["inbox"] == api("GET", "/inboxes/{inbox}").get_json()
    assert body["emails"] == api("GET", "/inboxes/{inbox}/emails?per_page=2&page=1").get_json()
    assert [email["subject"] for email in body["emails"]["data"]] == ["third", "second"]
    assert body["chaos"] == api("GET", "/inboxes/{inbox}/chaos").get_json()
    assert len(body["chaos"]["rules"]) == 1
    assert body["smtp_credentials"] == api("GET", "/inboxes/{inbox}/smtp-credentials").get_json()
    searched = api("GET", PATH + "?q=subject:first").get_json()["emails"]
    assert [email["subject"] for email in searched["data"]] == ["first"]
    assert api("GET", PATH + "?per_page=0").status_code == 400


def test_stream_since_is_where_the_stream_stood_before_the_list_was_read(api, runtime, inbox):
    assert api("GET", PATH).get_json()["stream_since"] == 0
    for number in range(3):
        publish(runtime.store, inbox_channel(inbox.id), "email.received", {"n": number})
    assert api("GET", PATH).get_json()["stream_since"] == 3


def test_a_socket_opened_at_stream_since_is_sent_what_was_published_after_the_answer(live):
    with live.runtime.db.transaction() as session:
        world = make_mail_world(session, live.runtime.settings)
        inbox = make_inbox(session, live.runtime.settings, world)
    headers, channel = world.headers["team_member"], inbox_channel(inbox.id)
    publish(live.runtime.store, channel, "email.received", {"n": "before"})
    answer = requests.get(f"{live.base}/api/v1/inboxes/{inbox.id}/overview", headers=headers,
                          timeout=5)
    since = answer.json()["stream_since"]
    publish(live.runtime.store, channel, "email.received", {"n": "between"})
    url = live.ws_url(f"inboxes/{inbox.id}", live.ticket(headers)) + f"&since={since}"
    socket = websocket.create_connection(url, timeout=5)
    try:
        assert json.loads(socket.recv()) == {"id": 2, "type": "email.received",
                                             "data": {"n": "between"}}
    finally:
        socket.close()


def test_the_overview_is_authorized_as_its_parts_are(api, client, mail_world, inbox):
    for who in ("lead", "team_member", "owner"):
        assert api("GET", PATH, who).status_code == 200, who
    for who in ("outsider", "stranger"):  # another org's inbox is not found
        refused = api("GET", PATH, who)
        assert (refused.status_code, refused.get_json()["code"]) == (404, "not_found"), who
    path = mail_world.path(PATH)
    both = make_key(client, mail_world, scopes=["team.inboxes.view", "team.emails.view"])
    assert client.get(path, headers=key_auth(both["raw_key"])).status_code == 200
    # A key that may read the list but not the inbox (or the other way round) gets what the
    # part it lacks would answer.
    for scopes in (["team.emails.view"], ["team.inboxes.view"]):
        key = make_key(client, mail_world, scopes=scopes)
        refused = client.get(path, headers=key_auth(key["raw_key"]))
        assert refused.status_code == 403, scopes
        assert refused.get_json() == {"error": "insufficient scope", "code": "forbidden"}


def test_the_overview_documents_its_parts_and_permission(client):
    operation = client.get("/api/v1/docs/openapi.json").get_json()[
        "paths"]["/api/v1/inboxes/{inbox_id}/overview"]["get"]
    assert operation["x-required-permission"] == "team.emails.view"
    assert "team.inboxes.view" in operation["description"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/InboxOverview"}
    assert {"400", "401", "403", "404"} <= set(operation["responses"])
