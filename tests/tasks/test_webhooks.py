"""Webhook delivery end to end: committed events, the fan-out, worker threads on the backend's
broker, and a real HTTP receiver on loopback. The schedule runs at webhooks.backoff_scale 0.1
(0 s / 0.5 s / 2.5 s): it is read from the delays the attempts are sent with, and the receiver
shows that none arrives early (how late depends on the machine's load, so it is not asserted)."""

import dataclasses
import hashlib
import hmac
import json
import smtplib
import socket
import threading
import time
from datetime import timedelta
from pathlib import Path

import dramatiq
import pytest
from dramatiq import Middleware
from sqlalchemy import select, update

import tasks
from burnbox.timeutil import isoformat, utcnow
from mailin.server import MailinThread
from models.delivery.webhooks import (
    FAILED,
    IN_FLIGHT,
    SUCCEEDED,
    DeliveryLogEntry,
    NextAttempt,
    Webhook,
    WebhookDelivery,
    answered,
    claim_attempts,
    create_deliveries,
    create_webhook,
    record_attempts,
    take_stalled_deliveries,
)
from models.events import EMAIL_RECEIVED, INBOX_CREATED, Event
from models.tenancy.access import resolve_org_access
from models.tenancy.rbac import load_grants
from models.tenancy.teams import resolve_team_access
from tasks import start_worker
from tasks.webhooks import (
    DELIVERY_BATCH,
    deliver_webhook,
    send_attempts,
    sweep_webhook_deliveries,
    sweep_webhook_deliveries_after_outage,
    webhook_retry,
)
from tasks.wiring import AUTHENTICATION_QUEUE, DELIVERY_QUEUE, WaitingPools, general_queues
from tests.factories.delivery import SAMPLE_DATA, make_event, make_webhook
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.factories.tenancy import caller_of, make_owned_team
from tests.metrics_scrape import counted
from tests.receiver import Answer
from tests.tasks.conftest import drain, wait_until

SCALE = 0.1
DOCS = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def _documented_verify():
    """The `verify` function docs/events.md gives receivers, as published."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("### Verifying the signature"):]
    code = section[section.index("```python") + len("```python"):]
    namespace = {}
    exec(code[:code.index("```")], namespace)
    return namespace["verify"]


def _runtime(committed_runtime, **changes):
    settings = committed_runtime.settings.replace(**{
        "webhooks.backoff_scale": SCALE, "defaults.webhook_timeout": "1s",
        "webhooks.lease_grace": "1s", **changes})
    rt = dataclasses.replace(committed_runtime, settings=settings)
    tasks.setup_broker(rt)
    return rt


@pytest.fixture
def rt(committed_runtime):
    """A committing runtime with the fast schedule and a 1 s attempt timeout."""
    return _runtime(committed_runtime)


@pytest.fixture
def worker(rt):
    """Four worker threads on the runtime's broker."""
    running = start_worker(dramatiq.get_broker(), threads=4)
    yield running
    running.stop()


def _log(rt, webhook_id):
    with rt.db.session() as session:
        return list(session.scalars(select(DeliveryLogEntry)
                                    .where(DeliveryLogEntry.webhook_id == webhook_id)
                                    .order_by(DeliveryLogEntry.attempt)))


def _deliveries(rt, webhook_id):
    with rt.db.session() as session:
        return list(session.scalars(select(WebhookDelivery)
                                    .where(WebhookDelivery.webhook_id == webhook_id)))


def _webhook(rt, webhook_id):
    with rt.db.session() as session:
        return session.get(Webhook, webhook_id)


def _finished(rt, webhook_id, count=1):
    done = [d for d in _deliveries(rt, webhook_id) if d.state in (SUCCEEDED, FAILED)]
    return len(done) >= count


