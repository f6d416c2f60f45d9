"""WebSockets over real sockets: the app served by Werkzeug's threaded server (as `burnbox serve`
runs it) and real `websocket-client` connections. Tickets, refusals before the upgrade, the
per-user limit, origins, keep-alive, who may open each stream, messages published on the store
reaching the socket, and mail sent over real SMTP reaching the inbox stream (from mailin right
after its commit, or from the worker's fan-out when mailin could not; never twice) and the
notification stream (through the fan-out)."""

import dataclasses
import json
import time
import uuid

import dramatiq
import pytest
import requests
import websocket
from sqlalchemy import func, select

from mailin.server import MailinThread
from models.delivery import realtime as rt
from models.delivery.realtime import ADMIN_PRESENCE_KEY, publish, user_channel
from models.events import EMAIL_RECEIVED, Event
from tasks import start_worker
from tasks.events import enqueue_events
from tests.factories.identity import auth_headers, make_user
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.processes import wait_until
from tests.web.conftest import Delivering, Live, serving


def _next_of_type(socket, kind):
    """The next message of type `kind` (others, such as the inbox.created notification, are
    skipped); generous timeout: the worker's threads may first sit in the domains' DNS checks."""
    socket.settimeout(30)
    for _ in range(5):
        received = json.loads(socket.recv())
        if received["type"] == kind:
            return received
    pytest.fail(f"no {kind} message")


def _signed_in(runtime, **fields):
    with runtime.db.transaction() as session:
        user = make_user(session, **fields)
        return user, auth_headers(session, runtime.settings, user)


def test_a_ticket_opens_one_socket_and_is_refused_the_second_time(live):
    user, headers = _signed_in(live.runtime)
    ticket = live.ticket(headers)
    assert str(uuid.UUID(ticket)) == ticket
    socket = websocket.create_connection(live.ws_url("notifications", ticket), timeout=5)
    publish(live.runtime.store, user_channel(user.id), "inbox.created", {"title": "hello"})
    assert json.loads(socket.recv()) == {"id": 1, "type": "inbox.created",
                                         "data": {"title": "hello"}}
    socket.close()
    assert live.refusal("notifications", ticket) == 401


def test_bad_missing_and_expired_tickets_are_refused_before_the_upgrade(live):
    _user, headers = _signed_in(live.runtime)
    assert live.refusal("notifications", "not-a-uuid") == 401
    assert live.refusal("notifications", str(uuid.uuid4())) == 401
    assert live.refusal("notifications", "") == 401
    expired = live.ticket(headers)
    time.sleep(2.3)
    assert live.refusal("notifications", expired) == 401
    assert requests.post(f"{live.base}/api/v1/ws/ticket", timeout=5).status_code == 401


def test_an_upgrade_is_counted_by_its_ticket_and_a_refused_ticket_spends_the_ip_budget(
        committed_runtime):
    """An upgrade carries no credential header: counted again in its client IP's anonymous
    bucket, a browser's two sockets a page load spent 60 a minute in 30 reloads (and a
    browser cannot tell a 429 upgrade from a network fault)."""
    runtime = dataclasses.replace(committed_runtime, settings=committed_runtime.settings.replace(
        **{"rate_limits.anonymous": "2/minute"}))
    with serving(runtime) as base:
        live = Live(base, runtime)
        _user, headers = _signed_in(runtime)
        for _ in range(4):  # twice the anonymous budget, each through its counted ticket
            live.connect("notifications", headers).close()
        # A refused ticket spends it, and once it is spent no socket opens from that IP.
        assert [live.refusal("notifications", str(uuid.uuid4())) for _ in range(3)] == [
            401, 401, 429]
        assert live.refusal("notifications", live.ticket(headers)) == 429


def test_a_plain_get_without_the_upgrade_is_a_400(live):
    _user, headers = _signed_in(live.runtime)
    response = requests.get(f"{live.base}/api/v1/ws/notifications",
                            params={"ticket": live.ticket(headers)}, timeout=5)
    assert response.status_code == 400 and response.json()["code"] == "validation_error"


