"""The checks the worker makes after the 250, seen in the e-mail detail: a real spamd's verdict
(`spam_engine`) beside Burnbox's own heuristics, and the attachments' checksums; the
List-Unsubscribe check read from the headers. Mail goes over real SMTP to a real server with
worker threads."""

from __future__ import annotations

import dataclasses
import hashlib
import smtplib
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import requests

from tests.factories.mail import deliver, make_email, message
from tests.web.conftest import MailService, mail_service
from tests.web.test_emails import inbox

__all__ = ["inbox"]  # the e-mail tests' lead's inbox fixture

REPORT_PDF = b"%PDF-1.4\n" + bytes(range(256)) * 300 + b"\n%%EOF\n"
LOGO_PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x01\x02logo" * 999
SPAMMY = dict(subject="FREE VIAGRA NOW!!!", text="Buy cheap viagra now, click here.\n")


@dataclasses.dataclass
class Served:
    """A `MailService` and what these tests do with it."""

    service: MailService

    @property
    def address(self) -> str:
        return self.service.inbox.full_address

    def send(self, raw: bytes) -> dict[str, Any]:
        """Send `raw` over SMTP and return its detail once stored."""
        with smtplib.SMTP(*self.service.smtp, timeout=10) as client:
            client.sendmail("news@shop.example", [self.address], raw)
        subject = raw.split(b"Subject: ", 1)[1].split(b"\r\n", 1)[0].decode()
        waited = requests.get(
            f"{self.service.base}/api/v1/inboxes/by-address/{self.address}/emails/wait",
            timeout=40, params={"subject": subject, "timeout": "30s"},
            headers=self.service.headers).json()
        return self.detail(waited["emails"][0]["id"])

    def detail(self, email_id: str) -> dict[str, Any]:
        return requests.get(f"{self.service.base}/api/v1/emails/{email_id}",
                            headers=self.service.headers, timeout=10).json()

    def until(self, email_id: str, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The detail once `done` says so (the worker's work, a moment after the 250)."""
        deadline = time.monotonic() + 60
        while not done(detail := self.detail(email_id)):
            assert time.monotonic() < deadline, f"never done: {detail}"
            time.sleep(0.1)
        return detail


@contextmanager
def serving_checks(committed_runtime: Any, **settings: Any) -> Iterator[Served]:
    """A mail service with `settings` (dotted keys)."""
    runtime = dataclasses.replace(committed_runtime,
                                  settings=committed_runtime.settings.replace(**settings))
    with mail_service(runtime) as service:
        yield Served(service)


def _engine_done(detail: dict[str, Any]) -> bool:
    return detail["spam_engine"]["status"] != "pending"


def test_spamd_scores_the_mail_beside_burnboxs_own_heuristics(committed_runtime, spamd):
    with serving_checks(committed_runtime, **{"checks.spam_engine": spamd,
                                              "checks.spam_engine_timeout": "30s"}) as served:
        email = served.send(message(served.address, **SPAMMY))
        detail = served.until(email["id"], _engine_done)
    engine = detail["spam_engine"]
    assert (engine["status"], engine["engine"], engine["is_spam"], engine["reason"]) == (
        "done", "spamassassin", True, "")
    assert engine["score"] >= engine["threshold"] == 5.0
    rules = {rule["name"]: rule for rule in engine["rules"]}
    assert rules["DRUGS_ERECTILE"]["score"] > 0 and rules["DRUGS_ERECTILE"]["description"]
    assert engine["checked_at"]
    # Burnbox's own heuristics are still there, apart.
    assert "suspicious_word" in {reason["name"] for reason in detail["spam_reasons"]}


def test_an_engine_that_cannot_be_reached_is_an_error_in_words(committed_runtime):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with serving_checks(committed_runtime,
                        **{"checks.spam_engine": f"spamd://127.0.0.1:{closed}"}) as served:
        email = served.send(message(served.address, subject="Unreachable"))
        engine = served.until(email["id"], _engine_done)["spam_engine"]
    assert (engine["status"], engine["engine"], engine["score"], engine["rules"]) == (
        "error", "spamassassin", None, [])
    assert "could not be reached" in engine["reason"]


def test_a_message_above_the_size_limit_is_skipped_without_asking(committed_runtime):
    # No engine listens there: a message that was sent would be an error, not skipped.
    with serving_checks(committed_runtime, **{"checks.spam_engine": "spamd://127.0.0.1:9",
                                              "checks.spam_engine_max_bytes": 1000}) as served:
        email = served.send(message(served.address, subject="Big", text="x" * 2000))
        engine = served.until(email["id"], _engine_done)["spam_engine"]
    assert engine["status"] == "skipped"
    assert engine["reason"] == "the message is larger than 1000 bytes, the engine's limit"


def test_without_an_engine_the_detail_has_none_and_the_checksums_come(committed_runtime):
    with serving_checks(committed_runtime) as served:
        email = served.send(message(served.address, subject="Files", attachments=(
            ("report.pdf", "application/pdf", REPORT_PDF), ("logo.png", "image/png", LOGO_PNG))))
        detail = served.until(email["id"], lambda d: all(
            attachment["checksums"] for attachment in d["attachments"]))
    assert detail["spam_engine"] is None
    sums = {item["filename"]: item["checksums"] for item in detail["attachments"]}
    for filename, data in (("report.pdf", REPORT_PDF), ("logo.png", LOGO_PNG)):
        assert sums[filename] == {"md5": hashlib.md5(data).hexdigest(),
                                  "sha1": hashlib.sha1(data).hexdigest(),
                                  "sha256": hashlib.sha256(data).hexdigest()}


def test_the_checksums_are_null_until_the_worker_computed_them(api, runtime, inbox):
    email_id = make_email(runtime, inbox.full_address, attachments=(
        ("report.pdf", "application/pdf", REPORT_PDF),))
    [attachment] = api("GET", f"/emails/{email_id}").get_json()["attachments"]
    assert attachment["checksums"] is None


def test_the_detail_checks_the_list_unsubscribe_headers(api, runtime, inbox):
    raw = message(inbox.full_address, subject="News").replace(
        b"Subject: News\r\n", b"Subject: News\r\nList-Unsubscribe: <mailto:u@shop.example>, "
        b"<https://shop.example/u/1>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n")
    [email_id] = deliver(runtime.db, runtime.storage, raw, recipients=[inbox.full_address])
    found = api("GET", f"/emails/{email_id}").get_json()["list_unsubscribe"]
    assert found["one_click"] is True
    assert [link["uri"] for link in found["links"]] == ["mailto:u@shop.example",
                                                         "https://shop.example/u/1"]
    assert found["problems"] == ["no DKIM signature covers both List-Unsubscribe and "
                                 "List-Unsubscribe-Post, as RFC 8058 requires for one-click"]
    plain = make_email(runtime, inbox.full_address, subject="Plain")
    assert api("GET", f"/emails/{plain}").get_json()["list_unsubscribe"] is None
