"""Fixtures of the browser tests: a real `burnbox serve` (SQLite, in-process broker, SMTP) on
free ports, and Chromium driven by Playwright.

Without a browser (no /usr/bin/chromium, or no playwright package) the tests skip with the
reason; with CI=true a skipped browser test fails the run instead (`pytest_runtest_makereport`
below), so CI cannot go green without having run them.
"""

from __future__ import annotations

import dataclasses
import os
import smtplib
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from tests.processes import BIN, free_port, process_env, terminate, wait_for_http

CHROMIUM = os.environ.get("BURNBOX_TEST_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).parent / "screenshots"
PASSWORD = "correct-horse-battery-9"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Under CI=true, a browser test that skipped is a failure: CI must run them."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") == "true" and call.when == "setup":
        report.outcome = "failed"
        report.longrepr = f"browser test skipped under CI=true: {report.longrepr}"


@dataclasses.dataclass
class Served:
    """A running `burnbox serve`: its base URL and SMTP port."""

    base: str
    smtp_port: int

    def api(self, method: str, path: str, token: str | None = None,
            headers: dict[str, str] | None = None, **kwargs) -> requests.Response:
        """A request to the API, with `token` as the bearer when given."""
        headers = dict(headers or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return requests.request(method, f"{self.base}/api/v1{path}", headers=headers, timeout=10,
                                **kwargs)


@contextmanager
def serve(tmp_path: Path, **settings: str) -> Iterator[Served]:
    """Run `burnbox serve` in `tmp_path` with `settings` (environment form) until the test ends."""
    http_port, smtp_port = free_port(), free_port()
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path / "data"), BURNBOX_LOG__LEVEL="WARNING",
                      BURNBOX_WEBHOOKS__ALLOW_PRIVATE_TARGETS="true", **settings)
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [str(BIN / "burnbox"), "serve", "--port", str(http_port), "--smtp-port", str(smtp_port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # 60 s: on a loaded shared machine the first start (migrations, bootstrap) is slow.
        wait_for_http(f"http://127.0.0.1:{http_port}/healthz", timeout=60)
        yield Served(f"http://127.0.0.1:{http_port}", smtp_port)
    finally:
        try:
            terminate(process)
        finally:
            log.close()


@dataclasses.dataclass
class ImageHost:
    """A real HTTP server serving a 1-pixel GIF at any path: `hits` are the paths asked for,
    `headers` each request's headers, in order."""

    url: str
    hits: list[str]
    headers: list[dict[str, str]]


@pytest.fixture
def image_host() -> Iterator[ImageHost]:
    """A real HTTP server counting the requests for an e-mail's remote image."""
    host = ImageHost("", [], [])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host.hits.append(self.path)
            host.headers.append(dict(self.headers))
            self.send_response(200)
            self.send_header("Content-Type", "image/gif")
            self.end_headers()
            self.wfile.write(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host.url = f"http://127.0.0.1:{server.server_port}"
    yield host
    server.shutdown()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A fresh server whose setup is still to be done."""
    with serve(tmp_path) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium from the system (Playwright's own download is not reachable here), one per test
    module: Playwright's sync API keeps an event loop running in this thread while it is open,
    and a session-long one broke `asyncio.run` in whatever test a pytest-xdist worker ran after
    the browser tests."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("no browser: the playwright package is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    """A fresh browser context (its own cookies) at 1280 x 900, failing on page errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], f"errors in the page: {errors}"


def screenshot(page, name: str) -> None:
    """Screenshots at 1440 and 390 px wide, light and dark, into tests/ui/screenshots (ignored
    by git): `<name>-1440.png`, `<name>-1440-dark.png`, ... The page is left at 1280 px, light."""
    SCREENSHOTS.mkdir(exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            suffix = "" if scheme == "light" else "-dark"
            page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}{suffix}.png"), full_page=True)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 900})


ADMIN = "admin@burnbox.test"


@pytest.fixture
def bootstrapped(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Start a server set up by `burnbox bootstrap` (admin ADMIN / PASSWORD, an org, a team, the
    trusted domain), with more settings in environment form: `bootstrapped(BURNBOX_X="1")`."""
    with ExitStack() as stack:
        def start(**settings: str) -> Served:
            return stack.enter_context(serve(
                tmp_path, BURNBOX_BOOTSTRAP__ENABLED="true",
                BURNBOX_BOOTSTRAP__ADMIN_PASSWORD=PASSWORD, **settings))
        yield start


def admin_token(served: Served) -> str:
    """An access token of ADMIN, through the API."""
    return served.api("POST", "/auth/login", json={"email": ADMIN, "password": PASSWORD}
                      ).json()["tokens"]["access_token"]


def send_mail(served: Served, to: str, subject: str, body: str = "Hello.", *,
              html: str | None = None, sender: str = "a@example.org",
              headers: dict[str, str] | None = None) -> None:
    """One e-mail to `to` over the server's SMTP port (with an HTML part when `html`, and
    `headers` besides From, To and Subject)."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender, to, subject
    for name, value in (headers or {}).items():
        message[name] = value
    message.set_content(body)
    if html:
        message.add_alternative(html, subtype="html")
    with smtplib.SMTP("127.0.0.1", served.smtp_port, timeout=10) as smtp:
        smtp.send_message(message)


def first_email(served: Served, token: str, inbox_id: str, address: str = "") -> dict:
    """The inbox's first e-mail (its list item) once one is stored, within 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        emails = served.api("GET", f"/inboxes/{inbox_id}/emails", token=token).json()["data"]
        if emails:
            return emails[0]
        time.sleep(0.05)
    raise AssertionError(f"no e-mail stored in {address or inbox_id} within 10 s")


def open_first_email(page, served: Served, token: str, inbox_id: str) -> None:
    """Wait until the inbox has an e-mail, sign in as ADMIN and open its reading pane."""
    email = first_email(served, token, inbox_id)
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(f"{served.base}/inboxes/{inbox_id}/emails/{email['id']}")


def mailed_inbox(served: Served, token: str, alias: str, subject: str, body: str
                 ) -> tuple[dict, dict]:
    """A new inbox `alias`@burnbox.test (as the token's user) with one e-mail mailed to it over
    SMTP, once it is stored: the inbox's JSON and the e-mail's list item."""
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": alias}).json()
    send_mail(served, inbox["full_address"], subject, body)
    return inbox, first_email(served, token, inbox["id"], inbox["full_address"])


def sign_in(page, served: Served) -> None:
    """Sign in as ADMIN through the login page."""
    page.goto(served.base + "/login")
    page.get_by_label("E-mail").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