def test_a_user_holds_at_most_five_sockets_and_a_closed_one_frees_its_slot(live):
    _user, headers = _signed_in(live.runtime)
    sockets = [live.connect("notifications", headers) for _ in range(5)]
    assert live.refusal("notifications", live.ticket(headers)) == 429
    sockets.pop().close()
    deadline = time.monotonic() + 5
    while True:  # the server notices the close at once, but asynchronously
        try:
            sockets.append(live.connect("notifications", headers))
            break
        except websocket.WebSocketBadStatusException:
            assert time.monotonic() < deadline, "the closed socket's slot was never freed"
            time.sleep(0.1)
    _other, other_headers = _signed_in(live.runtime)
    live.connect("notifications", other_headers).close()  # the limit is per user
    for socket in sockets:
        socket.close()


def test_origins_other_than_the_service_and_the_allowed_ones_are_refused(live):
    _user, headers = _signed_in(live.runtime)
    assert live.refusal("notifications", live.ticket(headers),
                        origin="https://evil.example") == 403
    for origin in ("https://app.example", live.base, "http://127.0.0.1:8080"):
        live.connect("notifications", headers, origin=origin).close()


def test_an_application_ping_is_answered_with_a_pong(live):
    _user, headers = _signed_in(live.runtime)
    socket = live.connect("notifications", headers)
    socket.send(json.dumps({"type": "ping"}))
    assert json.loads(socket.recv()) == {"type": "pong", "data": {}}
    socket.close()


def test_admin_stats_are_for_system_admins_and_start_with_a_snapshot(live):
    _user, headers = _signed_in(live.runtime)
    assert live.refusal("admin-stats", live.ticket(headers)) == 403
    _admin, admin_headers = _signed_in(live.runtime, is_system_admin=True)
    socket = live.connect("admin-stats", admin_headers)
    first = json.loads(socket.recv())
    # Exactly the object GET /admin/stats answers.
    stats = requests.get(f"{live.base}/api/v1/admin/stats", headers=admin_headers, timeout=5)
    assert first["type"] == "admin.stats" and first["data"] == stats.json()
    assert first["data"]["total_users"] == 2
    assert live.runtime.store.get(ADMIN_PRESENCE_KEY) is not None
    publish(live.runtime.store, rt.ADMIN_STATS_CHANNEL, rt.ADMIN_STATS, {"total_users": 3})
    assert json.loads(socket.recv())["data"] == {"total_users": 3}
    socket.close()


def test_an_unknown_inbox_is_a_404_before_the_upgrade(live):
    _user, headers = _signed_in(live.runtime)
    assert live.refusal(f"inboxes/{uuid.uuid4()}", live.ticket(headers)) == 404


def test_an_inbox_stream_is_for_those_who_may_read_the_inboxs_mail(live):
    with live.runtime.db.transaction() as session:
        world = make_mail_world(session, live.runtime.settings)
        inbox = make_inbox(session, live.runtime.settings, world)  # created by the team member
    path = f"inboxes/{inbox.id}"
    for role in ("outsider", "stranger"):  # another org's owner, a user of no org
        assert live.refusal(path, live.ticket(world.headers[role])) == 404
    assert live.refusal(path, live.ticket(world.headers["org_member"])) == 403
    for role in ("team_member", "lead", "owner"):
        live.connect(path, world.headers[role]).close()


def test_the_streams_document_who_may_open_them(live):
    paths = requests.get(f"{live.base}/api/v1/docs/openapi.json", timeout=5).json()["paths"]
    inbox = paths["/api/v1/ws/inboxes/{inbox_id}"]["get"]
    assert inbox["x-required-permission"] == "team.emails.view"
    assert {"401", "403", "404", "429"} <= set(inbox["responses"])
    assert paths["/api/v1/ws/admin-stats"]["get"]["x-system-admin-only"] is True


def test_mail_received_over_smtp_reaches_the_inbox_stream_as_its_list_item(live, delivering):
    headers = delivering.world.headers["lead"]
    socket = live.connect(f"inboxes/{delivering.inbox.id}", headers)
    delivering.send("Your code is 424242")
    pushed = _next_of_type(socket, "email.received")
    socket.close()
    listed = requests.get(f"{live.base}/api/v1/inboxes/{delivering.inbox.id}/emails",
                          headers=headers, timeout=5).json()["data"]
    assert pushed["data"] == listed[0]
    assert pushed["data"]["subject"] == "Your code is 424242"


