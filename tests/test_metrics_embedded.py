"""Metrics in the embedded mode (`burnbox serve`: one process, so /metrics shows every family):
after real SMTP mail, its webhook delivery and a WebSocket on the inbox, each family counts what
happened; the clock, outbox sweep and cleanup record theirs; and after 1,000 distinct inboxes
the label sets stay bounded (route templates, fixed names: no ids, no addresses)."""

from __future__ import annotations

import dataclasses
import json
import smtplib

import dramatiq
import pytest
import requests

from mailin.server import MailinThread
from models.domains.domains import Domain
from models.events import record_event
from tasks import start_worker
from tasks.cleanup import cleanup
from tasks.clock import Clock, default_jobs
from tasks.events import sweep_outbox
from tasks.wiring import AUTHENTICATION_QUEUE, DELIVERY_QUEUE
from tests.factories.delivery import make_webhook
from tests.factories.mail import lapse, make_inbox, make_inbox_rows, make_mail_world, message
from tests.factories.tenancy import OwnedTeam
from tests.metrics_scrape import Samples, scrape, series, value
from tests.tasks.conftest import wait_until
from tests.web.conftest import Live, serving


@dataclasses.dataclass
class Embedded(Live):
    smtp: tuple[str, int] = ("", 0)

    def metrics(self) -> Samples:
        return scrape(f"{self.base}/metrics")


@pytest.fixture
def embedded(committed_runtime):
    """Web (threaded Werkzeug), SMTP, worker threads on one runtime with metrics on."""
    runtime = dataclasses.replace(committed_runtime, settings=committed_runtime.settings.replace(
        **{"metrics.enabled": True, "webhooks.allow_private_targets": True}))
    mailin = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    try:
        with serving(runtime) as base:
            yield Embedded(base, runtime, mailin.address)
    finally:
        mailin.stop()


def _mail_world(runtime, receiver=None):
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
        if receiver is not None:
            team = OwnedTeam(world.users["owner"], world.ids["org"], world.ids["team"])
            make_webhook(session, team, receiver.url, events=("email.received",))
    return world, inbox


def test_mail_a_webhook_and_a_socket_show_in_every_family(embedded, receiver):
    world, inbox = _mail_world(embedded.runtime, receiver)
    before = embedded.metrics()
    worker = start_worker(dramatiq.get_broker(), threads=2,
                          waiting={DELIVERY_QUEUE: 2, AUTHENTICATION_QUEUE: 2})
    try:
        socket = embedded.connect(f"inboxes/{inbox.id}", world.headers["team_member"])
        wait_until(lambda: value(embedded.metrics(), "burnbox_websockets_open", stream="inbox")
                   == value(before, "burnbox_websockets_open", stream="inbox") + 1)
        raw = message(inbox.full_address, subject="Counted")
        with smtplib.SMTP(*embedded.smtp, timeout=10) as client:
            client.sendmail("shop@sender.example", [inbox.full_address], raw)
            refused = client.sendmail("shop@sender.example",
                                      [inbox.full_address, "nobody@" + world.domain], raw)
        assert list(refused) == ["nobody@" + world.domain]
        assert json.loads(socket.recv())["type"] == "email.received"
        receiver.wait_for(2)
        wait_until(lambda: value(embedded.metrics(), "burnbox_webhook_attempts_total",
                                 outcome="2xx", attempt="1")
                   == value(before, "burnbox_webhook_attempts_total", outcome="2xx",
                            attempt="1") + 2)
        socket.close()
        wait_until(lambda: value(embedded.metrics(), "burnbox_websockets_open", stream="inbox")
                   == value(before, "burnbox_websockets_open", stream="inbox"))
        # The webhooks and the socket hear of the mail from the committer itself; the event
        # fan-out (the backup) runs when the worker takes its message, which on a loaded
        # machine can come after everything above: the test once stopped the worker first
        # and counted no dispatch.
        wait_until(lambda: value(embedded.metrics(), "burnbox_actor_runs_total",
                                 actor="dispatch_events", outcome="success")
                   > value(before, "burnbox_actor_runs_total", actor="dispatch_events",
                           outcome="success"))
    finally:
        worker.stop()
    after = embedded.metrics()

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("burnbox_smtp_messages_accepted_total") == 2
    assert grew("burnbox_smtp_recipients_refused_total", reason="unknown_inbox") == 1
    assert grew("burnbox_smtp_received_bytes_total") == 2 * len(raw)
    assert grew("burnbox_smtp_data_reply_seconds_count") == 2
    assert grew("burnbox_smtp_commit_batch_size_count") >= 1
    assert grew("burnbox_smtp_commit_batch_size_sum") == 2
    assert value(after, "burnbox_smtp_sessions_open") == value(before, "burnbox_smtp_sessions_open")
    assert grew("burnbox_webhook_delivery_lag_seconds_count") == 2
    assert grew("burnbox_webhook_attempt_duration_seconds_count") == 2
    assert value(after, "burnbox_webhook_deliveries_in_flight") == 0
    assert grew("burnbox_actor_runs_total", actor="deliver_webhook", outcome="success") == 2
    assert grew("burnbox_actor_runs_total", actor="dispatch_events", outcome="success") >= 1
    # The request metrics of the web face are still there, labelled by route template.
    assert any(name == "flask_http_request_duration_seconds_count"
               and ("url_rule", "/api/v1/ws/ticket") in labels for name, labels in after)


