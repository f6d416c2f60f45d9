"""The send_mail actor against a real SMTP receiver (aiosmtpd on a loopback port)."""

import dataclasses
import logging
import smtplib

import pytest

import tasks
from burnbox.secretbox import new_key
from models.admin.runtime_config import update_config
from models.platform.audit import Origin
from models.system_config import MAILER
from tasks import start_worker
from tasks.mail import TransientMailError, send_mail
from tests.smtp_sink import SmtpSink, free_port
from tests.tasks.conftest import drain


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


def _relay_runtime(runtime, port):
    """The test runtime with the mailer pointed at 127.0.0.1:port, and the broker set up on it."""
    settings = runtime.settings.replace(**{
        "mailer.host": "127.0.0.1", "mailer.port": port, "mailer.starttls": False,
        "mailer.from_address": "Burnbox <no-reply@burnbox.test>"})
    relayed = dataclasses.replace(runtime, settings=settings)
    return tasks.setup_broker(relayed)


@pytest.fixture
def relay_broker(runtime, sink):
    return _relay_runtime(runtime, sink.port)


@pytest.fixture
def worker(relay_broker):
    running = start_worker(relay_broker, threads=1)
    yield running
    running.stop()


def test_a_queued_message_is_delivered_through_the_configured_relay(sink, relay_broker, worker):
    send_mail.send("alice@example.test", "Hello", "Body line\n")
    [message] = sink.wait_for(1)
    assert message["To"] == "alice@example.test"
    assert message["From"] == "Burnbox <no-reply@burnbox.test>"
    assert message["Subject"] == "Hello"
    assert message["Message-ID"].endswith("@burnbox.test>")
    assert message.get_content().splitlines() == ["Body line"]


def test_a_temporary_refusal_is_retried_until_the_message_is_accepted(sink, relay_broker, worker):
    sink.replies = ["451 4.3.0 try again later"]
    send_mail.send_with_options(args=("bob@example.test", "Retry", "text"), min_backoff=10,
                                max_backoff=50)
    [message] = sink.wait_for(1)
    assert message["To"] == "bob@example.test"
    drain(relay_broker, "mail")


def test_a_temporary_refusal_raises_a_retryable_error(sink, relay_broker):
    sink.replies = ["451 4.3.0 try again later"]
    with pytest.raises(TransientMailError) as raised:
        send_mail("bob@example.test", "Retry", "text")
    assert send_mail.options["retry_when"](0, raised.value)


def test_an_unreachable_relay_raises_a_retryable_error(runtime):
    _relay_runtime(runtime, free_port())
    with pytest.raises(TransientMailError) as raised:
        send_mail("carol@example.test", "Down", "text")
    assert send_mail.options["retry_when"](3, raised.value)


def test_a_permanent_refusal_is_not_retried(sink, relay_broker):
    sink.replies = ["550 5.1.1 no such user"]
    with pytest.raises(smtplib.SMTPDataError) as raised:
        send_mail("nobody@example.test", "Nope", "text")
    assert not send_mail.options["retry_when"](0, raised.value)
    assert sink.messages == []


def test_retries_stop_after_the_maximum(runtime):
    assert not send_mail.options["retry_when"](8, TransientMailError("still down"))


def test_without_a_mailer_the_message_is_written_to_the_log(runtime, caplog):
    assert runtime.settings.mailer.host == ""
    with caplog.at_level(logging.INFO, logger="tasks.mail"):
        send_mail("dave@example.test", "Verify", "open https://x.test/verify/abc")
    [record] = [r for r in caplog.records if r.name == "tasks.mail"]
    assert record.to == "dave@example.test"
    assert record.subject == "Verify"
    assert "https://x.test/verify/abc" in record.body


def test_the_relay_an_administrator_stored_is_used_for_the_next_message(runtime, sink):
    """No relay in the settings; one stored through the admin API (with a sealed password the
    sink does not ask for) is used without a restart."""
    key = new_key()
    settings = runtime.settings.replace(**{"secrets.encryption_keys": key})
    keyed = dataclasses.replace(runtime, settings=settings)
    with keyed.db.transaction() as session:
        update_config(session, settings, MAILER, {
            "host": "127.0.0.1", "port": sink.port, "starttls": False, "password": "",
            "from_address": "Ops <ops@burnbox.test>"}, actor_id=None, origin=Origin())
    broker = tasks.setup_broker(keyed)
    running = start_worker(broker, threads=1)
    try:
        send_mail.send("carol@example.test", "Stored relay", "text")
        [message] = sink.wait_for(1)
    finally:
        running.stop()
    assert (message["To"], message["From"]) == ("carol@example.test", "Ops <ops@burnbox.test>")