def _no_more_messages(socket, kind, seconds=1.0):
    """True when no message of type `kind` comes within `seconds`."""
    socket.settimeout(seconds)
    try:
        while json.loads(socket.recv())["type"] != kind:
            pass
    except websocket.WebSocketTimeoutException:
        return True
    return False


def test_mailin_pushes_new_mail_itself_and_the_fan_out_sends_it_no_second_time(live,
                                                                               monkeypatch):
    """Mailin publishes `email.received` right after its commit, so the socket hears of the
    mail with no worker running. The worker's fan-out publishes it too (the backup for a
    mailin that could not); once it has run, the socket has still had one message."""
    held: list[uuid.UUID] = []
    monkeypatch.setattr(live.runtime.db.handoffs, "events_committed", held.extend)
    with live.runtime.db.transaction() as session:
        world = make_mail_world(session, live.runtime.settings)
        inbox = make_inbox(session, live.runtime.settings, world)
    headers = world.headers["lead"]
    socket = live.connect(f"inboxes/{inbox.id}", headers)
    server = MailinThread(live.runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        Delivering(world, inbox, server.address).send("Pushed by mailin")
    finally:
        server.stop()
    pushed = _next_of_type(socket, "email.received")
    assert pushed["data"]["subject"] == "Pushed by mailin"
    [event_id] = [one for one in held if _event(live, one).name == EMAIL_RECEIVED]
    assert _event(live, event_id).dispatched_at is None  # no worker has seen it yet

    worker = start_worker(dramatiq.get_broker(), threads=2)
    try:
        enqueue_events([event_id])
        wait_until(lambda: _event(live, event_id).dispatched_at is not None, timeout=30)
        assert _no_more_messages(socket, "email.received")
    finally:
        worker.stop()
        socket.close()


def test_the_fan_out_pushes_mail_that_mailin_did_not(live, delivering):
    """Mail stored without mailin's push (here by the store alone; in a deployment, a mailin
    that died between its commit and its publish, or could not reach Redis) still reaches the
    socket, through the worker's fan-out, once."""
    headers = delivering.world.headers["lead"]
    socket = live.connect(f"inboxes/{delivering.inbox.id}", headers)
    make_email(live.runtime, delivering.inbox.full_address, subject="Pushed by the fan-out")
    pushed = _next_of_type(socket, "email.received")
    assert pushed["data"]["subject"] == "Pushed by the fan-out"
    assert _no_more_messages(socket, "email.received")
    socket.close()


def _event(live, event_id):
    with live.runtime.db.transaction() as session:
        event = session.get(Event, event_id)
        session.expunge(event)
        return event


def _fanned_out(live, name):
    """True once an event `name` was recorded and every event recorded is dispatched."""
    with live.runtime.db.session() as session:
        names = dict(session.execute(select(Event.name, func.count()).group_by(Event.name)).all())
        waiting = session.scalar(select(func.count()).select_from(Event)
                                 .where(Event.dispatched_at.is_(None)))
    return name in names and waiting == 0


def test_mail_notifies_the_inbox_creator_on_their_stream_once_they_turn_new_mail_on(
        live, delivering):
    creator = delivering.world.headers["team_member"]
    socket = live.connect("notifications", creator)
    # New mail notifies nobody by default: this e-mail's fan-out runs and tells no one.
    delivering.send("Before: new mail does not notify by default")
    wait_until(lambda: _fanned_out(live, "email.received"), timeout=30)
    turned = requests.patch(f"{live.base}/api/v1/notifications/preferences",
                            json={"email.received": True}, headers=creator, timeout=5)
    assert turned.status_code == 200 and turned.json()["email.received"] is True
    delivering.send("Your code is 424242")
    # The first e-mail message of the stream is the second e-mail's.
    pushed = _next_of_type(socket, "email.received")
    socket.close()
    assert pushed["data"]["data"]["subject"] == "Your code is 424242"
    assert pushed["data"]["data"]["address"] == delivering.inbox.full_address
    stored = requests.get(f"{live.base}/api/v1/notifications", headers=creator,
                          timeout=5).json()["data"]
    assert [notification["id"] for notification in stored] == [pushed["data"]["id"]]
    # Only the creator is told: the lead reads the inbox but did not create it.
    lead = delivering.world.headers["lead"]
    assert requests.get(f"{live.base}/api/v1/notifications", headers=lead,
                        timeout=5).json()["total"] == 0
