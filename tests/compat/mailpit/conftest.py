"""A Mailpit scope on a real server: the app on a threaded server with SMTP and worker threads
(tests.web.conftest.mail_service, on the committed runtime of whichever backend the suite
runs), a team API key made through the API, and the scope's Mailpit base URL; and the mail
the tests deliver over real SMTP (HTML with an inline image, an attachment, non-ASCII
headers)."""

from __future__ import annotations

import contextlib
import io
import smtplib
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import pytest
import requests
from PIL import Image

from models.runtime import Runtime
from tests.web.conftest import MailService, mail_service

KEY_SCOPES = ["team.emails.view", "team.emails.manage"]


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (240, 160), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


# A picture the worker can make a thumbnail of (the hand-written 1x1 PNG it replaced was
# broken, so no thumbnail was ever made for it).
PNG = _png()
CSV = b"order,total\n1001,12.00\n"
SUBJECT = "Bestätigung Ihrer Bestellung: 注文 №1001"
SENDER_NAME = "Zoë Müller"


@dataclass
class Scoped:
    """A running Burnbox with one Mailpit scope: `url` is the base URL a Mailpit client takes
    (its key as the Basic password), `service` the server, SMTP and inbox behind it."""

    service: MailService
    url: str
    key: str

    @property
    def address(self) -> str:
        return self.service.inbox.full_address

    def native(self, method: str, path: str, **options: Any) -> requests.Response:
        """The native API as the inbox's team lead."""
        return requests.request(method, f"{self.service.base}/api/v1{path}",
                                headers=self.service.headers, timeout=10, **options)

    def send(self, subject: str = SUBJECT, *, to: str | None = None, tags: str | None = None,
             rich: bool = True) -> None:
        """Mail the inbox over SMTP: with `rich`, HTML showing an inline image, a CSV
        attachment and a List-Unsubscribe header besides the text; non-ASCII in the From name
        and the subject. Stored before the server's 250, so it is there when this returns."""
        message = EmailMessage()
        message["From"] = f"{SENDER_NAME} <zoe@shop.example>"
        message["To"] = to or self.address
        message["Cc"] = "Ops <ops@shop.example>"
        message["Subject"] = subject
        message["Message-ID"] = make_msgid(domain="shop.example")
        if tags:
            message["X-Tags"] = tags
        message.set_content("Danke für Ihre Bestellung.\nhttps://shop.example/orders/1001\n")
        if rich:
            message["List-Unsubscribe"] = "<https://shop.example/unsubscribe?u=1>"
            message.add_alternative(
                '<html><body><p>Danke f\u00fcr Ihre <b>Bestellung</b>.</p>'
                '<img src="cid:logo@shop.example" alt="logo">'
                '<a href="https://shop.example/orders/1001">Order</a></body></html>',
                subtype="html")
            message.get_payload()[1].add_related(PNG, maintype="image", subtype="png",
                                                 cid="<logo@shop.example>", filename="logo.png",
                                                 disposition="inline")
            message.add_attachment(CSV, maintype="text", subtype="csv", filename="report.csv")
        host, port = self.service.smtp
        with smtplib.SMTP(host, port, timeout=10) as smtp:
            smtp.send_message(message)


def make_key(base: str, headers: dict[str, str], inbox: Any, scopes: list[str]) -> str:
    """A key of the inbox's team with `scopes`, made through the API; its raw value."""
    made = requests.post(f"{base}/api/v1/orgs/{inbox.org_id}/teams/{inbox.team_id}/api-keys",
                         json={"name": "mailpit", "scopes": scopes}, headers=headers, timeout=10)
    assert made.status_code == 201, made.text
    return made.json()["raw_key"]


@contextlib.contextmanager
def scope_of(runtime: Runtime, scopes: list[str] = KEY_SCOPES) -> Iterator[Scoped]:
    """A Mailpit scope (one inbox) on a mail service over `runtime`, with a key of `scopes`."""
    with mail_service(runtime) as service:
        key = make_key(service.base, service.headers, service.inbox, scopes)
        yield Scoped(service, f"{service.base}/compat/mailpit/inboxes/{service.inbox.id}", key)


@pytest.fixture
def scoped(committed_runtime) -> Iterator[Scoped]:
    with scope_of(committed_runtime) as made:
        yield made
