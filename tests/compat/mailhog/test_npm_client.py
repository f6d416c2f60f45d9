"""The npm `mailhog` client (pinned in package.json and its lock, installed with `npm ci`), its
code unchanged, against the MailHog-compatible API of a real Burnbox: the app on a threaded
server, mailin over real SMTP and worker threads, on the backend under test.

Four messages reach one inbox over SMTP (HTML, non-ASCII headers and body, attachments, an
inline image); then mailhog.test.mjs drives every call the client offers under Node's test
runner, through the inbox's scope with a team API key as the Basic password. Afterwards the
native side must agree: the release reached the relay through Burnbox's release path (audited),
the deleted messages are gone from the native API too.

Without npm the test skips, except under CI=true, where it fails: CI must run it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import smtplib
import subprocess
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path

import pytest
import requests

from tests.factories.mail import make_inbox
from tests.processes import process_env
from tests.release_helpers import release_settings
from tests.smtp_sink import SmtpSink
from tests.web.conftest import audit_entries, mail_service

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
       b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8"
       b"\xa9\x9b\x00\x00\x00\x00IEND\xaeB`\x82")
KEY_SCOPES = ["team.emails.view", "team.emails.manage", "team.emails.release"]
RELEASE_TO = "qa@company.example"


def missing(reason: str) -> None:
    """Skip for want of npm; fail under CI=true, where this test must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the npm mailhog client's test must run)")
    pytest.skip(reason)


def npm(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """Run npm in this folder; its output, or the test fails showing it."""
    done = subprocess.run(["npm", *args], cwd=HERE, env=env or process_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, (f"npm {' '.join(args)}:\n{done.stdout[-8000:]}"
                                  f"{done.stderr[-4000:]}")
    return done.stdout


def mails(to: str) -> list[EmailMessage]:
    """The four messages the Node tests expect, oldest first."""
    def base(subject: str, sender: str = "Shop <app@shop.example>") -> EmailMessage:
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = sender, to, subject
        message["Date"] = formatdate(localtime=False)
        return message

    welcome = base("Welcome to the shop")
    welcome["Reply-To"], welcome["Cc"] = "help@shop.example", "boss@shop.example"
    welcome.set_content("Welcome! Your code is 482913.\n")
    welcome.add_alternative("<h1>Welcome</h1><p>Your code is 482913.</p>\n", subtype="html")
    greeting = base("Grüße aus Köln", sender="Jürgen Müller <juergen@shop.example>")
    greeting.set_content("Viele Grüße, schönen Tag! ✓\n")
    invoice = base("Your invoice")
    invoice.set_content("Your invoice is attached.\n")
    invoice.add_attachment(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", maintype="application",
                           subtype="pdf", filename="invoice.pdf")
    invoice.add_attachment(b"sku,qty\r\nA1,2\r\n", maintype="text", subtype="csv",
                           filename="report.csv", cte="base64")
    newsletter = base("Newsletter")
    newsletter.set_content('<p>News</p><img src="cid:logo@shop.example">\n', subtype="html")
    newsletter.add_related(PNG, maintype="image", subtype="png", cid="<logo@shop.example>")
    return [welcome, greeting, invoice, newsletter]


@pytest.fixture(scope="module")
def installed() -> Path:
    """node_modules as the lock pins it."""
    if shutil.which("npm") is None:
        missing("no npm: the npm mailhog client needs Node.js and npm")
    npm("ci", "--no-audit", "--no-fund")
    assert (HERE / "node_modules" / "mailhog" / "index.js").is_file()
    return HERE


def test_the_npm_mailhog_client_works_unchanged_against_an_inbox_scope(
        installed: Path, committed_runtime):
    sink = SmtpSink().start()
    runtime = dataclasses.replace(committed_runtime, settings=release_settings(
        committed_runtime.settings, sink.port))
    try:
        with mail_service(runtime) as service:
            headers = service.headers
            org, team = service.inbox.org_id, service.inbox.team_id
            made = requests.post(f"{service.base}/api/v1/orgs/{org}/teams/{team}/api-keys",
                                 json={"name": "mailhog", "scopes": KEY_SCOPES},
                                 headers=headers, timeout=10)
            assert made.status_code == 201, made.text
            key = made.json()["raw_key"]
            with runtime.db.transaction() as session:
                foreign = make_inbox(session, runtime.settings, service.world,
                                     role="outsider", assignment="other_assignment")
            address = service.inbox.full_address
            with smtplib.SMTP(*service.smtp, timeout=10) as smtp:
                for message in mails(address):
                    smtp.send_message(message, from_addr="app@shop.example",
                                      to_addrs=[address])
            env = process_env(
                MAILHOG_URL=f"{service.base}/compat/mailhog/inboxes/{service.inbox.id}/api",
                MAILHOG_FOREIGN_URL=f"{service.base}/compat/mailhog/inboxes/{foreign.id}/api",
                MAILHOG_AUTH=f"ci:{key}", MAILHOG_INBOX=address, MAILHOG_RELEASE_TO=RELEASE_TO)
            output = npm("test", env=env)
            assert re.search(r"^# pass 13$", output, re.MULTILINE), output
            assert re.search(r"^# fail 0$", output, re.MULTILINE), output

            [released] = sink.wait_for(1)
            assert released["Subject"] == "Welcome to the shop"
            assert sink.envelopes[0].rcpt_tos == [RELEASE_TO]
            [entry] = audit_entries(runtime, "email.release")
            assert entry.after["recipients"] == [RELEASE_TO]
            # The native API sees what the client did: every message deleted at the end.
            listed = requests.get(f"{service.base}/api/v1/inboxes/{service.inbox.id}/emails",
                                  headers=headers, timeout=10)
            assert listed.status_code == 200 and listed.json()["total"] == 0
    finally:
        sink.stop()
