"""The Python client's release: `Email.release` queues it, the worker sends it through a real
SMTP receiver as relay, `Email.releases` shows the relay's reply; a key without the scope gets
the API's 403 as a BurnboxError."""

import pytest
import requests
from burnbox_client import Burnbox, BurnboxError

from tasks import start_worker
from tests.factories.mail import make_email
from tests.release_helpers import committed_release
from tests.smtp_sink import SmtpSink
from tests.tasks.conftest import wait_until
from tests.web.conftest import serving


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


def _key(base, world, scopes):
    answer = requests.post(base + world.path("/orgs/{org}/teams/{team}/api-keys"),
                           json={"name": "ci", "scopes": scopes},
                           headers=world.headers["lead"], timeout=10)
    assert answer.status_code == 201, answer.text
    return answer.json()["raw_key"]


def test_the_python_client_releases_an_email_and_reads_the_result(committed_runtime, sink):
    made = committed_release(committed_runtime, sink.port)
    runtime, world, email_id = made.runtime, made.world, made.email_id
    running = start_worker(made.broker, threads=1)
    try:
        with serving(runtime) as base:
            client = Burnbox(base, _key(base, world, ["team.emails.view",
                                                      "team.emails.release"]))
            email = client.emails.get(str(email_id))
            queued = email.release("qa@company.example")
            assert (queued["state"], queued["recipients"]) == ("queued",
                                                               ["qa@company.example"])
            wait_until(lambda: email.releases()[0]["state"] == "sent")
            [done] = email.releases()
            assert done["relay_reply"].startswith("250") and done["attempts"] == 1
            assert sink.wait_for(1)[0]["Subject"] == "Your code"

            reader = Burnbox(base, _key(base, world, ["team.emails.view"]))
            with pytest.raises(BurnboxError) as refused:
                reader.emails.get(str(email_id)).release("qa@company.example")
            assert refused.value.status == 403
            with pytest.raises(BurnboxError) as outside:
                email.release("me@elsewhere.example")
            assert outside.value.status == 403
            assert outside.value.details == {"recipients": ["me@elsewhere.example"]}
    finally:
        running.stop()


def test_the_python_client_adds_an_auto_release_rule_whose_releases_show_on_the_email(
        committed_runtime, sink):
    made = committed_release(committed_runtime, sink.port)
    runtime, world = made.runtime, made.world
    running = start_worker(made.broker, threads=1)
    try:
        with serving(runtime) as base:
            client = Burnbox(base, _key(base, world, ["team.inboxes.view", "team.emails.view",
                                                      "team.emails.release"]))
            email = client.emails.get(str(made.email_id))
            inbox = client.inboxes.get(email.inbox_id)
            rule = inbox.add_release_rule("subject:invoice", "qa@company.example")
            assert inbox.release_rules() == [rule]
            make_email(runtime, inbox.address, subject="Invoice 9")
            [invoice] = inbox.wait_for_emails(1, subject="Invoice 9")
            wait_until(lambda: invoice.releases() and invoice.releases()[0]["state"] == "sent")
            assert invoice.releases()[0]["rule_id"] == rule["id"]
            assert sink.wait_for(1)[0]["Subject"] == "Invoice 9"
            inbox.delete_release_rule(rule["id"])
            assert inbox.release_rules() == []
    finally:
        running.stop()
