"""Mailpit's live events (`/api/events`, compat.mailpit.events) on a real server, with a plain
WebSocket client as Mailpit's web UI opens it and mail arriving over real SMTP: each new
message of the scope comes as `{"Type": "new", "Data": <summary>}`, the summary the list
shows; another tenant's mail never comes; a caller without a key, or of another scope, is
refused before the upgrade."""

from __future__ import annotations

import base64
import json
import smtplib
from contextlib import closing

import pytest
import requests
import websocket

from tests.compat.mailpit.conftest import SUBJECT, Scoped
from tests.factories.mail import make_inbox, message


def _basic(key: str) -> str:
    return "Basic " + base64.b64encode(f"ci:{key}".encode()).decode()


def _events_url(scoped: Scoped, inbox_id: object = None) -> str:
    base = scoped.service.base.replace("http", "ws", 1)
    return f"{base}/compat/mailpit/inboxes/{inbox_id or scoped.service.inbox.id}/api/events"


@pytest.fixture
def outsider(scoped: Scoped, committed_runtime):
    """An inbox of the other org's team."""
    with committed_runtime.db.transaction() as session:
        return make_inbox(session, committed_runtime.settings, scoped.service.world,
                          role="outsider", assignment="other_assignment")


def test_each_new_message_of_the_scope_comes_as_mailpits_new_event(scoped: Scoped, outsider):
    with closing(websocket.create_connection(_events_url(scoped), timeout=10,
                                             header=[f"Authorization: {_basic(scoped.key)}"])
                 ) as ws:
        with smtplib.SMTP(*scoped.service.smtp, timeout=10) as smtp:
            smtp.sendmail("app@shop.example", [outsider.full_address],
                          message(outsider.full_address, subject="Not yours"))
        scoped.send()
        event = json.loads(ws.recv())
    assert event["Type"] == "new"
    listed = requests.get(f"{scoped.url}/api/v1/messages", auth=("ci", scoped.key),
                          timeout=10).json()["messages"]
    assert event["Data"] == listed[0]
    assert event["Data"]["Subject"] == SUBJECT


def test_a_caller_without_a_key_or_of_another_scope_is_refused(scoped: Scoped, outsider):
    for url, headers, status in (
            (_events_url(scoped), [], 401),
            (_events_url(scoped, outsider.id), [f"Authorization: {_basic(scoped.key)}"], 404),
            (_events_url(scoped), [f"Authorization: {_basic(scoped.key)}",
                                   "Origin: https://elsewhere.example"], 403)):
        with pytest.raises(websocket.WebSocketBadStatusException) as failed:
            websocket.create_connection(url, timeout=10, header=headers)
        assert failed.value.status_code == status
