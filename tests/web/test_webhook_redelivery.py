"""Redelivery and ping, end to end: the HTTP API on a real threaded server, worker threads on
the backend's broker, and a real HTTP receiver on loopback."""

import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass

import dramatiq
import pytest
import requests
from sqlalchemy import select

from models.delivery.webhooks import (
    FAILED,
    PENDING,
    DeliveryLogEntry,
    Webhook,
    WebhookDelivery,
    claim_attempts,
    create_deliveries,
    record_attempts,
)
from models.events import EMAIL_RECEIVED, Event
from models.platform.audit import AuditEntry
from models.tenancy.members import add_member
from models.tenancy.teams import add_team_member
from tasks import start_worker
from tasks.webhooks import send_attempt
from tests.factories.delivery import SAMPLE_DATA, make_event, make_webhook
from tests.factories.identity import auth_headers, make_user
from tests.factories.tenancy import OwnedTeam, make_owned_team
from tests.receiver import Answer
from tests.tasks.conftest import wait_until


@dataclass
class Hooked:
    team: OwnedTeam
    base: str
    owner: dict
    hook: Webhook
    delivery_id: uuid.UUID


def _log(rt, webhook_id):
    with rt.db.session() as session:
        return [(e.delivery_id, e.event, e.attempt, e.success, e.response_status) for e in
                session.scalars(select(DeliveryLogEntry)
                                .where(DeliveryLogEntry.webhook_id == webhook_id)
                                .order_by(DeliveryLogEntry.created_at, DeliveryLogEntry.attempt))]


def _audit(rt, action, webhook_id):
    """The audit entries' `after` of `action` on the webhook, in any order (entries written
    within the same clock tick have no order of their own), sorted."""
    with rt.db.session() as session:
        return sorted((entry.after for entry in session.scalars(
            select(AuditEntry).where(AuditEntry.action == action,
                                     AuditEntry.resource_id == str(webhook_id)))),
                      key=lambda after: (after["attempt"], after["delivery_id"]))


@pytest.fixture
def hooked(live, receiver):
    """A webhook of a new team whose one delivery (an email.received event) failed its only
    attempt (500), and two worker threads for what the test asks for."""
    rt = live.runtime
    with rt.db.transaction() as session:
        team = make_owned_team(session, rt.settings)
        hook = make_webhook(session, team, receiver.url, events=(EMAIL_RECEIVED,))
        owner = auth_headers(session, rt.settings, team.owner)
        # Recorded without a worker: the fan-out and the attempt are the model's own steps.
        event_id = make_event(session, team, EMAIL_RECEIVED)
        session.flush()
        [delivery_id] = create_deliveries(session, [session.get(Event, event_id)])
    receiver.answer(Answer(500))
    with rt.db.transaction() as session:
        [attempt] = claim_attempts(session, [delivery_id], 1, rt.settings.defaults.webhook_timeout)
    with rt.db.transaction() as session:
        record_attempts(session, [(attempt, send_attempt(attempt, rt.settings))], max_attempts=1,
                        backoff_scale=1)
    running = start_worker(dramatiq.get_broker(), threads=2)
    base = f"{live.base}/api/v1/orgs/{team.org_id}/teams/{team.team_id}/webhooks/{hook.id}"
    yield Hooked(team, base, owner, hook, delivery_id)
    running.stop()


def _signed(secret, request):
    return hmac.compare_digest(request.headers["X-Service-Signature"], hmac.new(
        secret.encode(), request.body, hashlib.sha256).hexdigest())


def test_a_redelivery_sends_the_same_delivery_as_the_next_attempt_and_logs_it(
        live, receiver, hooked):
    rt = live.runtime
    [first] = receiver.wait_for(1)
    assert _log(rt, hooked.hook.id) == [(hooked.delivery_id, EMAIL_RECEIVED, 1, False, 500)]

    answer = requests.post(f"{hooked.base}/deliveries/{hooked.delivery_id}/redeliver",
                           headers=hooked.owner, timeout=10)
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"delivery_id": str(hooked.delivery_id),
                             "webhook_id": str(hooked.hook.id), "event": EMAIL_RECEIVED,
                             "attempt": 2}
    _, second = receiver.wait_for(2)
    assert second.headers["X-Service-Delivery-ID"] == str(hooked.delivery_id)
    assert second.headers["X-Service-Timestamp"] != first.headers["X-Service-Timestamp"]
    assert json.loads(second.body)["data"] == json.loads(first.body)["data"] \
        == SAMPLE_DATA[EMAIL_RECEIVED]
    assert _signed(hooked.hook.secret, second)
    wait_until(lambda: len(_log(rt, hooked.hook.id)) == 2)
    assert _log(rt, hooked.hook.id)[1] == (hooked.delivery_id, EMAIL_RECEIVED, 2, True, 200)

    # Shown in the API's own log, and again as attempt 3.
    listed = requests.get(f"{hooked.base}/deliveries", headers=hooked.owner, timeout=10).json()
    assert [(e["delivery_id"], e["attempt"], e["success"]) for e in listed["data"]] == [
        (str(hooked.delivery_id), 2, True), (str(hooked.delivery_id), 1, False)]
    receiver.answer(Answer(503))
    again = requests.post(f"{hooked.base}/deliveries/{hooked.delivery_id}/redeliver",
                          headers=hooked.owner, timeout=10)
    assert again.json()["attempt"] == 3
    wait_until(lambda: len(_log(rt, hooked.hook.id)) == 3)
    assert _log(rt, hooked.hook.id)[2] == (hooked.delivery_id, EMAIL_RECEIVED, 3, False, 503)
    time.sleep(0.5)
    assert len(receiver.requests) == 3, "a redelivery is one attempt, never retried"
    with rt.db.session() as session:
        # The original delivery's failure counted once; a hand-made attempt counts nothing.
        assert session.get(Webhook, hooked.hook.id).failure_count == 1
        assert session.get(WebhookDelivery, hooked.delivery_id).state == FAILED
    assert _audit(rt, "webhook.redeliver", hooked.hook.id) == [
        {"delivery_id": str(hooked.delivery_id), "attempt": 2},
        {"delivery_id": str(hooked.delivery_id), "attempt": 3}]


