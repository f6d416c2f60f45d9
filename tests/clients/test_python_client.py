"""The Python client (clients/python, `burnbox_client`) and its pytest plugin, against a real
`burnbox serve` started here with a bootstrapped API key, real SMTP and a real HTTP application.

The plugin is tested the way a user runs it: `pytester` runs a test file in a pytest of its own
(a subprocess), which loads the plugin through its `pytest11` entry point. The README's example
test is run exactly as written, against `SignupApp`, a small application that mails a
confirmation link on sign-up.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from burnbox_client import Burnbox, BurnboxError, EmailNotReceived

from tests.clients.conftest import API_KEY, DOMAIN, Service, assert_inboxes_gone
from tests.processes import ROOT

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

EXAMPLE = re.compile(r"^```python pytest-plugin:example\n(.*?)^```$", re.MULTILINE | re.DOTALL)


class SignupApp(ThreadingHTTPServer):
    """The application under test of the README's example: `POST /signup {"email"}` mails a
    confirmation link through Burnbox's SMTP server; `GET /confirm/<token>` answers 200 for a
    token it sent (once), 404 otherwise."""

    def __init__(self, service: Service) -> None:
        super().__init__(("127.0.0.1", 0), SignupHandler)
        self.service, self.tokens = service, set[str]()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class SignupHandler(BaseHTTPRequestHandler):
    server: SignupApp

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        token = secrets.token_urlsafe(16)
        self.server.tokens.add(token)
        link = f"{self.server.url}/confirm/{token}"
        self.server.service.send(body["email"], "Confirm your account",
                                 f"Welcome! Confirm your address: {link}",
                                 f'<p>Welcome! <a href="{link}">Confirm your address</a></p>')
        self.send_response(201)
        self.end_headers()

    def do_GET(self) -> None:
        token = self.path.removeprefix("/confirm/")
        known = token in self.server.tokens
        self.server.tokens.discard(token)
        self.send_response(200 if known else 404)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def signup_app(service: Service) -> Iterator[SignupApp]:
    app = SignupApp(service)
    thread = threading.Thread(target=app.serve_forever, daemon=True)
    thread.start()
    yield app
    app.shutdown()
    app.server_close()


def test_the_readme_example_passes_with_the_plugin_from_its_entry_point(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, service: Service,
        signup_app: SignupApp):
    [example] = EXAMPLE.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    pytester.makepyfile(test_signup=example)
    monkeypatch.setenv("BURNBOX_URL", service.url)
    monkeypatch.setenv("BURNBOX_API_KEY", API_KEY)  # no domain: the key's team has one
    monkeypatch.setenv("APP_URL", signup_app.url)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not signup_app.tokens  # the link was followed


def test_ini_options_configure_it_and_each_test_gets_an_inbox_deleted_after_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, service: Service,
        client: Burnbox, tmp_path: Path):
    for variable in ("BURNBOX_URL", "BURNBOX_API", "BURNBOX_API_KEY", "BURNBOX_DOMAIN"):
        monkeypatch.delenv(variable, raising=False)
    pytester.makeini(f"[pytest]\nburnbox_url = {service.url}\nburnbox_api_key = {API_KEY}\n"
                     f"burnbox_domain = {DOMAIN}\n")
    seen = tmp_path / "inboxes.txt"
    pytester.makepyfile(test_inboxes=f"""
        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        def test_fresh(burnbox_inbox, n):
            with open({str(seen)!r}, "a") as out:
                out.write(burnbox_inbox.id + "\\n")
            assert burnbox_inbox.address.endswith("@{DOMAIN}")
            assert burnbox_inbox.emails() == []

        def test_waits_in_vain(burnbox_inbox):
            burnbox_inbox.wait_for_email(subject="never sent", timeout=0.2)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(['*EmailNotReceived: 0 of 1 e-mail(s) matching '
                                 f'subject "never sent" arrived in inbox *@{DOMAIN} within 200 ms'])
    assert_inboxes_gone(client, seen, 2)


def test_an_unconfigured_plugin_fails_the_test_that_asks_for_it_and_nothing_else(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    for variable in ("BURNBOX_URL", "BURNBOX_API", "BURNBOX_API_KEY", "BURNBOX_DOMAIN"):
        monkeypatch.delenv(variable, raising=False)
    pytester.makepyfile(test_x="def test_a(burnbox_inbox): pass\ndef test_b(): pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*burnbox: set BURNBOX_URL and BURNBOX_API_KEY*"])


