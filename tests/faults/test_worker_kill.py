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


def _delivering(stack, receiver, answer, events):
    """A team's webhook to `receiver` (answering `answer`), "first worker" and the clock
    running, and `events` committed: the stack and the webhook."""
    receiver.default = answer
    with stack.runtime.db.transaction() as session:
        team = make_owned_team(session, stack.settings)
        hook = make_webhook(session, team, receiver.url)
    stack.worker("first worker")
    stack.start("clock", "clock")
    with stack.runtime.db.transaction() as session:
        for n in range(events):
            make_event(session, team, subject=f"Event {n}")
    return stack, hook


def test_a_worker_killed_mid_delivery_delivers_everything_with_the_same_ids(
        make_stack, receiver):
    # Every delivery takes a while: some are cut short.
    stack, hook = _delivering(make_stack(**CLOCK), receiver, Answer(200, delay=0.5), EVENTS)

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
# A message's lease: the 1 s timeout + the 1 s grace from its claim (its attempts leave side by
# side), then the next sweep (5 s period), then the attempts of 0.5 s, with slack for the
# shared CPU.
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

    def leased():
        with stack.runtime.db.session() as session:
            return session.scalar(select(func.count()).select_from(WebhookDelivery)
                                  .where(WebhookDelivery.state == "in_flight"))

    # Several pages: one page per period would take longer than RESUMED_WITHIN. A message's
    # attempts leave side by side and hold their leases about 0.5 s, so the kill waits for a
    # moment most are held (counting arrivals instead left it to chance how many still were:
    # the messages that record meanwhile give theirs up).
    wait_until(lambda: leased() >= 10 * 8, timeout=30)
    stack.signal("first worker", signal.SIGKILL)
    killed = time.monotonic()
    assert leased() > 6 * 8, f"the kill left only {leased()} deliveries leased"
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


# A receiver that holds every request, then answers in 2 s: the shape of the outside check
# (300 deliveries, a worker SIGKILLed with over a hundred in flight). Attempts time out after
# 30 s, so none held gives up before the kill; leases of that timeout plus a 1 s grace, sweeps
# every second.
SLOW = {"clock.tick": "200ms", "clock.webhook_sweep_interval": "1s",
        "webhooks.lease_grace": "1s", "defaults.webhook_timeout": "30s"}
SLOW_EVENTS = 300
# Requests in flight at once from the one worker process before the kill, counted within
# IN_FLIGHT_WITHIN of the first (less than the attempts' timeout, so each is still held): more
# than three times its 32 delivery threads. Its attempts used to be made one per thread at a
# time, so 32 was the most (at 2 s an answer, 16 deliveries a second), and a killed worker's
# leases lasted a timeout per attempt of its message.
IN_FLIGHT_AT_ONCE = 100
IN_FLIGHT_WITHIN = 20.0
# From the kill to the last delivery: the 31 s leases, a sweep, the second worker's start
# (several seconds on a busy machine) and 300 attempts of 2 s side by side.
SLOW_RESUMED_WITHIN = 75.0


def test_a_slow_receiver_gets_many_deliveries_at_once_and_a_killed_worker_delays_them_one_lease(
        make_stack, receiver):
    stack, hook = _delivering(make_stack(**SLOW), receiver, Answer(200, hold=True),
                              SLOW_EVENTS)

    receiver.wait_for(1, timeout=60)  # the worker is up and sending
    receiver.wait_for(IN_FLIGHT_AT_ONCE, timeout=IN_FLIGHT_WITHIN)  # all held, none timed out
    stack.signal("first worker", signal.SIGKILL)
    killed = time.monotonic()
    with receiver.arrived:
        receiver.default = Answer(200, delay=2.0)
    receiver.released.set()
    stack.worker("second worker")

    def states():
        with stack.runtime.db.session() as session:
            return session.execute(
                select(WebhookDelivery.state, func.count()).group_by(WebhookDelivery.state)
                .where(WebhookDelivery.webhook_id == hook.id)).all()

    wait_until(lambda: states() == [("succeeded", SLOW_EVENTS)], timeout=SLOW_RESUMED_WITHIN)
    resumed = time.monotonic() - killed

    received: dict[str, list[float]] = {}
    for request in list(receiver.requests):
        received.setdefault(request.headers["X-Service-Delivery-ID"], []).append(request.at)
    with stack.runtime.db.session() as session:
        ids = set(map(str, session.scalars(select(WebhookDelivery.id)
                                           .where(WebhookDelivery.webhook_id == hook.id))))
    assert set(received) == ids  # every delivery arrived, under its one id
    # Made twice: only what the dead worker had in flight (see the first test's slack).
    assert all(times[0] < killed + IN_FLIGHT_SLACK
               for times in received.values() if len(times) > 1)
    assert resumed < SLOW_RESUMED_WITHIN
