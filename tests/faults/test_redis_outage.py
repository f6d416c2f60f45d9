"""Redis killed under SMTP and API load, then started again empty (no persistence: every queued
message and every key is gone): ingest goes on (every message gets its 250), the API keeps
answering, a login over the session limit revokes the oldest session instead of asking which
one, and once Redis is back every stored e-mail's webhook is delivered, by the clock's outbox
and delivery sweeps, without restarting any process. The webhooks whose first attempt mailin
could not hand over during the outage arrive within 30 s of its end, not after the sweep's grace
and a page per sweep period."""

import json
import smtplib
import socket
import time

import pytest
import requests
from sqlalchemy import select

from models.events import outbox_backlog
from models.identity.sessions import UserSession
from models.mail.entities import Email
from tasks.authentication import authenticate_emails
from tests.factories.delivery import make_webhook
from tests.factories.identity import make_password_user
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.factories.tenancy import OwnedTeam
from tests.faults.load import Load, api_callers, smtp_senders
from tests.identity import PASSWORD
from tests.processes import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.faults]

DOWN_FOR = 4.0  # seconds Redis stays down
DELIVERED_WITHIN = 40.0  # seconds after Redis is back for the last webhook (the sweeps' periods
# below are a few seconds; production's 30 s grace makes that figure larger)

# Short clock periods, so the sweeps run several times within the test.
CLOCK = {"clock.tick": "200ms", "clock.outbox_grace": "2s", "clock.webhook_sweep_interval": "1s",
         "webhooks.lease_grace": "1s", "defaults.webhook_timeout": "5s"}


def test_a_redis_outage_keeps_ingest_going_and_every_webhook_is_delivered_after(
        make_stack, receiver):
    stack = make_stack(**CLOCK)
    with stack.runtime.db.transaction() as session:
        world = make_mail_world(session, stack.settings)
        inboxes = [make_inbox(session, stack.settings, world) for _ in range(3)]
        team = OwnedTeam(world.users["owner"], world.ids["org"], world.ids["team"])
        make_webhook(session, team, receiver.url, events=("email.received",))
        limited = make_password_user(session, stack.settings, email="limited@example.test",
                                     max_sessions=1)
    api = stack.web()
    smtp = stack.mailin()
    stack.worker()
    stack.start("clock", "clock")
    started = {name: process.pid for name, process in stack.processes.items()}

    def login():
        return requests.post(
            f"{api}/auth/login", json={"email": "limited@example.test", "password": PASSWORD},
            timeout=15)

    first = login()
    assert first.status_code == 200, first.text
    mail = smtp_senders(smtp, [inbox.full_address for inbox in inboxes], count=3,
                        pause=0.1)
    calls = api_callers([f"{api}/auth/me", f"{api}/inboxes/{inboxes[0].id}/emails"],
                        world.headers["team_member"], count=1)
    more_mail = Load()  # the mail after the outage
    try:
        wait_until(lambda: mail.answered_since(0, 250) and receiver.requests, timeout=30)
        time.sleep(1.0)
        stack.redis.stop()
        stopped = time.monotonic()
        time.sleep(1.0)
        during = login()
        time.sleep(max(0.0, DOWN_FOR - (time.monotonic() - stopped)))
        # The outage's mail is the backlog. New mail's dispatches would take it over too (each
        # claims up to TOP_UP waiting events): with the senders going on they sometimes took
        # all of it before the sweep looked, and the sweep found nothing to hand over.
        mail.stop()
        restarting = time.monotonic()
        stack.redis.start()
        back = time.monotonic()
        wait_until(lambda: swept(stack) > 0, timeout=30)
        more_mail = smtp_senders(smtp, [inbox.full_address for inbox in inboxes], count=1)
        wait_until(lambda: more_mail.answered_since(back, 250), timeout=30)
        time.sleep(1.0)
    finally:
        mail.stop()
        more_mail.stop()
        calls.stop()
    after = login()

    with stack.runtime.db.session() as session:
        stored = {str(email_id) for email_id in session.scalars(select(Email.id))}
        sessions = session.scalars(select(UserSession).where(UserSession.user_id == limited.id)
                                   .order_by(UserSession.created_at)).all()

    def delivered():
        return {json.loads(request.body)["data"]["email_id"] for request in receiver.requests}

    wait_until(lambda: stored <= delivered(), timeout=DELIVERED_WITHIN)
    caught_up = time.monotonic() - back

    assert mail.answers() == more_mail.answers() == {250}
    assert mail.answers(stopped, restarting) == {250}
    assert calls.answers() == {200}
    assert calls.answers(stopped, restarting) == {200}
    # Redis down: the login over the limit signed in and revoked the oldest session; Redis
    # back: the limit asks which session to end again.
    assert during.status_code == 200, during.text
    assert [(s.revoked_at is None, s.revoked_reason) for s in sessions] == [
        (False, "session_limit"), (True, None)]
    assert after.status_code == 409 and after.json()["code"] == "session_limit", after.text
    assert stack.running() == list(started)
    assert {name: process.pid for name, process in stack.processes.items()} == started
    assert caught_up < DELIVERED_WITHIN
    # The hand-offs lost with Redis were made good by the clock's outbox sweep: nothing else
    # dispatched the backlog (the wait for it above), and nothing stays undispatched.
    wait_until(lambda: undispatched(stack) == 0, timeout=30)