def test_the_client_creates_waits_reads_searches_and_deletes(service: Service,
                                                             client: Burnbox):
    alias = f"client-{secrets.token_hex(4)}"
    inbox = client.inboxes.create(alias=alias, ttl="1h")
    assert inbox.address == f"{alias}@{DOMAIN}" and inbox.alias == alias
    service.send(inbox.address, "Your sign-in code", "Your verification code is 482913.",
                 '<p>Code: 482913. <a href="https://shop.example/help">Help</a></p>',
                 attachment=b"a,b\n1,2\n")
    service.send(inbox.address, "Newsletter", "Nothing to see.")
    email = inbox.wait_for_email(subject="sign-in", timeout=10)
    assert email.codes == ["482913"] and email.code == "482913"
    assert [(link.href, link.text) for link in email.links] == [
        ("https://shop.example/help", "Help")]
    assert "482913" in email.text and "<a" in email.html
    [attachment] = email.attachments
    assert (attachment.filename, attachment.content()) == ("report.csv", b"a,b\n1,2\n")
    # The worker's checks: the checksums come a moment after the mail; no spam engine here.
    [checked] = email.checked(timeout=10).attachments
    assert checked.checksums == {"md5": hashlib.md5(b"a,b\n1,2\n").hexdigest(),
                                 "sha1": hashlib.sha1(b"a,b\n1,2\n").hexdigest(),
                                 "sha256": hashlib.sha256(b"a,b\n1,2\n").hexdigest()}
    assert email.spam_engine is None and email.list_unsubscribe is None
    both = inbox.wait_for_emails(2, timeout=10)
    assert [found.subject for found in both] == ["Your sign-in code", "Newsletter"]
    assert inbox.wait_for_email(after=email.id, timeout=10).subject == "Newsletter"

    assert [found.id for found in client.emails.search("code:482913", inbox)] == [email.id]
    assert [found.id for found in client.emails.search("code:482913")] == [email.id]
    assert [found.subject for found in inbox.emails()] == ["Newsletter", "Your sign-in code"]
    assert client.emails.get(email.id).subject == "Your sign-in code"
    assert inbox.id in {listed.id for listed in client.inboxes.list()}

    inbox.delete()
    with pytest.raises(BurnboxError) as gone:
        client.inboxes.get(inbox.id)
    assert (gone.value.status, gone.value.code) == (404, "not_found")


def test_api_errors_raise_with_the_envelope(client: Burnbox):
    with pytest.raises(BurnboxError) as bad:
        client.inboxes.create(alias="-no-")
    assert (bad.value.status, bad.value.code) == (400, "validation_error")
    inbox = client.inboxes.create()
    try:
        with pytest.raises(BurnboxError) as malformed:
            client.emails.search('subject:"open', inbox)
        assert "offset 8" in malformed.value.message
        with pytest.raises(BurnboxError) as too_long:
            inbox.wait_for_email(timeout=3600)
        assert too_long.value.details == {"timeout": [too_long.value.details["timeout"][0]]}
        # Worded as the JavaScript client words it, the inbox named by its address however
        # the wait named it.
        for named in (inbox, inbox.id, inbox.address):
            with pytest.raises(EmailNotReceived) as in_vain:
                client.emails.wait_for_email(named, subject="nothing", timeout=0.1)
            assert str(in_vain.value) == ('0 of 1 e-mail(s) matching subject "nothing" arrived '
                                          f'in inbox {inbox.address} within 100 ms')
            assert (in_vain.value.inbox, in_vain.value.received) == (inbox.address, [])
    finally:
        inbox.delete()
    with pytest.raises(BurnboxError) as unknown_key:
        Burnbox(client.api, "bb_" + "0" * 64).inboxes.list()
    assert unknown_key.value.status == 401


def test_an_inbox_is_named_by_its_address_wherever_its_id_is(service: Service, client: Burnbox):
    inbox = client.inboxes.create(alias=f"by-address-{secrets.token_hex(4)}")
    assert client.inboxes.get(inbox.address.upper()).id == inbox.id
    service.send(inbox.address, "Your code", "Your verification code is 482913.")
    email = client.emails.wait_for_email(inbox.address, subject="code", timeout=10)
    assert email.subject == "Your code"
    assert [found.id for found in client.emails.search("code:482913", inbox.address)] == [
        email.id]
    client.inboxes.delete(inbox.address)
    with pytest.raises(BurnboxError) as gone:
        client.inboxes.get(inbox.address)
    assert (gone.value.status, gone.value.code) == (404, "not_found")


