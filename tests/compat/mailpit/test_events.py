"""Mailpit's live events (`/api/events`, compat.mailpit.events) on a real server, with a plain
WebSocket client as Mailpit's web UI opens it (no published npm client speaks it: `mailpit-ws`
is not on the registry, and `mailpit-api` has no events) and mail arriving over real SMTP:
each new message of the scope comes as `{"Type": "new", "Data": <summary>}`, the summary the
list shows, followed by the scope's `stats`; each change of its mail, made through this face or
the native API, as Mailpit's `update`, `delete`, `truncate` or `prune` with `stats`; another
tenant's mail and changes never come; a caller without a key, or of another scope, is refused
before the upgrade."""

from __future__ import annotations

import base64
import json
import smtplib
from contextlib import closing

import pytest
import requests
import websocket
from sqlalchemy import select

import burnbox
from models.mail import emails as mail
from models.mail.entities import Email
from tests.compat.mailpit.conftest import SUBJECT, Scoped
from tests.factories.mail import make_inbox, message


def _basic(key: str) -> str:
    return "Basic " + base64.b64encode(f"ci:{key}".encode()).decode()


def _events_url(scoped: Scoped, inbox_id: object = None, *, scope: str = "") -> str:
    base = scoped.service.base.replace("http", "ws", 1)
    scope = scope or f"inboxes/{inbox_id or scoped.service.inbox.id}"
    return f"{base}/compat/mailpit/{scope}/api/events"


def _listen(url: str, key: str) -> websocket.WebSocket:
    return websocket.create_connection(url, timeout=10, header=[f"Authorization: {_basic(key)}"])


def _next(ws: websocket.WebSocket, count: int = 2) -> list[tuple[str, object]]:
    """The next `count` events, as (Type, Data)."""
    return [(event["Type"], event["Data"]) for event in
            (json.loads(ws.recv()) for _ in range(count))]


def _stats(total: int, unread: int) -> tuple[str, object]:
    return "stats", {"Total": total, "Unread": unread, "Version": burnbox.__version__}


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
        (kind, data), stats = _next(ws)
    assert kind == "new"
    listed = requests.get(f"{scoped.url}/api/v1/messages", auth=("ci", scoped.key),
                          timeout=10).json()["messages"]
    assert data == listed[0]
    assert listed[0]["Subject"] == SUBJECT
    assert stats == _stats(1, 1)


def test_each_change_of_the_scopes_mail_by_any_face_comes_as_mailpits_event(
        scoped: Scoped, outsider, committed_runtime):
    api = f"{scoped.url}/api/v1"
    auth = ("ci", scoped.key)
    with closing(_listen(_events_url(scoped), scoped.key)) as ws:
        scoped.send(rich=False)
        scoped.send(rich=False)
        _next(ws, 4)
        first, second = (summary["ID"] for summary in
                         requests.get(f"{api}/messages", auth=auth, timeout=10).json()["messages"])
        # Another tenant's change is never announced here.
        with smtplib.SMTP(*scoped.service.smtp, timeout=10) as smtp:
            smtp.sendmail("app@shop.example", [outsider.full_address],
                          message(outsider.full_address, subject="Not yours"))
        with committed_runtime.db.transaction() as session:
            foreign = session.scalar(select(Email.id).where(Email.inbox_id == outsider.id))
            mail.set_read(session, session.get(Email, foreign), True)

        assert requests.put(f"{api}/messages", json={"IDs": [first], "Read": True}, auth=auth,
                            timeout=10).text == "ok"
        assert _next(ws) == [("update", {"ID": first, "Read": True}), _stats(2, 1)]
        assert scoped.native("PATCH", f"/emails/{first}", json={"is_read": False}).ok
        assert _next(ws) == [("update", {"ID": first, "Read": False}), _stats(2, 2)]
        assert requests.put(f"{api}/tags", json={"IDs": [first], "Tags": ["Signup"]},
                            auth=auth, timeout=10).ok
        assert _next(ws, 1) == [("update", {"ID": first, "Tags": ["Signup"]})]
        assert requests.put(f"{api}/messages", json={"Read": True}, auth=auth, timeout=10).ok
        assert _next(ws, 1) == [_stats(2, 0)]
        assert requests.delete(f"{api}/messages", json={"IDs": [second]}, auth=auth,
                               timeout=10).text == "ok"
        assert _next(ws) == [("delete", {"ID": second}), _stats(1, 0)]
        scoped.send(rich=False)
        _next(ws)
        assert requests.delete(f"{api}/messages", auth=auth, timeout=10).text == "ok"
        assert _next(ws) == [("truncate", None), _stats(0, 0)]


def test_a_catch_all_scope_hears_each_of_its_inboxes_and_truncates_once_all_are_empty(
        scoped: Scoped, committed_runtime):
    world = scoped.service.world
    with committed_runtime.db.transaction() as session:
        second = make_inbox(session, committed_runtime.settings, world)
    scope = f"catch-all/{world.ids['assignment']}"
    with closing(_listen(_events_url(scoped, scope=scope), scoped.key)) as ws:
        scoped.send(rich=False)
        scoped.send(rich=False, to=second.full_address)
        assert [kind for kind, _ in _next(ws, 4)] == ["new", "stats", "new", "stats"]
        assert scoped.native("DELETE", f"/inboxes/{second.id}/emails").ok
        assert _next(ws) == [("prune", None), _stats(1, 1)]
        assert scoped.native("POST", f"/inboxes/{scoped.service.inbox.id}/emails/mark-all-read"
                             ).ok
        assert _next(ws, 1) == [_stats(1, 0)]
        assert scoped.native("DELETE", f"/inboxes/{scoped.service.inbox.id}/emails").ok
        assert _next(ws) == [("truncate", None), _stats(0, 0)]


def test_a_caller_without_a_key_or_of_another_scope_is_refused(scoped: Scoped, outsider):
    for url, headers, status in (
            (_events_url(scoped), [], 401),
            (_events_url(scoped, outsider.id), [f"Authorization: {_basic(scoped.key)}"], 404),
            (_events_url(scoped), [f"Authorization: {_basic(scoped.key)}",
                                   "Origin: https://elsewhere.example"], 403)):
        with pytest.raises(websocket.WebSocketBadStatusException) as failed:
            websocket.create_connection(url, timeout=10, header=headers)
        assert failed.value.status_code == status
