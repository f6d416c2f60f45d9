"""Resumable streams: every message of an inbox or notification stream carries an id, and a
socket reopened with `since=<id>` gets what was published after it, in order, then the live
messages, with no gap and no duplicate. Real SMTP, the worker's fan-out, real WebSockets."""

import json
import smtplib
import threading
import time

import pytest
import requests
import websocket

from models.delivery.realtime import REPLAY_KEEP, publish, user_channel
from tests.factories.identity import auth_headers, make_user
from tests.factories.mail import message

BURST = 200


def _receive(socket, timeout=60.0):
    socket.settimeout(timeout)
    return json.loads(socket.recv())


def _resume(live, path, headers, since):
    url = f"{live.ws_url(path, live.ticket(headers))}&since={since}"
    return websocket.create_connection(url, timeout=5)


def test_a_socket_closed_mid_burst_resumes_with_no_gap_and_no_duplicate(live, delivering):
    headers = delivering.world.headers["team_member"]
    path = f"inboxes/{delivering.inbox.id}"
    address = delivering.inbox.full_address
    socket = live.connect(path, headers)

    def burst():
        with smtplib.SMTP(*delivering.smtp, timeout=30) as smtp:
            for number in range(BURST):
                smtp.sendmail("shop@sender.example", [address],
                              message(address, subject=f"burst {number:03d}"))

    sender = threading.Thread(target=burst)
    sender.start()
    received = [_receive(socket) for _ in range(BURST // 3)]
    socket.close()  # in the middle of the burst: mail keeps arriving meanwhile
    time.sleep(0.5)
    resumed = _resume(live, path, headers, received[-1]["id"])
    while len(received) < BURST:
        received.append(_receive(resumed))
    sender.join()
    time.sleep(0.5)  # nothing more, not even a duplicate, follows
    resumed.settimeout(0.5)
    with pytest.raises(websocket.WebSocketTimeoutException):
        resumed.recv()
    resumed.close()

    assert [item["id"] for item in received] == list(range(1, BURST + 1))
    assert {item["type"] for item in received} == {"email.received"}
    assert sorted(item["data"]["subject"] for item in received) == [
        f"burst {number:03d}" for number in range(BURST)]
    listed = requests.get(f"{live.base}/api/v1/inboxes/{delivering.inbox.id}/emails",
                          params={"per_page": 1}, headers=headers, timeout=10).json()
    assert listed["total"] == BURST


def _user(live):
    with live.runtime.db.transaction() as session:
        user = make_user(session)
        return user, auth_headers(session, live.runtime.settings, user)


def test_notifications_resume_and_a_stream_without_since_is_live_only(live):
    user, headers = _user(live)
    store, channel = live.runtime.store, user_channel(user.id)
    for number in range(1, 4):
        publish(store, channel, "inbox.created", {"n": number})
    live_only = live.connect("notifications", headers)
    publish(store, channel, "inbox.created", {"n": 4})
    assert _receive(live_only, 5) == {"id": 4, "type": "inbox.created", "data": {"n": 4}}
    live_only.close()

    resumed = _resume(live, "notifications", headers, 1)
    publish(store, channel, "inbox.created", {"n": 5})
    assert [_receive(resumed, 5)["id"] for _ in range(4)] == [2, 3, 4, 5]
    resumed.close()
    caught_up = _resume(live, "notifications", headers, 5)
    publish(store, channel, "inbox.created", {"n": 6})
    assert _receive(caught_up, 5)["data"] == {"n": 6}
    caught_up.close()


def test_a_since_beyond_what_is_kept_says_the_replay_is_incomplete(live):
    user, headers = _user(live)
    store, channel = live.runtime.store, user_channel(user.id)
    for number in range(REPLAY_KEEP + 5):
        publish(store, channel, "inbox.created", {"n": number})
    resumed = _resume(live, "notifications", headers, 2)
    assert _receive(resumed, 5) == {"type": "replay.incomplete", "data": {}}
    assert _receive(resumed, 5)["id"] == 6  # the oldest kept
    resumed.close()
    # A since above the last id: the numbering started again (the store forgot the stream),
    # so everything kept is new to the client.
    other, other_headers = _user(live)
    publish(store, user_channel(other.id), "inbox.created", {"n": 1})
    restarted = _resume(live, "notifications", other_headers, 40)
    assert _receive(restarted, 5)["id"] == 1
    restarted.close()


@pytest.mark.parametrize("since", ["-1", "abc", "1.5", str(2**63)])
def test_a_malformed_since_is_refused_before_the_upgrade(live, since):
    _user_row, headers = _user(live)
    url = f"{live.ws_url('notifications', live.ticket(headers))}&since={since}"
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(url, timeout=5)
    assert refused.value.status_code == 400