def test_one_wait_gives_one_email_and_the_plural_wait_a_list_as_the_javascript_client_does(
        service: Service, client: Burnbox):
    inbox = client.inboxes.create()
    try:
        service.send(inbox.address, "Your code", "Your verification code is 482913.")
        email = client.emails.wait_for_email(inbox, timeout=10)
        assert email.subject == "Your code"
        assert [found.id for found in client.emails.wait_for_emails(inbox.id, 1, timeout=10)
                ] == [email.id]
        with pytest.raises(EmailNotReceived) as short:
            inbox.wait_for_emails(2, timeout=0.2)
        assert str(short.value) == (f"1 of 2 e-mail(s) matching anything arrived in inbox "
                                    f"{inbox.address} within 200 ms")
        assert [found.id for found in short.value.received] == [email.id]
        # The old name keeps its list, and says which call replaces it.
        with pytest.warns(DeprecationWarning, match=r"wait_for_email\(inbox, \.\.\.\)"):
            listed = client.emails.wait(inbox.address, timeout=10)
        assert [found.id for found in listed] == [email.id]
    finally:
        inbox.delete()


def test_an_emails_plain_pages_open_with_the_view_headers(service: Service, client: Burnbox):
    inbox = client.inboxes.create(alias=f"view-{secrets.token_hex(4)}", ttl="1h")
    service.send(inbox.address, "Welcome", "Welcome, Żaneta.", "<p>Welcome, <b>Żaneta</b></p>")
    email = inbox.wait_for_email(subject="Welcome", timeout=10)
    html_url = email.view_url()
    assert html_url == f"{service.url}/view/{email.id}.html"
    assert client.view_url(email.id, "html", remote_images=True) == html_url + \
        "?remote_images=true"
    page = requests.get(html_url, headers=client.view_headers, timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "Welcome, <b>Żaneta</b>" in page.text
    text = requests.get(email.view_url("text"), headers=client.view_headers, timeout=10)
    assert text.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert text.text.strip() == "Welcome, Żaneta."
    assert requests.get(html_url, timeout=10).status_code == 401  # the key is what opens it
    with pytest.raises(ValueError, match="html or text"):
        email.view_url("raw")


def test_a_message_put_over_http_is_read_as_any_other(client: Burnbox):
    inbox = client.inboxes.create(alias=f"put-{secrets.token_hex(4)}", ttl="1h")
    email = inbox.put_message(
        sender="Acme <noreply@acme.test>", subject="Seeded", text="Your code is 771204.",
        html='<p>Code 771204 <img src="cid:logo"></p>', tags=["seeded"],
        headers={"Reply-To": "help@acme.test"},
        attachments=[{"filename": "logo.png", "content": b"\x89PNG not really",
                      "content_id": "logo"},
                     {"filename": "notes.txt", "content": b"plain notes"}])
    assert email.subject == "Seeded" and email.code == "771204"
    assert inbox.wait_for_email(subject="Seeded", timeout=10).id == email.id
    assert {part.filename: part.content() for part in email.attachments} == {
        "logo.png": b"\x89PNG not really", "notes.txt": b"plain notes"}
    headers = {one["name"]: one["value"] for one in email.data["headers"]}
    assert headers["X-Tags"] == "seeded" and headers["Reply-To"] == "help@acme.test"
    with pytest.raises(BurnboxError) as refused:
        inbox.put_message(sender="not an address")
    assert (refused.value.status, refused.value.code) == (400, "validation_error")


def test_tags_are_waited_for_read_set_added_and_removed(service: Service, client: Burnbox):
    inbox = client.inboxes.create(alias=f"tags-{secrets.token_hex(4)}", ttl="1h")
    service.send(inbox.address, "Untagged", "Nothing here.")
    service.send(inbox.address, "Welcome", "Hi.", headers={"X-Tags": "Signup, beta"})
    email = inbox.wait_for_email(tag="SIGNUP", timeout=10)
    assert email.subject == "Welcome" and email.tags == ["beta", "Signup"]
    assert email.add_tags("vip") == ["beta", "Signup", "vip"]
    assert email.remove_tag("beta") == ["Signup", "vip"]
    assert email.set_tags("only/this") == ["only/this"]
    assert client.emails.get(email.id).tags == ["only/this"]
    assert [found.id for found in inbox.emails('tag:"only/this"')] == [email.id]
    with pytest.raises(BurnboxError) as refused:
        email.set_tags(*(f"t{n}" for n in range(10_000)))
    assert refused.value.status == 400
    inbox.delete()