def swept(stack) -> int:
    """How many events the outbox sweeps of the stack's worker handed over so far."""
    return sum(line["count"] for line in stack.log("worker")
               if line["message"] == "re-enqueued undispatched events")


def undispatched(stack) -> int:
    """How many events of the stack's database wait for their fan-out."""
    with stack.runtime.db.session() as session:
        return outbox_backlog(session)[0]



# The delivery sweep at its production periods (30 s grace and period), with small pages: the
# backlog below is several pages, and the grace alone would hold the outage's last deliveries
# until 30 s after Redis returned.
CATCH_UP = {"clock.tick": "200ms", "webhooks.sweep_page": "20",
            "defaults.webhook_timeout": "5s"}
HOOKS = 4  # webhooks on the team: each e-mail is a delivery to each
BACKLOG_MAILS = 30  # e-mails stored while Redis is down: 120 deliveries, six pages
CAUGHT_UP_WITHIN = 30.0  # seconds after Redis returns for the last of them


def _mail_during_an_outage(stack, client, address):
    """Stop Redis, send BACKLOG_MAILS e-mails to `address` over `client`, start Redis again:
    when it was back (time.monotonic()) and the ids of every e-mail stored by then."""
    stack.redis.stop()
    for _ in range(BACKLOG_MAILS):
        client.sendmail("load@sender.example", [address], message(address))
    stack.redis.start()
    back = time.monotonic()
    with stack.runtime.db.session() as session:
        return back, set(map(str, session.scalars(select(Email.id))))