def test_mail_over_smtp_reaches_the_webhook_without_the_event_fan_out(rt, worker, receiver,
                                                                     monkeypatch):
    """Mail ingest creates the deliveries with the e-mail and hands their first attempts over
    when it commits: with no event reaching the fan-out at all, the receiver gets the mail's
    webhook, once. Later, the fan-out (run here by hand) finds the delivery made and adds
    none."""
    held = []
    monkeypatch.setattr(rt.db.handoffs, "events_committed", held.extend)
    with rt.db.transaction() as session:
        world = make_mail_world(session, rt.settings)
        inbox = make_inbox(session, rt.settings, world)
        org = resolve_org_access(session, load_grants(session), caller_of(world.users["owner"]),
                                 world.ids["org"])
        hook = create_webhook(session, resolve_team_access(session, org, world.ids["team"]),
                              url=receiver.url, events=[EMAIL_RECEIVED], allow_private=True)
    server = MailinThread(rt, host="127.0.0.1", port=0).start_and_wait()
    try:
        with smtplib.SMTP(*server.address, timeout=10) as client:
            client.sendmail("shop@sender.example", [inbox.full_address],
                            message(inbox.full_address, subject="Hooked at once"))
    finally:
        server.stop()
    (request,) = receiver.wait_for(1)
    assert json.loads(request.body)["data"]["subject"] == "Hooked at once"
    wait_until(lambda: _finished(rt, hook.id))

    with rt.db.transaction() as session:
        [event] = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)).all()
        assert create_deliveries(session, [event]) == {}
    assert len(_deliveries(rt, hook.id)) == 1


def test_a_delivery_is_signed_over_the_exact_body_bytes_and_carries_its_headers(
        rt, worker, receiver):
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url)
        event_id = make_event(session, team, EMAIL_RECEIVED)
    (request,) = receiver.wait_for(1)
    wait_until(lambda: _finished(rt, hook.id))

    expected = hmac.new(hook.secret.encode(), request.body, hashlib.sha256).hexdigest()
    assert request.headers["X-Service-Signature"] == expected
    assert expected == expected.lower() and len(expected) == 64
    body = json.loads(request.body)
    (delivery,) = _deliveries(rt, hook.id)
    with rt.db.session() as session:
        event = session.get(Event, event_id)
    assert body == {"id": str(delivery.id), "event": EMAIL_RECEIVED,
                    "timestamp": request.headers["X-Service-Timestamp"],
                    "created_at": isoformat(event.created_at),
                    "data": SAMPLE_DATA[EMAIL_RECEIVED]}
    assert request.headers["X-Service-Event"] == EMAIL_RECEIVED
    assert request.headers["X-Service-Delivery-ID"] == str(delivery.id)
    assert request.headers["Content-Type"] == "application/json"
    assert delivery.state == SUCCEEDED
    (entry,) = _log(rt, hook.id)
    assert (entry.attempt, entry.success, entry.response_status, entry.error) == (1, True, 200,
                                                                                  None)
    assert entry.response_time_ms is not None
    assert isoformat(entry.created_at) == body["timestamp"]

    verify = _documented_verify()
    assert verify(hook.secret, request.body, request.headers["X-Service-Signature"])
    reserialised = json.dumps(json.loads(request.body)).encode()
    assert not verify(hook.secret, reserialised, request.headers["X-Service-Signature"])
    assert not verify("whsec_wrong", request.body, request.headers["X-Service-Signature"])


class Scheduled(Middleware):
    """Notes the attempt number and the delay (ms, None for none) of every attempt message sent,
    in order: the schedule as the worker set it. The time an attempt reaches the receiver adds
    the machine's latency to that delay (a loaded machine once took 1.35 s for a 0.5 s wait),
    so the schedule is read here, and the receiver only shows that no attempt came early."""

    def __init__(self):
        self.by_message: dict[str, tuple[int, int | None]] = {}
        self._lock = threading.Lock()

    def after_enqueue(self, broker, message, delay):
        # A delayed message is enqueued again, undelayed, when its time comes: the same
        # message (its id), not another attempt.
        if message.actor_name == deliver_webhook.actor_name:
            with self._lock:
                self.by_message.setdefault(message.message_id, (message.args[1], delay))

    @property
    def sent(self) -> list[tuple[int, int | None]]:
        with self._lock:
            return list(self.by_message.values())


