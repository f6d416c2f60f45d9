"""A web process that loses its Redis subscription for a moment (Redis restarted, a connection
cut) and subscribes again: what was published in between reached none of its listeners, so a
waiting request looks again at once, and a socket of an inbox stream sends the kept messages it
missed, in order and once. A private Redis server, so the tests can cut the process's
subscription and refuse it channels (ACL) without touching anyone else's."""

import contextlib
import dataclasses
import json
import threading
import time

import pytest
import requests
import websocket
from sqlalchemy import event
from sqlalchemy.engine import Engine

from burnbox.kv import RedisStore
from models.delivery import realtime as rt
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.metrics_scrape import counted
from tests.processes import wait_until
from tests.redis_server import private_redis
from tests.web.conftest import Live, serving

pytestmark = pytest.mark.slow

PUBLISHER_PASSWORD = "publisher-secret"


@pytest.fixture
def redis_server():
    with private_redis() as server:
        yield server


@pytest.fixture
def live_on_private_redis(committed_runtime, redis_server):
    """The app on a real threaded server whose store is the private Redis (every backend)."""
    runtime = dataclasses.replace(committed_runtime, store=RedisStore(redis_server.url))
    with serving(runtime) as base:
        yield Live(base, runtime)


def _subscribed(redis_server) -> int:
    """How many pattern subscriptions the server holds: the web process's hub's, or none."""
    with redis_server.client() as client:
        return int(client.execute_command("PUBSUB", "NUMPAT"))


def _world_and_inbox(live):
    with live.runtime.db.transaction() as session:
        world = make_mail_world(session, live.runtime.settings)
        inbox = make_inbox(session, live.runtime.settings, world)
    return world, inbox


@contextlib.contextmanager
def _looks_for_mail(live):
    """Count the statements that read e-mails (a wait's looks) while the block runs, on any
    engine: a wait's session is read-only, which on SQLite reads through an engine of its own."""
    looks = []

    def note(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") and "FROM emails" in statement:
            looks.append(statement)

    event.listen(Engine, "after_cursor_execute", note)
    try:
        yield looks
    finally:
        event.remove(Engine, "after_cursor_execute", note)


def _wait_in_thread(live, world, inbox, answers):
    """Start a 20 s wait for the inbox's mail on a thread; it appends (its answer, when)."""

    def wait():
        answer = requests.get(f"{live.base}/api/v1/inboxes/{inbox.id}/emails/wait",
                              params={"timeout": "20s"}, headers=world.headers["lead"],
                              timeout=60)
        answers.append((answer, time.monotonic()))

    waiting = threading.Thread(target=wait)
    waiting.start()
    wait_until(lambda: counted("burnbox_wait_requests_in_progress") == 1)
    return waiting


def _stored_unheard_mail_answers_the_wait_once(live, wake, first_look_within=30.0):
    """A wait for a new inbox's mail looks (within `first_look_within` seconds), finds
    nothing and sleeps; an e-mail is then stored with nobody publishing it (no mailin, no
    worker), as if its message had been published while the process was not subscribed, and
    the wait stays asleep. After `wake()`, it answers with the mail within 10 s, not at its
    deadline."""
    world, inbox = _world_and_inbox(live)
    answers = []
    with _looks_for_mail(live) as looks:
        waiting = _wait_in_thread(live, world, inbox, answers)
        wait_until(lambda: looks, timeout=first_look_within)
    make_email(live.runtime, inbox.full_address, subject="Stored unheard")
    time.sleep(0.5)
    assert answers == []
    woken = time.monotonic()
    wake()
    waiting.join(timeout=60)
    [(answer, at)] = answers
    assert answer.status_code == 200, answer.text
    assert answer.json()["timed_out"] is False
    assert [email["subject"] for email in answer.json()["emails"]] == ["Stored unheard"]
    assert woken < at < woken + 10, "the wait slept until its deadline"


def _redis_command(redis_server, *command: str) -> None:
    with redis_server.client() as client:
        client.execute_command(*command)


def test_a_wait_looks_again_when_its_process_subscribes_again(live_on_private_redis,
                                                               redis_server):
    """Once the process subscribes again after its subscription was cut, the wait looks and
    answers at once instead of at its deadline."""
    _stored_unheard_mail_answers_the_wait_once(
        live_on_private_redis,
        lambda: _redis_command(redis_server, "CLIENT", "KILL", "TYPE", "pubsub"))


def test_a_wait_begun_before_the_first_subscription_looks_again_once_it_is_made(
        live_on_private_redis, redis_server):
    """The process's first subscription is refused (the channels are denied to its Redis
    user): the wait stops waiting for it after 5 s, looks and sleeps. Once the subscription
    is made, the wait looks again."""
    _redis_command(redis_server, "ACL", "SETUSER", "default", "resetchannels")
    _stored_unheard_mail_answers_the_wait_once(
        live_on_private_redis,
        lambda: _redis_command(redis_server, "ACL", "SETUSER", "default", "allchannels"))


def test_a_socket_sends_what_was_published_while_its_process_had_no_subscription(
        live_on_private_redis, redis_server):
    """The channels are refused to the web process's Redis user for a moment (which also ends
    its subscription), while another user publishes on the inbox's stream: once the process
    subscribes again, the socket sends the kept message it missed, then the live ones, each
    once."""
    live = live_on_private_redis
    world, inbox = _world_and_inbox(live)
    channel = rt.inbox_channel(inbox.id)
    _redis_command(redis_server, "ACL", "SETUSER", "publisher", "on", f">{PUBLISHER_PASSWORD}",
                   "~*", "&*", "+@all")
    publisher = RedisStore(redis_server.url.replace(
        "redis://", f"redis://publisher:{PUBLISHER_PASSWORD}@", 1))

    def publish(subject):
        publisher.publish_numbered(channel, rt.encode_message("email.received",
                                                              {"subject": subject}),
                                   rt.REPLAY_KEEP, rt.REPLAY_TTL)

    publish("before the socket")  # kept, and not for a socket opened after it
    socket = live.connect(f"inboxes/{inbox.id}", world.headers["lead"])
    wait_until(lambda: _subscribed(redis_server) == 1)
    _redis_command(redis_server, "ACL", "SETUSER", "default", "resetchannels")
    _redis_command(redis_server, "CLIENT", "KILL", "TYPE", "pubsub")
    wait_until(lambda: _subscribed(redis_server) == 0)
    publish("while unsubscribed")
    _redis_command(redis_server, "ACL", "SETUSER", "default", "allchannels")
    wait_until(lambda: _subscribed(redis_server) == 1)
    publish("after")

    socket.settimeout(10)
    received = [json.loads(socket.recv()) for _ in range(2)]
    assert [(message["id"], message["data"]["subject"]) for message in received] == [
        (2, "while unsubscribed"), (3, "after")]
    socket.settimeout(1)
    with pytest.raises(websocket.WebSocketTimeoutException):
        socket.recv()
    socket.close()
