"""Two `burnbox clock` processes on the same PostgreSQL and Redis: nothing is done twice. Each
job's period slot is sent by one clock only; the outbox sweep hands a backlog of events whose
hand-off was lost over once (the sweep alone dispatches them, and every webhook arrives once);
the cleanup removes a lapsed inbox once; the delivery sweep re-sends a stalled delivery, which
arrives once."""

import json
import signal
import time
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from models.delivery.webhooks import WebhookDelivery, claim_attempts, create_deliveries
from models.events import Event
from tests.factories.delivery import make_event, make_webhook
from tests.factories.mail import lapse, make_inbox, make_mail_world
from tests.factories.tenancy import OwnedTeam

pytestmark = [pytest.mark.postgres, pytest.mark.faults]

BACKLOG = 30  # events whose hand-off is lost
CLOCK = {"clock.tick": "100ms", "clock.outbox_grace": "2s", "clock.webhook_sweep_interval": "1s",
         "clock.cleanup_interval": "1s", "webhooks.lease_grace": "1s",
         "defaults.webhook_timeout": "2s"}


def test_two_clocks_do_nothing_twice(make_stack, receiver):
    stack = make_stack(**CLOCK)
    with stack.runtime.db.transaction() as session:
        world = make_mail_world(session, stack.settings)
        team = OwnedTeam(world.users["owner"], world.ids["org"], world.ids["team"])
        make_webhook(session, team, receiver.url)
        lapsed = make_inbox(session, stack.settings, world)  # and its inbox.created event
        lapse(session, lapsed.id)
        for n in range(BACKLOG):
            make_event(session, team, subject=f"Backlog {n}")
    with stack.runtime.db.transaction() as session:
        # A delivery whose worker died mid-attempt: in flight, its lease already run out.
        stalled_event = session.get(Event, make_event(session, team, subject="Stalled"))
        (stalled,) = create_deliveries(session, [stalled_event])
        session.execute(update(Event).where(Event.id == stalled_event.id)
                        .values(dispatched_at=func.now()))
    with stack.runtime.db.transaction() as session:
        claim_attempts(session, [stalled], 1, timedelta(0))
        # The backlog is older than the grace, and its hand-off is lost with the queues.
        session.execute(update(Event).where(Event.dispatched_at.is_(None))
                        .values(created_at=func.now() - timedelta(minutes=1)))
    stack.redis.client().flushdb()

    stack.worker()
    clocks = ("clock a", "clock b")
    for name in clocks:
        stack.start(name, "clock")
    # The backlog, the inbox's creation and expiry, and the stalled delivery: one webhook each.
    expected = BACKLOG + 3
    receiver.wait_for(expected, timeout=30)
    time.sleep(3.0)  # several more periods of every job: nothing more may arrive
    assert stack.running() == ["worker", *clocks]
    for name in clocks:
        stack.signal(name, signal.SIGTERM)

    # Each slot of each job was sent by one clock.
    sent = Counter((line["job"], line["slot"]) for name in clocks for line in stack.log(name)
                   if line["message"] == "job sent")
    twice = [slot for slot, count in sent.items() if count > 1]
    assert twice == [], twice
    per_job = Counter(job for job, _ in sent)
    assert per_job["sweep_outbox"] >= 2 and per_job["webhook_sweep"] >= 3, per_job
    assert per_job["cleanup"] >= 3, per_job

    # Every delivery arrived once.
    ids = Counter(request.headers["X-Service-Delivery-ID"] for request in receiver.requests)
    assert len(ids) == expected and set(ids.values()) == {1}, ids
    assert stalled and str(stalled) in ids
    events = Counter(json.loads(request.body)["event"] for request in receiver.requests)
    assert events == {"email.received": BACKLOG + 1, "inbox.created": 1, "inbox.expired": 1}
    with stack.runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(WebhookDelivery)
                              .where(WebhookDelivery.state != "succeeded")) == 0

    worker = stack.log("worker")
    swept = [line["count"] for line in worker
             if line["message"] == "re-enqueued undispatched events"]
    # One sweep handed the whole backlog over. (A sweep that overlaps a running one, such as
    # two slots' sweeps queued before the worker started, does nothing: its line says so.)
    assert swept[:1] == [BACKLOG + 1], swept
    removed = [line["count"] for line in worker if line["message"] == "cleanup removed rows"
               and line["step"] == "lapsed_inboxes"]
    assert removed == [1]
    resent = [line["count"] for line in worker
              if line["message"] == "re-sending stalled webhook deliveries"]
    assert resent, "the delivery sweep never re-sent the stalled delivery"