@pytest.fixture
def scheduled(rt):
    """What notes the attempt messages sent during the test (`.sent`: [(attempt number, delay
    in ms), ...])."""
    middleware = Scheduled()
    dramatiq.get_broker().add_middleware(middleware)
    return middleware


def test_failed_attempts_follow_the_0_5_25_second_schedule_then_count_one_failure(
        rt, worker, receiver, scheduled):
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url)
    receiver.answer(Answer(500), Answer(503), Answer(502))
    with rt.db.transaction() as session:
        make_event(session, team, EMAIL_RECEIVED)
    first, second, third = receiver.wait_for(3, timeout=20)
    wait_until(lambda: _finished(rt, hook.id))

    # Attempt 1 at once, attempt 2 after 5 s, attempt 3 after 25 s (times the scale), and none
    # reached the receiver before its wait was over.
    assert scheduled.sent == [(1, None), (2, round(5 * SCALE * 1000)),
                              (3, round(25 * SCALE * 1000))]
    assert second.at - first.at >= 5 * SCALE - 0.01
    assert third.at - second.at >= 25 * SCALE - 0.01
    ids = {r.headers["X-Service-Delivery-ID"] for r in (first, second, third)}
    assert len(ids) == 1, "every attempt carries the same delivery id"
    assert len({r.headers["X-Service-Timestamp"] for r in (first, second, third)}) == 3
    log = _log(rt, hook.id)
    assert [(e.attempt, e.success, e.response_status, e.error) for e in log] == [
        (1, False, 500, "HTTP 500"), (2, False, 503, "HTTP 503"), (3, False, 502, "HTTP 502")]
    webhook = _webhook(rt, hook.id)
    assert (webhook.failure_count, webhook.is_active) == (1, True)

    # The webhook stays enabled: the next event is delivered, and success adds no failure.
    with rt.db.transaction() as session:
        make_event(session, team, INBOX_CREATED)
    receiver.wait_for(4)
    wait_until(lambda: _finished(rt, hook.id, 2))
    assert _webhook(rt, hook.id).failure_count == 1
    # Every message processed, delayed ones included: a retry of the success would be among them.
    drain(dramatiq.get_broker(), "webhooks")
    assert scheduled.sent[3:] == [(1, None)] and len(receiver.requests) == 4, (
        "a success is never attempted again")


