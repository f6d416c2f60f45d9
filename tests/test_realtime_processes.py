"""Mail received by a separate `mailin` process reaches inbox sockets held by two separate
gunicorn (gevent) web processes, through a `dramatiq` worker's fan-out and the Redis bridge; a
ticket spent on one web process is refused by the other. A request waiting for e-mail on one
web process wakes for that mail too, and while it sleeps the same (single gevent) worker
answers other requests."""

import json
import os
import signal
import smtplib
import subprocess
import threading
import time

import pytest
import requests
import websocket

from tests.factories.mail import make_inbox, make_mail_world, message
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http, wait_for_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _start(args, settings, **env):
    environment = process_env(
        BURNBOX_DATABASE__URL=settings.database.url, BURNBOX_REDIS__URL=settings.redis.url,
        BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret, BURNBOX_SMTP__HOSTNAME="mx.test",
        **env)
    return subprocess.Popen(args, cwd=ROOT, env=environment, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def processes(committed_runtime):
    """Two web processes, one worker, one mailin; their ports."""
    settings = committed_runtime.settings
    webs, smtp = [free_port(), free_port()], free_port()
    started = [_start([str(BIN / "gunicorn"), "-c", "gunicorn.conf.py", "web:create_app()"],
                      settings, PORT=str(port), WEB_CONCURRENCY="1",
                      BURNBOX_HTTP__HOST="127.0.0.1") for port in webs]
    started.append(_start([str(BIN / "burnbox"), "worker", "--processes", "1"], settings))
    started.append(_start([str(BIN / "burnbox"), "mailin"], settings,
                          BURNBOX_SMTP__PORT=str(smtp)))
    try:
        for port in webs:
            wait_for_http(f"http://127.0.0.1:{port}/healthz")
        wait_for_port(smtp)
        yield webs, smtp
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            process.wait(timeout=30)


def test_mail_from_the_smtp_process_reaches_sockets_on_either_web_process(
        committed_runtime, processes):
    (web_a, web_b), smtp = processes
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)
    headers = world.headers["team_member"]

    def ticket(port):
        response = requests.post(f"http://127.0.0.1:{port}/api/v1/ws/ticket", headers=headers,
                                 timeout=5)
        assert response.status_code == 200, response.text
        return response.json()["ticket"]

    def url(port, value):
        return f"ws://127.0.0.1:{port}/api/v1/ws/inboxes/{inbox.id}?ticket={value}"

    spent = ticket(web_a)
    sockets = [websocket.create_connection(url(web_a, spent), timeout=15),
               websocket.create_connection(url(web_b, ticket(web_b)), timeout=15)]
    with pytest.raises(websocket.WebSocketBadStatusException) as reused:
        websocket.create_connection(url(web_b, spent), timeout=5)
    assert reused.value.status_code == 401

    with smtplib.SMTP("127.0.0.1", smtp, timeout=10) as client:
        client.sendmail("sender@example.org", [inbox.full_address],
                        message(inbox.full_address, subject="Across processes"))
    for socket in sockets:
        received = json.loads(socket.recv())
        assert received["type"] == "email.received"
        assert received["data"]["subject"] == "Across processes"
        assert received["data"]["inbox_id"] == str(inbox.id)
        socket.close()


def test_a_wait_on_a_web_process_wakes_for_mail_received_by_the_smtp_process(
        committed_runtime, processes):
    (web, _other), smtp = processes
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)

    base = f"http://127.0.0.1:{web}/api/v1/inboxes/{inbox.id}"
    answer = {}

    def wait():
        answer["response"] = requests.get(f"{base}/emails/wait", params={"timeout": "30s"},
                                          headers=world.headers["team_member"], timeout=60)

    waiting = threading.Thread(target=wait)
    waiting.start()
    time.sleep(1)  # the request is asleep on its channel by now
    # One gunicorn worker: this answers only if the wait blocks just its own greenlet.
    listed = requests.get(f"{base}/emails", headers=world.headers["team_member"], timeout=10)
    assert listed.status_code == 200 and listed.json()["data"] == []
    assert waiting.is_alive()
    with smtplib.SMTP("127.0.0.1", smtp, timeout=10) as client:
        client.sendmail("sender@example.org", [inbox.full_address],
                        message(inbox.full_address, subject="Waited for"))
    waiting.join()
    response = answer["response"]
    assert response.status_code == 200, response.text
    assert response.json()["timed_out"] is False
    assert [email["subject"] for email in response.json()["emails"]] == ["Waited for"]