def test_the_clock_the_outbox_sweep_and_the_cleanup_record_theirs(embedded):
    runtime = embedded.runtime
    world, inbox = _mail_world(runtime)
    with runtime.db.transaction() as session:
        # An event whose hand-off was lost: the sweep sees it waiting.
        record_event(session, "test.stranded", {}, org_id=world.ids["org"])
        lapse(session, inbox.id)
    before = embedded.metrics()
    clock = Clock(runtime.store, default_jobs(runtime.settings), runtime.settings.clock.tick)
    fired = clock.run_once()
    assert "cleanup" in fired
    broker = dramatiq.get_broker()
    sweep_outbox.send()
    cleanup.send()
    worker = start_worker(broker, threads=2)
    try:
        for queue in ("clock", "events"):
            # A bound that catches a hang: the loaded CI machine once took over 10 s.
            broker.join(queue, timeout=60_000)
    finally:
        worker.stop()
    after = embedded.metrics()
    assert (value(after, "burnbox_clock_jobs_sent_total", job="cleanup")
            - value(before, "burnbox_clock_jobs_sent_total", job="cleanup")) == 1
    assert (value(after, "burnbox_cleanup_removed_rows_total", kind="lapsed_inboxes")
            - value(before, "burnbox_cleanup_removed_rows_total", kind="lapsed_inboxes")) == 1
    assert value(after, "burnbox_job_last_success_timestamp_seconds", job="sweep_outbox") > 0
    assert value(after, "burnbox_job_last_success_timestamp_seconds", job="cleanup") > 0
    assert value(after, "burnbox_outbox_undispatched_events") >= 0
    assert ("burnbox_outbox_oldest_age_seconds", frozenset()) in after


def test_label_sets_stay_bounded_after_a_thousand_distinct_inboxes(embedded):
    runtime = embedded.runtime
    world, _inbox = _mail_world(runtime)
    with runtime.db.transaction() as session:
        domain = session.get(Domain, world.ids["domain"])
        inboxes = [(row["id"], row["full_address"]) for row in
                   make_inbox_rows(session, domain, world.ids["team"], 1000)]
    headers = world.headers["team_member"]
    with requests.Session() as http:
        for inbox_id, _address in inboxes:
            assert http.get(f"{embedded.base}/api/v1/inboxes/{inbox_id}", headers=headers,
                            timeout=10).status_code == 200
    with smtplib.SMTP(*embedded.smtp, timeout=30) as client:
        for start in range(0, 1000, 100):
            client.mail("shop@sender.example")
            for n in range(start, start + 100):
                client.rcpt(f"unknown-{n}@{world.domain}")
            client.rset()
    samples = embedded.metrics()
    text = requests.get(f"{embedded.base}/metrics", timeout=10).text
    assert not any(str(inbox_id) in text or address in text for inbox_id, address in inboxes)
    assert world.domain not in text
    counts = series(samples, "burnbox_") | series(samples, "flask_")
    # Each family has a handful of series per label set, whatever the traffic: a bound far
    # below the thousand inboxes, addresses and paths that went through.
    assert max(counts.values()) < 200, counts