def test_every_kind_of_failure_is_logged_as_a_failed_attempt(committed_runtime, receiver):
    rt = _runtime(committed_runtime, **{"defaults.webhook_max_retries": 1})
    running = start_worker(dramatiq.get_broker(), threads=6)
    try:
        closed = socket.create_server(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
        closed.close()
        base = f"http://127.0.0.1:{receiver.port}"
        receiver.by_path.update({
            "/missing": Answer(404),
            "/slow": Answer(200, delay=2.5),
            "/moved": Answer(301, {"Location": "http://169.254.169.254/"}),
            "/ok": Answer(204),
        })
        with rt.db.transaction() as session:
            team = make_owned_team(session, rt.settings)
            hooks = {kind: make_webhook(session, team, url) for kind, url in {
                "status": f"{base}/missing", "timeout": f"{base}/slow",
                "redirect": f"{base}/moved", "refused": f"http://127.0.0.1:{closed_port}/",
                "success": f"{base}/ok"}.items()}
        before = _attempts_counted()
        with rt.db.transaction() as session:
            make_event(session, team, EMAIL_RECEIVED)
        for hook in hooks.values():
            wait_until(lambda hook=hook: _finished(rt, hook.id), timeout=20)
    finally:
        running.stop()
    entries = {kind: _log(rt, hook.id) for kind, hook in hooks.items()}
    assert all(len(log) == 1 for log in entries.values())
    status, timeout, redirect, refused, success = (entries[k][0] for k in (
        "status", "timeout", "redirect", "refused", "success"))
    assert (status.success, status.response_status, status.error) == (False, 404, "HTTP 404")
    assert (timeout.success, timeout.response_status) == (False, None)
    assert timeout.error.startswith("timeout") and timeout.response_time_ms >= 900
    assert (redirect.success, redirect.response_status) == (False, 301)
    assert redirect.error == "redirect (301) to http://169.254.169.254/ not followed"
    assert (refused.success, refused.error) == (False, "connection refused")
    assert (success.success, success.response_status) == (True, 204)
    assert [r.path for r in receiver.requests].count("/moved") == 1, "no redirect followed"
    for kind, hook in hooks.items():
        assert _webhook(rt, hook.id).failure_count == (0 if kind == "success" else 1)
    assert _attempts_counted(before) == {"2xx": 1, "non_2xx": 2, "timeout": 1, "error": 1,
                                         "refused_address": 0}


OUTCOMES = ("2xx", "non_2xx", "timeout", "error", "refused_address")


def _attempts_counted(before=None):
    """First attempts counted by outcome (minus `before`)."""
    now = {outcome: counted("burnbox_webhook_attempts_total", outcome=outcome, attempt="1")
           for outcome in OUTCOMES}
    return now if before is None else {key: now[key] - before[key] for key in OUTCOMES}


def test_a_host_that_resolves_to_a_private_address_at_dispatch_is_refused_and_logged(
        committed_runtime, receiver, dns_server):
    rt = _runtime(committed_runtime, **{
        "webhooks.allow_private_targets": False, "defaults.webhook_max_retries": 1,
        "dns.nameservers": (dns_server.nameserver,), "dns.timeout": "1s"})
    running = start_worker(dramatiq.get_broker(), threads=2)
    try:
        with rt.db.transaction() as session:
            team = make_owned_team(session, rt.settings)
            # Public when the webhook is created (creation never resolves names anyway)...
            dns_server.publish("rebind.hooks-test.example. 1 IN A 93.184.215.14\n")
            hook = make_webhook(session, team,
                                f"http://rebind.hooks-test.example:{receiver.port}/x")
        # ...and the receiver's loopback address when the delivery is made.
        dns_server.publish("rebind.hooks-test.example. 1 IN A 127.0.0.1\n")
        before = _attempts_counted()
        with rt.db.transaction() as session:
            make_event(session, team, EMAIL_RECEIVED)
        wait_until(lambda: _finished(rt, hook.id))
    finally:
        running.stop()
    (entry,) = _log(rt, hook.id)
    assert entry.success is False and entry.response_status is None
    assert entry.error == ("address refused: rebind.hooks-test.example resolves to an internal "
                           "address (127.0.0.1); refused")
    assert receiver.requests == []
    assert ("rebind.hooks-test.example", "A") in dns_server.queries
    assert _attempts_counted(before)["refused_address"] == 1


def test_duplicate_messages_for_one_attempt_make_one_request(rt, worker, receiver):
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url)
    event_id = commit_event_without_hand_off(rt, team)
    with rt.db.transaction() as session:
        (delivery_id,) = create_deliveries(session, [session.get(Event, event_id)])
    for _ in range(5):
        deliver_webhook.send(str(delivery_id), 1)
    drain(dramatiq.get_broker(), "webhooks")
    assert len(receiver.requests) == 1
    assert len(_log(rt, hook.id)) == 1


def test_a_batch_makes_the_attempts_it_can_claim_and_leaves_the_others_alone(
        rt, worker, receiver):
    # One message, one claim for the list: a delivery already attempted (a duplicate) and one
    # another worker holds are left out; the rest are made side by side and recorded.
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url)
    events = [commit_event_without_hand_off(rt, team) for _ in range(4)]
    with rt.db.transaction() as session:
        done, held, *fresh = [next(iter(create_deliveries(session, [session.get(Event, e)])))
                              for e in events]
    deliver_webhook.send(str(done), 1)
    drain(dramatiq.get_broker(), "webhooks")
    with rt.db.transaction() as session:
        assert claim_attempts(session, [held], 1, timedelta(minutes=1))
    deliver_webhook.send([str(done), str(held), *map(str, fresh)], 1)
    drain(dramatiq.get_broker(), "webhooks")
    sent = [r.headers["X-Service-Delivery-ID"] for r in receiver.requests]
    assert sent[0] == str(done) and sorted(sent[1:]) == sorted(map(str, fresh))
    states = {d.id: d.state for d in _deliveries(rt, hook.id)}
    assert states == {done: SUCCEEDED, held: IN_FLIGHT, fresh[0]: SUCCEEDED,
                      fresh[1]: SUCCEEDED}
    assert len(_log(rt, hook.id)) == 3


