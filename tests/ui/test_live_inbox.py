"""An inbox page following its stream in a real browser against a real `burnbox serve`: mail
shows as it lands; when the socket drops, the page reconnects after the last message it had
(`since`), so mail that landed meanwhile shows too; and mail that lands while the page opens
its socket shows once the socket is open."""

import re
import smtplib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import EmailMessage

from tests.ui.conftest import ADMIN, PASSWORD, screenshot, sign_in

TICKETS = "**/api/v1/ws/ticket"


def _send(served, to: str, subject: str) -> None:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "shop@example.org", to, subject
    message.set_content(f"{subject}: hello")
    with smtplib.SMTP("127.0.0.1", served.smtp_port, timeout=10) as smtp:
        smtp.send_message(message)


def _signed_in_with_an_inbox(served, page, alias: str) -> dict:
    """A new inbox of the admin's, and the page signed in on the inbox list."""
    token = served.api("POST", "/auth/login",
                       json={"email": ADMIN, "password": PASSWORD}).json()["tokens"]["access_token"]
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": alias}).json()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    return inbox


def _eventually(page, condition: Callable[[], object], what: str) -> None:
    """Let the page run (its routes too) until `condition` holds, for at most 10 s."""
    for _ in range(200):
        if condition():
            return
        page.wait_for_timeout(50)
    raise AssertionError(what)


@contextmanager
def _ticket_held(page) -> Iterator[Callable[[], None]]:
    """Hold the page's WebSocket tickets until the block ends: no socket of the page opens
    meanwhile. The block gets a function that waits until the page has asked for one."""
    held = []
    page.route(TICKETS, lambda route: held.append(route))
    yield lambda: _eventually(page, lambda: held, "the page did not ask for a ticket")
    for route in held:
        route.continue_()
    page.unroute(TICKETS)


def test_mail_sent_while_the_socket_was_down_shows_once_it_reconnects(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    inbox = _signed_in_with_an_inbox(served, page, "live")
    sockets = []  # the page's connections to the inbox's stream, each through the test
    pongs = []  # answers to the test's pings: the server's end is listening

    def through_the_test(socket):
        server = socket.connect_to_server()

        def to_the_page(message):
            if '"pong"' in message:
                pongs.append(message)
            socket.send(message)

        server.on_message(to_the_page)
        server.send('{"type": "ping"}')
        sockets.append(socket)

    page.route_web_socket(re.compile(r"/ws/inboxes/"), through_the_test)
    page.get_by_role("link", name=inbox["full_address"]).click()
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows).to_have_text(["Waiting for e-mail…"])
    _eventually(page, lambda: pongs, "the inbox's socket never answered")
    _send(served, inbox["full_address"], "First, live")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("First, live")

    # The next connection waits for its ticket until the second e-mail is stored: no socket
    # is open while it lands, and only `since` can bring it.
    with _ticket_held(page) as asked:
        sockets[0].close(code=1012, reason="the test drops it")
        asked()
        _send(served, inbox["full_address"], "Second, while down")

    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("Second, while down")
    assert "since=" in sockets[-1].url, sockets[-1].url
    expect(page.get_by_text("Page 1 of 1 · 2 e-mails")).to_be_visible()
    screenshot(page, "inbox-live")


def test_mail_landing_while_the_page_opens_its_socket_shows(bootstrapped, page):
    """The page has read its (empty) list; its socket's ticket is held while an e-mail lands,
    so the socket opens after it: the page reads its list again once the socket is open."""
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    inbox = _signed_in_with_an_inbox(served, page, "opening")
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    with _ticket_held(page) as asked:
        page.get_by_role("link", name=inbox["full_address"]).click()
        expect(rows).to_have_text(["Waiting for e-mail…"])
        asked()
        _send(served, inbox["full_address"], "Landed while opening")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Landed while opening")