def test_a_ping_sends_a_signed_test_event_once_and_logs_it(live, receiver, hooked):
    rt = live.runtime
    receiver.wait_for(1)
    answer = requests.post(f"{hooked.base}/ping", headers=hooked.owner, timeout=10)
    assert answer.status_code == 202, answer.text
    body = answer.json()
    assert (body["event"], body["attempt"], body["webhook_id"]) == (
        "webhook.ping", 1, str(hooked.hook.id))
    _, ping = receiver.wait_for(2)
    assert ping.headers["X-Service-Event"] == "webhook.ping"
    assert ping.headers["X-Service-Delivery-ID"] == body["delivery_id"]
    assert _signed(hooked.hook.secret, ping)
    sent = json.loads(ping.body)
    assert (sent["id"], sent["event"], sent["data"]) == (
        body["delivery_id"], "webhook.ping", {"webhook_id": str(hooked.hook.id)})
    wait_until(lambda: len(_log(rt, hooked.hook.id)) == 2)
    assert _log(rt, hooked.hook.id)[1] == (uuid.UUID(body["delivery_id"]), "webhook.ping", 1,
                                           True, 200)

    receiver.answer(Answer(500))
    failed = requests.post(f"{hooked.base}/ping", headers=hooked.owner, timeout=10).json()
    wait_until(lambda: len(_log(rt, hooked.hook.id)) == 3)
    time.sleep(0.5)
    assert len(receiver.requests) == 3, "a ping is one attempt, never retried"
    assert _log(rt, hooked.hook.id)[2][1:] == ("webhook.ping", 1, False, 500)
    with rt.db.session() as session:
        assert session.get(Webhook, hooked.hook.id).failure_count == 1
    assert _audit(rt, "webhook.ping", hooked.hook.id) == sorted(
        [{"delivery_id": body["delivery_id"], "attempt": 1},
         {"delivery_id": failed["delivery_id"], "attempt": 1}],
        key=lambda after: after["delivery_id"])


def test_refusals_name_the_reason_and_change_nothing(live, receiver, hooked):
    rt = live.runtime
    receiver.wait_for(1)
    with rt.db.transaction() as session:
        member = make_user(session)
        other = make_owned_team(session, rt.settings, name="Other")
        other_hook = make_webhook(session, other, receiver.url)
        other_owner = auth_headers(session, rt.settings, other.owner)
        team = hooked.team
        add_member(session, team.org_access(session), user_id=member.id, role="member")
        add_team_member(session, team.access(session), user_id=member.id, role="member")
        as_member = auth_headers(session, rt.settings, member)
    redeliver = f"{hooked.base}/deliveries/{hooked.delivery_id}/redeliver"

    def post(url, headers):
        return requests.post(url, headers=headers, timeout=10)

    assert post(redeliver, as_member).status_code == 403  # view, but no team.webhooks.manage
    assert post(f"{hooked.base}/ping", as_member).status_code == 403
    assert post(redeliver, other_owner).status_code == 404
    assert post(f"{hooked.base}/deliveries/{uuid.uuid4()}/redeliver",
                hooked.owner).json()["error"] == "delivery not found"
    # Another team's delivery id, through this team's webhook: not found either.
    with rt.db.transaction() as session:
        other_event = make_event(session, other, EMAIL_RECEIVED)
        session.flush()
        [other_delivery] = create_deliveries(session, [session.get(Event, other_event)])
    assert post(f"{hooked.base}/deliveries/{other_delivery}/redeliver",
                hooked.owner).status_code == 404

    # Still being attempted: the other delivery is pending.
    other_base = (f"{live.base}/api/v1/orgs/{other.org_id}/teams/{other.team_id}/webhooks/"
                  f"{other_hook.id}")
    busy = post(f"{other_base}/deliveries/{other_delivery}/redeliver", other_owner)
    assert (busy.status_code, busy.json()["code"]) == (409, "conflict"), busy.text

    requests.patch(hooked.base, headers=hooked.owner, json={"is_active": False}, timeout=10)
    disabled = post(redeliver, hooked.owner)
    assert disabled.status_code == 409 and "disabled" in disabled.json()["error"]
    assert post(f"{hooked.base}/ping", hooked.owner).status_code == 409

    time.sleep(0.3)
    assert len(receiver.requests) == 1
    assert len(_log(rt, hooked.hook.id)) == 1
    with rt.db.session() as session:
        assert session.get(WebhookDelivery, other_delivery).state == PENDING
        assert session.get(WebhookDelivery, hooked.delivery_id).attempts == 1
    assert _audit(rt, "webhook.redeliver", hooked.hook.id) == []
    assert _audit(rt, "webhook.ping", hooked.hook.id) == []