def commit_event_without_hand_off(rt, team):
    """An event that no dispatch will pick up (as if the process died right after commit)."""
    hand_off, rt.db.handoffs.events_committed = rt.db.handoffs.events_committed, None
    try:
        with rt.db.transaction() as session:
            return make_event(session, team, EMAIL_RECEIVED)
    finally:
        rt.db.handoffs.events_committed = hand_off


def test_the_sweep_resends_attempts_whose_worker_died_or_whose_message_was_lost(
        rt, worker, receiver):
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url)
    lease = timedelta(seconds=1)
    first, second = (commit_event_without_hand_off(rt, team) for _ in range(2))
    with rt.db.transaction() as session:
        (orphaned,) = create_deliveries(session, [session.get(Event, first)])
        (lost,) = create_deliveries(session, [session.get(Event, second)])
    with rt.db.transaction() as session:
        # A worker took the lease for attempt 1 and died before recording anything.
        assert claim_attempts(session, [orphaned], 1, lease)
        # The first attempt's message never reached a worker.
        session.execute(update(WebhookDelivery).where(WebhookDelivery.id == lost)
                        .values(due_at=utcnow() - timedelta(seconds=5)))

    sweep_webhook_deliveries.send()
    drain(dramatiq.get_broker(), "clock", "webhooks")
    assert [r.headers["X-Service-Delivery-ID"] for r in receiver.requests] == [str(lost)]

    time.sleep(lease.total_seconds() + 0.1)
    sweep_webhook_deliveries.send()
    drain(dramatiq.get_broker(), "clock", "webhooks")
    assert {r.headers["X-Service-Delivery-ID"] for r in receiver.requests} == {
        str(lost), str(orphaned)}
    assert [(e.attempt, e.success) for e in _log(rt, hook.id)] == [(1, True), (1, True)]


def _lost_deliveries(rt, team, count, overdue):
    """`count` deliveries whose first attempt's message was lost, due `overdue` ago."""
    events = [commit_event_without_hand_off(rt, team) for _ in range(count)]
    with rt.db.transaction() as session:
        created = create_deliveries(session, [session.get(Event, one) for one in events])
        session.execute(update(WebhookDelivery).where(WebhookDelivery.id.in_(created))
                        .values(due_at=utcnow() - overdue))
    return set(created)


def _received_ids(receiver):
    return [r.headers["X-Service-Delivery-ID"] for r in receiver.requests]


def test_one_sweep_sends_a_backlog_of_several_pages_without_waiting_for_the_next_period(
        committed_runtime, receiver):
    """The sweep used to take one page per clock period, so a backlog of N pages took N
    periods (1,000 deliveries every 30 s after a Redis outage). Now a full page sends the next
    page's sweep at once: one clock message hands over the whole backlog, each delivery once."""
    rt = _runtime(committed_runtime, **{"webhooks.sweep_page": 2})
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url)
    lost = _lost_deliveries(rt, team, 5, overdue=timedelta(seconds=5))
    running = start_worker(dramatiq.get_broker(), threads=4)
    try:
        sweep_webhook_deliveries.send()
        drain(dramatiq.get_broker(), "clock", "webhooks")
    finally:
        running.stop()
    assert sorted(_received_ids(receiver)) == sorted(map(str, lost))
    assert {d.state for d in _deliveries(rt, hook.id)} == {SUCCEEDED}