def test_webhooks_whose_first_attempt_was_lost_in_a_redis_outage_arrive_within_30_s_of_its_end(
        make_stack, receiver):
    """mailin creates an e-mail's deliveries in the transaction that stores it and hands their
    first attempts over after the commit; with Redis down that hand-off fails, and nothing but
    the delivery sweep sends them. They used to wait for the grace (30 s), then went out one
    page per 30 s period; now the clock's first tick after the outage sweeps them without the
    grace and the sweep takes page after page at once, so they all arrive within 30 s."""
    stack = make_stack(**CATCH_UP)
    with stack.runtime.db.transaction() as session:
        world = make_mail_world(session, stack.settings)
        inbox = make_inbox(session, stack.settings, world)
        team = OwnedTeam(world.users["owner"], world.ids["org"], world.ids["team"])
        for n in range(HOOKS):
            make_webhook(session, team, f"{receiver.url}/{n}", events=("email.received",))
    smtp = stack.mailin()
    stack.worker()
    stack.start("clock", "clock")

    def delivered():
        return {(request.path, json.loads(request.body)["data"]["email_id"])
                for request in list(receiver.requests)}

    with smtplib.SMTP("127.0.0.1", smtp, timeout=15) as client:
        client.sendmail("load@sender.example", [inbox.full_address],
                        message(inbox.full_address))
        wait_until(lambda: len(delivered()) == HOOKS, timeout=30)  # the path works before
        back, stored = _mail_during_an_outage(stack, client, inbox.full_address)
    expected = {(f"/hook/{n}", email_id) for n in range(HOOKS) for email_id in stored}
    assert len(expected) == HOOKS * (BACKLOG_MAILS + 1)
    wait_until(lambda: expected <= delivered(), timeout=CAUGHT_UP_WITHIN)
    caught_up = time.monotonic() - back

    assert caught_up < CAUGHT_UP_WITHIN
    # The sweep handed the backlog over (mailin's hand-offs were lost), in several pages.
    pages = [line["count"] for line in stack.log("worker")
             if line["message"] == "re-sending stalled webhook deliveries"]
    assert sum(pages) >= HOOKS * BACKLOG_MAILS and len(pages) > 1, pages


@pytest.fixture
def silent_dns():
    """A DNS server that never answers: a UDP socket on loopback that nobody reads, so every
    look-up sent to it waits its whole timeout (as behind a resolver that went away)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{server.getsockname()[1]}"


# Every mail's authentication results wait on a DNS server that never answers (two look-ups
# an e-mail, 20 s each), and three times as many authentication messages as the general pool
# has threads (8) are queued when Redis goes down, as the fan-out of a backlog sends them (one
# per dispatched chunk).
SLOW_DNS = {**CATCH_UP, "dns.timeout": "20s"}
BEFORE_MAILS = 8
CHECKS_EACH = 3  # authentication messages sent for each of them


def test_a_backlog_from_a_redis_outage_is_delivered_while_dns_holds_the_authentication_checks(
        make_stack, receiver, silent_dns):
    """The authentication results of new mail used to be computed on the general pool, beside
    the event fan-out and the clock's sweeps: with DNS slow to answer, every general thread
    sat in a look-up, and the delivery sweep's pages after a Redis outage waited for them (the
    webhook backlog stood still). With a pool of its own, slow DNS holds only its threads."""
    stack = make_stack(**SLOW_DNS, **{"dns.nameservers": silent_dns})
    with stack.runtime.db.transaction() as session:
        world = make_mail_world(session, stack.settings)
        inbox = make_inbox(session, stack.settings, world)
        team = OwnedTeam(world.users["owner"], world.ids["org"], world.ids["team"])
        make_webhook(session, team, receiver.url, events=("email.received",))
    smtp = stack.mailin()
    stack.worker()
    stack.start("clock", "clock")

    def delivered():
        return {json.loads(request.body)["data"]["email_id"] for request in list(receiver.requests)}

    with smtplib.SMTP("127.0.0.1", smtp, timeout=15) as client:
        for _ in range(BEFORE_MAILS):
            client.sendmail("load@sender.example", [inbox.full_address],
                            message(inbox.full_address))
        wait_until(lambda: len(delivered()) == BEFORE_MAILS, timeout=30)
        with stack.runtime.db.session() as session:
            before = [str(email_id) for email_id in session.scalars(select(Email.id))]
        for _ in range(CHECKS_EACH):
            for email_id in before:
                authenticate_emails.send([email_id])
        back, stored = _mail_during_an_outage(stack, client, inbox.full_address)
    assert len(stored) == BEFORE_MAILS + BACKLOG_MAILS
    wait_until(lambda: stored <= delivered(), timeout=CAUGHT_UP_WITHIN)
    assert time.monotonic() - back < CAUGHT_UP_WITHIN
