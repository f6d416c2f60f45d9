"""Metrics in the scaled mode, every process for real: two gunicorn workers, `mailin
--processes 2` (each SMTP process with its store process), `worker --processes 2` and the
clock, each serving its own families merged across its processes. After real SMTP mail, its
webhook delivery and a WebSocket, each scrape counts them; the open sessions of SMTP processes
that were killed stop counting."""

import json
import os
import signal
import smtplib
import subprocess

import pytest
import requests
import websocket

from tests.factories.delivery import make_webhook
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.factories.tenancy import OwnedTeam
from tests.metrics_scrape import scrape, value
from tests.processes import (
    BIN,
    ROOT,
    children,
    free_port,
    process_env,
    wait_for_http,
    wait_for_port,
    wait_until,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _start(args, settings, **env):
    environment = process_env(
        BURNBOX_DATABASE__URL=settings.database.url, BURNBOX_REDIS__URL=settings.redis.url,
        BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret, BURNBOX_SMTP__HOSTNAME="mx.test",
        BURNBOX_METRICS__ENABLED="true", BURNBOX_WEBHOOKS__ALLOW_PRIVATE_TARGETS="true",
        BURNBOX_CLOCK__TICK="1s", BURNBOX_CLOCK__OUTBOX_GRACE="2s", **env)
    return subprocess.Popen(args, cwd=ROOT, env=environment, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture
def scaled(committed_runtime):
    """Every process of the Procfile; the URLs of their metrics and their SMTP and HTTP ports."""
    settings = committed_runtime.settings
    web, smtp = free_port(), free_port()
    ports = {name: free_port() for name in ("mailin", "worker", "clock")}
    started = {
        "web": _start([str(BIN / "gunicorn"), "-c", "gunicorn.conf.py", "web:create_app()"],
                      settings, PORT=str(web), WEB_CONCURRENCY="2",
                      BURNBOX_HTTP__HOST="127.0.0.1"),
        "worker": _start([str(BIN / "burnbox"), "worker", "--processes", "2"], settings,
                         BURNBOX_WORKER__METRICS_PORT=str(ports["worker"])),
        "clock": _start([str(BIN / "burnbox"), "clock"], settings,
                        BURNBOX_CLOCK__METRICS_PORT=str(ports["clock"])),
        "mailin": _start([str(BIN / "burnbox"), "mailin", "--processes", "2"], settings,
                         BURNBOX_SMTP__PORT=str(smtp),
                         BURNBOX_SMTP__METRICS_PORT=str(ports["mailin"])),
    }
    urls = {name: f"http://127.0.0.1:{port}/metrics" for name, port in ports.items()}
    urls["web"] = f"http://127.0.0.1:{web}/metrics"
    try:
        for url in urls.values():
            wait_for_http(url)
        wait_for_port(smtp)
        yield urls, web, smtp, started
    finally:
        for process in started.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started.values():
            process.wait(timeout=30)


def test_each_process_shows_its_families_after_mail_a_webhook_and_a_socket(
        committed_runtime, scaled, receiver):
    urls, web, smtp, _started = scaled
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)
        team = OwnedTeam(world.users["owner"], world.ids["org"], world.ids["team"])
        make_webhook(session, team, receiver.url, events=("email.received",))
    headers = world.headers["team_member"]
    ticket = requests.post(f"http://127.0.0.1:{web}/api/v1/ws/ticket", headers=headers,
                           timeout=5).json()["ticket"]
    socket = websocket.create_connection(
        f"ws://127.0.0.1:{web}/api/v1/ws/inboxes/{inbox.id}?ticket={ticket}", timeout=15)
    wait_until(lambda: value(scrape(urls["web"]), "burnbox_websockets_open", stream="inbox") == 1)

    raw = message(inbox.full_address, subject="Counted")
    with smtplib.SMTP("127.0.0.1", smtp, timeout=10) as client:
        refused = client.sendmail("shop@sender.example",
                                  [inbox.full_address, f"nobody@{world.domain}"], raw)
    assert list(refused) == [f"nobody@{world.domain}"]
    assert json.loads(socket.recv())["type"] == "email.received"
    receiver.wait_for(1)

    mailin = scrape(urls["mailin"])
    assert value(mailin, "burnbox_smtp_messages_accepted_total") == 1
    assert value(mailin, "burnbox_smtp_recipients_refused_total", reason="unknown_inbox") == 1
    assert value(mailin, "burnbox_smtp_received_bytes_total") == len(raw)
    assert value(mailin, "burnbox_smtp_data_reply_seconds_count") == 1
    # Recorded by the store process, a child of an SMTP process: its files are merged too.
    assert value(mailin, "burnbox_smtp_commit_batch_size_count") == 1
    assert value(mailin, "burnbox_smtp_sessions_open") == 0

    wait_until(lambda: value(scrape(urls["worker"]), "burnbox_webhook_attempts_total",
                             outcome="2xx", attempt="1") == 1)
    # The attempt is counted when its answer comes; the actor's run once the outcome is
    # recorded and committed, a moment later (mailin hands the attempt over at its commit, so
    # the receiver's wait no longer gives the worker that moment).
    wait_until(lambda: value(scrape(urls["worker"]), "burnbox_actor_runs_total",
                             actor="deliver_webhook", outcome="success") == 1)
    worker = scrape(urls["worker"])
    assert value(worker, "burnbox_webhook_delivery_lag_seconds_count") == 1
    assert value(worker, "burnbox_webhook_deliveries_in_flight") == 0
    # The clock's sweep runs in the worker every outbox_grace (2 s here).
    wait_until(lambda: value(scrape(urls["worker"]), "burnbox_job_last_success_timestamp_seconds",
                             job="sweep_outbox") > 0)
    assert ("burnbox_outbox_oldest_age_seconds", frozenset()) in scrape(urls["worker"])
    assert value(scrape(urls["clock"]), "burnbox_clock_jobs_sent_total", job="sweep_outbox") >= 1

    socket.close()
    wait_until(lambda: value(scrape(urls["web"]), "burnbox_websockets_open", stream="inbox") == 0)
    assert value(scrape(urls["web"]), "burnbox_api_key_authentications_total",
                 outcome="accepted") == 0


def test_the_open_sessions_of_killed_smtp_processes_stop_counting(scaled):
    urls, _web, smtp, started = scaled
    client = smtplib.SMTP("127.0.0.1", smtp, timeout=10)
    client.ehlo()
    wait_until(lambda: value(scrape(urls["mailin"]), "burnbox_smtp_sessions_open") == 1)
    for pid in children(started["mailin"].pid):
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: value(scrape(urls["mailin"]), "burnbox_smtp_sessions_open") == 0)
    client.close()