def test_after_an_outage_the_sweep_sends_every_attempt_already_due_without_the_grace(
        committed_runtime, receiver):
    """First attempts whose hand-off failed while Redis was down are sent by the after-outage
    sweep as soon as it runs, not once they are overdue by the grace; an attempt not due yet
    (a retry scheduled for later) keeps its time."""
    rt = _runtime(committed_runtime, **{"webhooks.lease_grace": "1h", "webhooks.sweep_page": 2})
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        make_webhook(session, team, receiver.url)
    lost = _lost_deliveries(rt, team, 3, overdue=timedelta(milliseconds=1))
    (later,) = _lost_deliveries(rt, team, 1, overdue=-timedelta(hours=1))
    running = start_worker(dramatiq.get_broker(), threads=4)
    try:
        sweep_webhook_deliveries.send()
        drain(dramatiq.get_broker(), "clock", "webhooks")
        assert receiver.requests == [], "within the grace, the regular sweep leaves them"
        sweep_webhook_deliveries_after_outage.send()
        drain(dramatiq.get_broker(), "clock", "webhooks")
    finally:
        running.stop()
    assert sorted(_received_ids(receiver)) == sorted(map(str, lost))
    with rt.db.session() as session:
        waiting = session.get(WebhookDelivery, later)
        assert (waiting.state, waiting.attempts) == ("pending", 0)


def test_a_sweep_page_takes_at_most_its_size_and_nothing_another_page_took(rt, receiver):
    """Taking a stalled delivery makes it pending and due at that moment, its lapsed lease
    dropped: the sweep's next page, and a sweep running beside it, leave it to the attempt just
    sent instead of sending it again (the chained pages rely on this to end), until its grace
    passes anew. A page is at most its size: on PostgreSQL a page read as a plain subquery
    took every stalled delivery at once."""
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        make_webhook(session, team, receiver.url)
    lost = _lost_deliveries(rt, team, 3, overdue=timedelta(seconds=5))
    (orphaned,) = _lost_deliveries(rt, team, 1, overdue=timedelta(0))
    with rt.db.transaction() as session:
        assert claim_attempts(session, [orphaned], 1, timedelta(milliseconds=1))
    time.sleep(0.01)
    grace = rt.settings.webhooks.lease_grace
    pages = []
    for size in (2, 10, 10):
        with rt.db.transaction() as session:
            pages.append(take_stalled_deliveries(session, utcnow() - grace, size))
    assert [len(page) for page in pages] == [2, 2, 0]
    assert {one for page in pages for one, _, _ in page} == {*lost, orphaned}
    assert {number for page in pages for _, _, number in page} == {1}
    with rt.db.session() as session:
        held = session.get(WebhookDelivery, orphaned)
        assert (held.state, held.lease_token, held.lease_until) == ("pending", None, None)
    time.sleep(grace.total_seconds() + 0.1)
    with rt.db.transaction() as session:
        again = take_stalled_deliveries(session, utcnow() - grace, 10)
    assert {one for one, _, _ in again} == {*lost, orphaned}


def test_the_retry_worker_clears_only_counts_of_one_or_two_on_active_webhooks(
        rt, worker, receiver):
    counts = {}
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        for count, active in ((0, True), (1, True), (2, True), (3, True), (1, False),
                              (2, False)):
            hook = make_webhook(session, team, receiver.url, failure_count=count,
                                is_active=active)
            counts[hook.id] = (count, active)
    webhook_retry.send()
    drain(dramatiq.get_broker(), "clock", "webhooks")
    for hook_id, (count, active) in counts.items():
        expected = 0 if active and count in (1, 2) else count
        assert _webhook(rt, hook_id).failure_count == expected
    assert receiver.requests == [], "the retry worker only resets counters, never sends"
    with rt.db.session() as session:
        assert session.scalar(select(WebhookDelivery.id)) is None


def test_only_active_subscribed_webhooks_of_the_events_team_get_a_delivery_once(
        rt, worker, receiver):
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        other = make_owned_team(session, rt.settings, "Other")
        subscribed = make_webhook(session, team, receiver.url, events=(EMAIL_RECEIVED,))
        unsubscribed = make_webhook(session, team, receiver.url, events=(INBOX_CREATED,))
        disabled = make_webhook(session, team, receiver.url, is_active=False)
        elsewhere = make_webhook(session, other, receiver.url)
    event_id = commit_event_without_hand_off(rt, team)
    with rt.db.transaction() as session:
        event = session.get(Event, event_id)
        assert len(create_deliveries(session, [event])) == 1
        assert create_deliveries(session, [event]) == {}, "a second fan-out adds nothing"
    assert len(_deliveries(rt, subscribed.id)) == 1
    for hook in (unsubscribed, disabled, elsewhere):
        assert _deliveries(rt, hook.id) == []


