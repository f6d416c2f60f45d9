"""MailHog's live streams (compat.mailhog.streams) on a real server with mail arriving over real
SMTP: the v1 EventSource stream and the v2 WebSocket each carry a new message of the scope in
MailHog's shape, never one of another scope, and refuse a caller without a key."""

from __future__ import annotations

import base64
import json
import smtplib
from collections.abc import Iterator
from contextlib import closing

import pytest
import requests
import websocket

from tests.factories.mail import make_inbox, message
from tests.web.conftest import MailService, mail_service

SCOPES = ["team.emails.view"]


@pytest.fixture
def service(committed_runtime) -> Iterator[MailService]:
    with mail_service(committed_runtime) as running:
        yield running


@pytest.fixture
def key(service: MailService) -> str:
    made = requests.post(f"{service.base}/api/v1/orgs/{service.inbox.org_id}/teams/"
                         f"{service.inbox.team_id}/api-keys", headers=service.headers,
                         json={"name": "streams", "scopes": SCOPES}, timeout=10)
    assert made.status_code == 201, made.text
    return made.json()["raw_key"]


@pytest.fixture
def outsider(service: MailService, committed_runtime):
    """An inbox of the other org's team."""
    with committed_runtime.db.transaction() as session:
        return make_inbox(session, committed_runtime.settings, service.world, role="outsider",
                          assignment="other_assignment")


def basic(key: str) -> str:
    return "Basic " + base64.b64encode(f"me:{key}".encode()).decode()


def send(service: MailService, to: str, subject: str) -> None:
    with smtplib.SMTP(*service.smtp, timeout=10) as smtp:
        smtp.sendmail("app@shop.example", [to], message(to, subject=subject))


def next_event(lines: Iterator[str]) -> dict:
    """The next event of an event stream: its `data:` lines joined, as JSON (comments and
    keep-alives skipped)."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data: "):
            data.append(line[len("data: "):])
        elif line == "" and data:
            return json.loads("\n".join(data))
    raise AssertionError("the stream ended")


def test_the_event_stream_carries_each_new_message_of_the_scope_only(
        service: MailService, key: str, outsider):
    scope = f"/compat/mailhog/catch-all/{service.world.ids['assignment']}"
    with requests.get(f"{service.base}{scope}/api/v1/events", stream=True, timeout=10,
                      headers={"Authorization": basic(key)}) as stream:
        assert stream.status_code == 200
        assert stream.headers["Content-Type"] == "text/event-stream"
        lines = stream.iter_lines(decode_unicode=True)
        assert next(lines) == ": stream opened"
        # Mail of another tenant first: the first event must still be the scope's.
        send(service, outsider.full_address, "Not yours")
        send(service, service.inbox.full_address, "Streamed")
        event = next_event(lines)
    assert event["Content"]["Headers"]["Subject"] == ["Streamed"]
    assert event["Raw"]["To"] == [service.inbox.full_address]
    listed = requests.get(f"{service.base}/api/v1/inboxes/{service.inbox.id}/emails",
                          headers=service.headers, timeout=10).json()["data"]
    assert event["ID"] == listed[0]["id"]


def test_the_websocket_sends_each_new_message_of_an_inbox_scope(
        service: MailService, key: str, outsider):
    url = (f"{service.base.replace('http', 'ws', 1)}/compat/mailhog/inboxes/"
           f"{service.inbox.id}/api/v2/websocket")
    with closing(websocket.create_connection(url, timeout=10,
                                             header=[f"Authorization: {basic(key)}"])) as ws:
        send(service, outsider.full_address, "Not yours")
        send(service, service.inbox.full_address, "Live")
        received = json.loads(ws.recv())
    assert received["Content"]["Headers"]["Subject"] == ["Live"]
    assert received["MIME"] is None


def test_both_streams_refuse_a_caller_without_a_key_or_of_another_scope(
        service: MailService, key: str, outsider):
    events = f"{service.base}/compat/mailhog/inboxes/{service.inbox.id}/api/v1/events"
    refused = requests.get(events, timeout=10)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Basic realm="Burnbox"'
    foreign = requests.get(f"{service.base}/compat/mailhog/inboxes/{outsider.id}/api/v1/events",
                           headers={"Authorization": basic(key)}, timeout=10)
    assert foreign.status_code == 404
    ws_base = service.base.replace("http", "ws", 1)
    for path, headers, status in (
            (f"/compat/mailhog/inboxes/{service.inbox.id}", [], 401),
            (f"/compat/mailhog/inboxes/{outsider.id}", [f"Authorization: {basic(key)}"], 404)):
        with pytest.raises(websocket.WebSocketBadStatusException) as failed:
            websocket.create_connection(f"{ws_base}{path}/api/v2/websocket", timeout=10,
                                        header=headers)
        assert failed.value.status_code == status
