"""A `burnbox worker` SIGKILLed while it delivers webhooks: every delivery reaches the receiver
at least once, and one cut short is made again with the same delivery id (the receiver sees the
X-Service-Delivery-ID repeated, never a delivery missing). Nothing but the clock's sweeps and a
new worker is needed: no message is replayed by hand. Once the dead worker's leases lapse, the
next sweep hands all of them over at once, not a page per sweep period."""

import signal
import time

import pytest
from sqlalchemy import func, select

from models.delivery.webhooks import WebhookDelivery
from tests.factories.delivery import make_event, make_webhook
from tests.factories.tenancy import make_owned_team
from tests.processes import wait_until
from tests.receiver import Answer

pytestmark = [pytest.mark.postgres, pytest.mark.faults]

EVENTS = 40
DELIVERED_WITHIN = 40.0  # seconds after the kill for the last delivery
IN_FLIGHT_SLACK = 1.0  # seconds after the kill a request of the dead worker may be stamped

CLOCK = {"clock.tick": "200ms", "clock.outbox_grace": "2s", "clock.webhook_sweep_interval": "1s",
         "webhooks.lease_grace": "1s", "defaults.webhook_timeout": "2s"}


def test_a_worker_killed_mid_delivery_delivers_everything_with_the_same_ids(
        make_stack, receiver):
    stack = make_stack(**CLOCK)
    receiver.default = Answer(200, delay=0.5)  # every delivery takes a while: some are cut short
    with stack.runtime.db.transaction() as session:
        team = make_owned_team(session, stack.settings)
        hook = make_webhook(session, team, receiver.url)
    stack.worker("first worker")
    stack.start("clock", "clock")
    with stack.runtime.db.transaction() as session:
        for n in range(EVENTS):
            make_event(session, team, subject=f"Event {n}")

    receiver.wait_for(8, timeout=30)
    stack.signal("first worker", signal.SIGKILL)
    killed = time.monotonic()
    stack.worker("second worker")

    def deliveries():
        with stack.runtime.db.session() as session:
            return session.execute(select(WebhookDelivery.id, WebhookDelivery.state)
                                   .where(WebhookDelivery.webhook_id == hook.id)).all()

    wait_until(lambda: len(deliveries()) == EVENTS
               and {state for _, state in deliveries()} == {"succeeded"},
               timeout=DELIVERED_WITHIN)
    caught_up = time.monotonic() - killed

    received: dict[str, list[float]] = {}
    for request in list(receiver.requests):
        received.setdefault(request.headers["X-Service-Delivery-ID"], []).append(request.at)
    assert set(received) == {str(delivery_id) for delivery_id, _ in deliveries()}
    repeated = {delivery_id: times for delivery_id, times in received.items() if len(times) > 1}
    assert repeated, "the kill cut no delivery short"
    # Only a delivery that was in flight when the worker died is made twice. The receiver
    # stamps a request once one of its threads has read it, which under load lags the send:
    # requests the first worker sent just before it died were stamped after `killed` (seen in
    # CI). The second worker needs seconds to start (its imports alone take over one) before
    # it sends anything, so a first arrival within `IN_FLIGHT_SLACK` of the kill is the dead
    # worker's.
    assert all(times[0] < killed + IN_FLIGHT_SLACK for times in repeated.values()), repeated
    assert caught_up < DELIVERED_WITHIN


# Small pages and a sweep period far shorter than production's, so that one page per period
# (the old pace) would need over a minute for the deliveries the kill leaves leased, while a
# sweep that takes page after page needs one period.
CATCH_UP = {"clock.tick": "200ms", "clock.webhook_sweep_interval": "5s",
            "webhooks.lease_grace": "1s", "defaults.webhook_timeout": "1s",
            "webhooks.sweep_page": "8"}
HOOKS = 4
EVENTS_PER_HOOK = 30  # 120 deliveries in 15 messages of 8, all taken by the first worker at once
# A message's lease: 8 attempts x the 1 s timeout + the 1 s grace = 9 s from its claim, then
# the next sweep (5 s period), then about 4 s of delivering (8 attempts of 0.5 s a message,
# the messages side by side), with slack for the shared CPU.
RESUMED_WITHIN = 30.0  # seconds after the kill for the last delivery


def test_deliveries_a_killed_worker_held_all_go_out_at_the_first_sweep_after_their_leases_lapse(
        make_stack, receiver):
    """The killed worker leaves about a hundred deliveries leased. Once the leases lapse the
    next sweep takes them page after page at once: they used to go out one page per sweep
    period."""
    stack = make_stack(**CATCH_UP)
    receiver.default = Answer(200, delay=0.5)
    with stack.runtime.db.transaction() as session:
        team = make_owned_team(session, stack.settings)
        hooks = [make_webhook(session, team, f"{receiver.url}/{n}") for n in range(HOOKS)]
    stack.worker("first worker")
    stack.start("clock", "clock")
    with stack.runtime.db.transaction() as session:
        for n in range(EVENTS_PER_HOOK):
            make_event(session, team, subject=f"Event {n}")

    receiver.wait_for(4 * HOOKS, timeout=30)  # every webhook's messages are under way
    stack.signal("first worker", signal.SIGKILL)
    killed = time.monotonic()
    with stack.runtime.db.session() as session:
        leased = session.scalar(select(func.count()).select_from(WebhookDelivery)
                                .where(WebhookDelivery.state == "in_flight"))
    # Several pages: one page per period would take longer than RESUMED_WITHIN.
    assert leased > 6 * 8, f"the kill left only {leased} deliveries leased"
    stack.worker("second worker")

    def states():
        with stack.runtime.db.session() as session:
            return session.execute(
                select(WebhookDelivery.state, func.count()).group_by(WebhookDelivery.state)
                .where(WebhookDelivery.webhook_id.in_([hook.id for hook in hooks]))).all()

    wait_until(lambda: states() == [("succeeded", HOOKS * EVENTS_PER_HOOK)],
               timeout=RESUMED_WITHIN)
    resumed = time.monotonic() - killed
    assert resumed < RESUMED_WITHIN
    received = {request.headers["X-Service-Delivery-ID"] for request in receiver.requests}
    assert len(received) == HOOKS * EVENTS_PER_HOOK