def test_the_deliveries_of_several_events_are_made_at_once_each_for_its_own_subscribers(rt):
    rt.db.handoffs.events_committed = None  # this test is the fan-out
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        other = make_owned_team(session, rt.settings, "Other")
        mail_only = make_webhook(session, team, "http://127.0.0.1:9/a", events=(EMAIL_RECEIVED,))
        every = make_webhook(session, team, "http://127.0.0.1:9/b")
        elsewhere = make_webhook(session, other, "http://127.0.0.1:9/c")
        events = [session.get(Event, make_event(session, team)),
                  session.get(Event, make_event(session, team, INBOX_CREATED)),
                  session.get(Event, make_event(session, other))]
        created = create_deliveries(session, events)
        assert create_deliveries(session, events) == {}, "a second fan-out adds nothing"
    assert sorted(created.values()) == sorted([mail_only.id, every.id, every.id, elsewhere.id])
    assert {d.event_id for d in _deliveries(rt, mail_only.id)} == {events[0].id}
    assert {d.event_id for d in _deliveries(rt, every.id)} == {events[0].id, events[1].id}
    assert {d.event_id for d in _deliveries(rt, elsewhere.id)} == {events[2].id}


def test_a_webhook_disabled_before_its_attempt_cancels_the_delivery(rt, worker, receiver):
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url)
    event_id = commit_event_without_hand_off(rt, team)
    with rt.db.transaction() as session:
        (delivery_id,) = create_deliveries(session, [session.get(Event, event_id)])
        session.get(Webhook, hook.id).is_active = False
    deliver_webhook.send(str(delivery_id), 1)
    drain(dramatiq.get_broker(), "webhooks")
    (delivery,) = _deliveries(rt, hook.id)
    assert delivery.state == "cancelled" and receiver.requests == [] and _log(rt, hook.id) == []


def _new_delivery(rt):
    """A webhook (to a closed port) and the id of a committed, not yet attempted delivery."""
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, "http://127.0.0.1:9/")
    event_id = commit_event_without_hand_off(rt, team)
    with rt.db.transaction() as session:
        (delivery_id,) = create_deliveries(session, [session.get(Event, event_id)])
    return hook, delivery_id


def test_an_in_flight_lease_is_not_taken_over_before_it_expires(rt):
    hook, delivery_id = _new_delivery(rt)
    with rt.db.transaction() as session:
        assert claim_attempts(session, [delivery_id], 1, timedelta(minutes=1))
        assert claim_attempts(session, [delivery_id], 1, timedelta(minutes=1)) == []
        assert claim_attempts(session, [delivery_id], 2, timedelta(minutes=1)) == []
        assert session.get(WebhookDelivery, delivery_id).state == IN_FLIGHT
    assert hook.failure_count == 0


def test_an_expired_lease_is_taken_over_and_only_its_new_holder_records_the_attempt(rt):
    # A worker that outlived its lease (stalled past it, then answered) must not record over
    # the worker that took the delivery over: one log entry, from the holder of the lease.
    hook, delivery_id = _new_delivery(rt)
    with rt.db.transaction() as session:
        (stale,) = claim_attempts(session, [delivery_id], 1, timedelta(0))
    with rt.db.transaction() as session:
        (holder,) = claim_attempts(session, [delivery_id], 1, timedelta(minutes=1))
    assert holder.lease_token != stale.lease_token
    assert (holder.url, holder.secret) == (hook.url, hook.secret)
    with rt.db.transaction() as session:
        assert record_attempts(session, [(stale, answered(200, 5))], max_attempts=3,
                               backoff_scale=SCALE) is None
        following = record_attempts(session, [(holder, answered(500, 5))], max_attempts=3,
                                    backoff_scale=SCALE)
        assert following == NextAttempt([delivery_id], 2, timedelta(seconds=5 * SCALE))
    (delivery,) = _deliveries(rt, hook.id)
    assert (delivery.state, delivery.attempts, delivery.lease_token) == ("pending", 1, None)
    assert [(entry.attempt, entry.response_status) for entry in _log(rt, hook.id)] == [(1, 500)]


