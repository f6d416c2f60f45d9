"""The e-mail detail's `auth_results` and the `spf:`/`dkim:`/`dmarc:` search: mail sent over
real SMTP, signed by a key published on the loopback DNS server, authenticated by the worker
after it is stored; and the pending state before that."""

from __future__ import annotations

import dataclasses
import smtplib
import time

import pytest
import requests

from burnbox.dns import Resolver
from models.mail.checks.authentication import authenticate, record_results
from tests.factories.mail import make_email
from tests.models.mail.checks.test_authentication import DOMAIN, HERE, key, publish, signed
from tests.web.conftest import mail_service
from tests.web.test_emails import inbox

# Fixtures shared with other test modules: the signing key of the model tests, and the e-mail
# tests' lead's inbox (the team member's caller is tests/web/conftest.py's).
__all__ = ["inbox", "key"]


@pytest.fixture
def authenticating(committed_runtime, dns_server):
    """The app on a real server, SMTP and two worker threads, DNS answered by `dns_server`."""
    runtime = dataclasses.replace(committed_runtime, settings=committed_runtime.settings.replace(
        **{"dns.nameservers": (dns_server.nameserver,), "dns.timeout": "1s"}))
    with mail_service(runtime) as service:
        yield service


def test_mail_sent_over_smtp_gets_its_results_after_it_is_stored(authenticating, dns_server,
                                                                 key):
    publish(dns_server, key)
    with smtplib.SMTP(*authenticating.smtp, local_hostname=HERE.helo, timeout=10) as client:
        client.sendmail(HERE.mail_from, [authenticating.inbox.full_address], signed(key))
    emails_url = f"{authenticating.base}/api/v1/inboxes/{authenticating.inbox.id}/emails"
    waited = requests.get(f"{emails_url}/wait", params={"timeout": "20s"},
                          headers=authenticating.headers, timeout=30).json()
    [email] = waited["emails"]
    deadline = time.monotonic() + 15
    while (detail := requests.get(f"{authenticating.base}/api/v1/emails/{email['id']}",
                                  headers=authenticating.headers,
                                  timeout=10).json())["auth_results"]["status"] == "pending":
        assert time.monotonic() < deadline, "the results never came"
        time.sleep(0.1)
    results = detail["auth_results"]
    assert results["status"] == "done"
    # The session's facts went with the message: the connecting IP, HELO and MAIL FROM.
    assert (results["spf"]["result"], results["spf"]["domain"], results["spf"]["ip"]) == (
        "pass", DOMAIN, "127.0.0.1")
    assert [(s["result"], s["domain"]) for s in results["dkim"]] == [("pass", DOMAIN)]
    assert (results["dmarc"]["result"], results["dmarc"]["policy"]) == ("pass", "reject")

    def found(q):
        return [item["id"] for item in requests.get(
            emails_url, params={"q": q}, headers=authenticating.headers, timeout=10
        ).json()["data"]]

    assert found("dkim:pass dmarc:pass spf:pass") == [email["id"]]
    assert found("dmarc:fail") == []


def test_the_detail_says_pending_until_the_results_are_stored(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, subject="Hi")
    detail = api("GET", f"/emails/{email_id}").get_json()
    assert detail["auth_results"] == {"status": "pending", "spf": None, "dkim": [],
                                      "dmarc": None, "arc": None}
    assert [e["id"] for e in api("GET", f"/inboxes/{inbox.id}/emails?q=dkim:pending")
            .get_json()["data"]] == [str(email_id)]


def test_search_filters_on_each_verdict(api, runtime, inbox, dns_server):
    dns_server.publish("")  # no SPF, no keys, no DMARC: none, and a DKIM-less message
    failing = make_email(runtime, inbox.full_address, subject="Unsigned")
    passing = make_email(runtime, inbox.full_address, subject="Other")
    resolver = Resolver((dns_server.nameserver,))
    results = authenticate(b"From: a@b.example\r\n\r\nhi\r\n", HERE, resolver)
    with runtime.db.transaction() as session:
        record_results(session, [failing], results)
        record_results(session, [passing], {**results, "spf": {**results["spf"],
                                                                "result": "pass"}})

    def found(q):
        response = api("GET", f"/inboxes/{inbox.id}/emails?q={q}")
        assert response.status_code == 200, response.get_json()
        return {e["id"] for e in response.get_json()["data"]}

    assert found("spf:none") == {str(failing)}
    assert found("spf:pass") == {str(passing)}
    assert found("-spf:pass") == {str(failing)}
    assert found("dkim:none") == {str(failing), str(passing)}
    assert found("dmarc:none") == {str(failing), str(passing)}
    assert found("dkim:pending") == set()
    detail = api("GET", f"/emails/{failing}").get_json()["auth_results"]
    assert (detail["status"], detail["spf"]["result"], detail["dmarc"]["domain"]) == (
        "done", "none", "b.example")


@pytest.mark.parametrize("q", ["spf:maybe", "dkim:", "dmarc:passed"])
def test_an_unknown_verdict_is_a_validation_error(api, inbox, q):
    response = api("GET", f"/inboxes/{inbox.id}/emails", query_string={"q": q})
    assert response.status_code == 400
    assert "q" in response.get_json()["details"]
