"""The SMTP client: message building, and connecting to a checked address instead of the name."""

from datetime import timedelta
from email.utils import parsedate_to_datetime

import pytest

from burnbox import mailer
from tests.smtp_sink import SmtpSink


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


def test_a_message_has_from_to_subject_date_and_a_message_id_on_the_sender_domain():
    message = mailer.build_message("Burnbox <no-reply@burnbox.test>", "a@example.test", "Hi",
                                   "Body")
    assert (message["From"], message["To"], message["Subject"]) == (
        "Burnbox <no-reply@burnbox.test>", "a@example.test", "Hi")
    assert parsedate_to_datetime(message["Date"]).utcoffset() == timedelta(0)
    assert message["Message-ID"].endswith("@burnbox.test>")


def test_a_pinned_connection_goes_to_the_given_address_and_never_resolves_the_name(sink):
    relay = mailer.Relay(host="relay.does-not-resolve.invalid", port=sink.port, starttls=False)
    with mailer.connect(relay, address="127.0.0.1") as client:
        client.send_message(mailer.build_message("a@burnbox.test", "b@example.test", "S", "T"))
    [message] = sink.wait_for(1)
    assert message["To"] == "b@example.test"


def test_send_submits_through_the_relay(sink):
    relay = mailer.Relay(host="127.0.0.1", port=sink.port, starttls=False)
    mailer.send(relay, mailer.build_message("a@burnbox.test", "c@example.test", "S", "T"))
    assert sink.wait_for(1)[0]["To"] == "c@example.test"
