"""An inbox page following its stream in a real browser against a real `burnbox serve`: mail
shows as it lands, and when the socket drops, the page reconnects after the last message it
had (`since`), so mail that landed meanwhile shows too."""

import re
import smtplib
from email.message import EmailMessage

from tests.ui.conftest import ADMIN, PASSWORD, screenshot, sign_in


def _send(served, to: str, subject: str) -> None:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "shop@example.org", to, subject
    message.set_content(f"{subject}: hello")
    with smtplib.SMTP("127.0.0.1", served.smtp_port, timeout=10) as smtp:
        smtp.send_message(message)


def test_mail_sent_while_the_socket_was_down_shows_once_it_reconnects(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    token = served.api("POST", "/auth/login",
                       json={"email": ADMIN, "password": PASSWORD}).json()["tokens"]["access_token"]
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "live"}).json()
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
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows).to_have_text(["Waiting for e-mail…"])
    for _ in range(200):
        if pongs:
            break
        page.wait_for_timeout(50)
    assert pongs, "the inbox's socket never answered"
    _send(served, inbox["full_address"], "First, live")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("First, live")

    # The next connection's ticket is held until the second e-mail is stored: no socket is
    # open while it lands, and only `since` can bring it.
    tickets = []
    page.route("**/api/v1/ws/ticket", lambda route: tickets.append(route))
    sockets[0].close(code=1012, reason="the test drops it")
    for _ in range(200):
        if tickets:
            break
        page.wait_for_timeout(50)
    assert tickets, "the page did not reconnect"
    _send(served, inbox["full_address"], "Second, while down")
    for route in tickets:
        route.continue_()
    page.unroute("**/api/v1/ws/ticket")

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
    token = served.api("POST", "/auth/login",
                       json={"email": ADMIN, "password": PASSWORD}).json()["tokens"]["access_token"]
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "opening"}).json()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    tickets = []
    page.route("**/api/v1/ws/ticket", lambda route: tickets.append(route))
    page.get_by_role("link", name=inbox["full_address"]).click()
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows).to_have_text(["Waiting for e-mail…"])
    for _ in range(200):
        if tickets:
            break
        page.wait_for_timeout(50)
    assert tickets, "the page did not ask for its socket's ticket"
    _send(served, inbox["full_address"], "Landed while opening")
    for route in tickets:
        route.continue_()
    page.unroute("**/api/v1/ws/ticket")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Landed while opening")