HELD = 6


def _start_general_pool_with_delivery_pool_beside(broker):
    """What `burnbox worker` runs in each process: the `dramatiq` command's worker on the
    general queues (one thread here), and tasks.boot's WaitingPools beside it."""
    broker.add_middleware(WaitingPools({DELIVERY_QUEUE: HELD, AUTHENTICATION_QUEUE: 1}))
    general = dramatiq.Worker(broker, queues=set(general_queues()), worker_threads=1,
                              worker_timeout=100)
    general.start()
    return general


@pytest.mark.parametrize("start", [
    lambda broker: start_worker(broker, threads=1,
                                waiting={DELIVERY_QUEUE: HELD, AUTHENTICATION_QUEUE: 1}),
    _start_general_pool_with_delivery_pool_beside,
], ids=["embedded", "worker command"])
def test_the_delivery_pool_makes_attempts_concurrently(committed_runtime, receiver, start):
    # Every request is held until all of them have arrived: one at a time, the first would be
    # held until its timeout and the others would never arrive meanwhile. The general pool has
    # a single thread, so the parallelism is the delivery pool's.
    rt = _runtime(committed_runtime, **{"defaults.webhook_timeout": "30s"})
    receiver.default = Answer(hold=True)
    running = start(dramatiq.get_broker())
    try:
        with rt.db.transaction() as session:
            team = make_owned_team(session, rt.settings)
            hooks = [make_webhook(session, team, receiver.url) for _ in range(HELD)]
        with rt.db.transaction() as session:
            make_event(session, team, EMAIL_RECEIVED)
        requests = receiver.wait_for(HELD, timeout=15)
        receiver.released.set()
        for hook in hooks:
            wait_until(lambda hook=hook: _finished(rt, hook.id))
    finally:
        receiver.released.set()
        running.stop()
    assert len({r.headers["X-Service-Delivery-ID"] for r in requests}) == HELD
    assert all(_log(rt, hook.id)[0].success for hook in hooks)


def test_the_attempts_of_one_message_leave_side_by_side_under_a_lease_of_one_timeout(
        committed_runtime, receiver):
    # One webhook, one message of DELIVERY_BATCH deliveries, one delivery thread, and every
    # request held until all of them have arrived. Made one after another, the first would be
    # held until its timeout and the others would not arrive meanwhile: a receiver answering
    # in 2 s got 16 s of a thread per message, and a killed worker's leases (a timeout per
    # attempt) lapsed up to 110 s after their claim. Now the message's lease is one attempt's
    # timeout plus the grace, since its attempts leave together.
    rt = _runtime(committed_runtime, **{"defaults.webhook_timeout": "30s"})
    receiver.default = Answer(hold=True)
    running = start_worker(dramatiq.get_broker(), threads=1,
                           waiting={DELIVERY_QUEUE: 1, AUTHENTICATION_QUEUE: 1})
    try:
        with rt.db.transaction() as session:
            team = make_owned_team(session, rt.settings)
            hook = make_webhook(session, team, receiver.url)
        events = [commit_event_without_hand_off(rt, team) for _ in range(DELIVERY_BATCH)]
        with rt.db.transaction() as session:
            created = create_deliveries(session, [session.get(Event, e) for e in events])
        sent = utcnow()
        send_attempts(created, 1)
        requests = receiver.wait_for(DELIVERY_BATCH, timeout=15)
        leases = {delivery.lease_until for delivery in _deliveries(rt, hook.id)}
        receiver.released.set()
        wait_until(lambda: _finished(rt, hook.id, DELIVERY_BATCH), timeout=30)
    finally:
        receiver.released.set()
        running.stop()
    assert {r.headers["X-Service-Delivery-ID"] for r in requests} == set(map(str, created))
    (lease,) = leases  # one claim for the message
    assert lease is not None and lease - sent < timedelta(seconds=30 + 1 + 10)
    log = _log(rt, hook.id)
    assert len(log) == DELIVERY_BATCH and all(entry.success for entry in log)
