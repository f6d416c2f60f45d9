"""The browser flows besides the golden path, against real `burnbox serve` processes: the
session-limit conflict, a webhook's deliveries page, error messages, the first page's load time."""

import re
import smtplib
import time
from email.message import EmailMessage

from tests.ui.conftest import ADMIN, PASSWORD, screenshot, serve, sign_in


def _api_login(served) -> str:
    response = served.api("POST", "/auth/login", json={"email": ADMIN, "password": PASSWORD},
                          headers={"User-Agent": "the other laptop"})
    assert response.status_code == 200, response.text
    return response.json()["tokens"]["access_token"]


def test_at_the_session_limit_the_user_ends_a_session_and_is_signed_in(bootstrapped, page):
    served = bootstrapped(BURNBOX_DEFAULTS__MAX_SESSIONS_PER_USER="1")
    other = _api_login(served)
    sign_in(page, served)
    page.wait_for_url("**/session-limit")
    page.get_by_role("heading", name="Too many sessions").wait_for()
    page.get_by_text("the other laptop").wait_for()
    screenshot(page, "session-limit")
    page.get_by_role("button", name="End this session").click()
    page.wait_for_url("**/inboxes")
    page.get_by_role("heading", name="Inboxes").wait_for()
    assert served.api("GET", "/auth/me", token=other).status_code == 401
    # The page's session lives on through the refresh cookie after a reload.
    page.reload()
    page.get_by_role("heading", name="Inboxes").wait_for()


def test_a_wrong_password_shows_the_envelope_message(bootstrapped, page):
    served = bootstrapped()
    page.goto(served.base + "/login")
    page.get_by_label("E-mail").fill(ADMIN)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    answer = served.api("POST", "/auth/login", json={"email": ADMIN, "password": "wrong again"})
    assert alert.inner_text() == answer.json()["error"]
    screenshot(page, "login-error")


def test_the_deliveries_of_a_webhook_are_listed(bootstrapped, page, receiver):
    served = bootstrapped()
    token = _api_login(served)
    org = served.api("GET", "/orgs", token=token).json()["data"][0]
    team = served.api("GET", f"/orgs/{org['id']}/teams", token=token).json()["data"][0]
    created = served.api("POST", f"/orgs/{org['id']}/teams/{team['id']}/webhooks", token=token,
                         json={"url": receiver.url, "events": ["email.received"]})
    assert created.status_code == 201, created.text
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "hooked"}).json()
    message = EmailMessage()
    message["From"], message["To"] = "a@example.org", inbox["full_address"]
    message["Subject"] = "Hi"
    message.set_content("hello")
    with smtplib.SMTP("127.0.0.1", served.smtp_port, timeout=10) as smtp:
        smtp.send_message(message)
    receiver.wait_for(1)

    sign_in(page, served)
    page.get_by_role("link", name="Teams").click()
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_text(receiver.url).wait_for()
    page.get_by_role("button", name="Deliveries").click()
    page.get_by_role("cell", name="OK 200").wait_for(timeout=15000)
    page.get_by_role("cell", name="email.received").wait_for()
    screenshot(page, "webhook-deliveries")


def test_the_first_page_is_interactive_within_a_second_on_loopback(bootstrapped, page):
    """From navigation to a usable sign-in form: the page, the style sheet, the modules, one API
    call; the best of three loads. docs/ui.md gives the figures measured (about 0.3 s); the
    bound here is twice the target so a machine shared by many jobs does not fail it."""
    served = bootstrapped()
    timings = []
    for _ in range(3):
        page.context.clear_cookies()
        started = time.perf_counter()
        page.goto(served.base + "/login")
        page.get_by_label("E-mail").wait_for()
        timings.append(time.perf_counter() - started)
    print(f"first page interactive: {', '.join(f'{t * 1000:.0f} ms' for t in timings)}")
    assert min(timings) < 2.0


def test_an_org_page_shows_the_records_to_publish_and_takes_invites(bootstrapped, page):
    served = bootstrapped()
    sign_in(page, served)
    page.get_by_role("link", name="Teams").click()
    page.get_by_role("link", name="Domains, members and invites").click()
    page.get_by_text("burnbox.test", exact=True).wait_for()
    page.get_by_label("Domain name").fill("mail.example.com")
    page.get_by_role("button", name="Add domain").click()
    page.get_by_text("mail.example.com", exact=True).wait_for()
    page.get_by_text("Records to publish").click()
    page.get_by_text(re.compile(r'TXT  "burnbox-verify=[0-9a-f]{32}"')).wait_for()
    page.get_by_label("E-mail to invite").fill("newcomer@example.org")
    page.get_by_role("button", name="Send invite").click()
    page.get_by_text("newcomer@example.org").wait_for()
    page.get_by_label("Domain name").fill("not a domain")
    page.get_by_role("button", name="Add domain").click()
    alert = page.get_by_role("alert").filter(has_text="invalid domain name")
    alert.wait_for()
    assert alert.inner_text().count("Codepoint") == 1  # details that repeat it are not shown again
    screenshot(page, "org")

    page.get_by_role("link", name="← Teams").click()
    page.get_by_role("link", name="Domains", exact=True).click()
    assigned = page.get_by_role("list", name="Assigned domains")
    assigned.get_by_text("burnbox.test").wait_for()
    page.get_by_role("button", name="Unassign").click()
    page.get_by_text("No domain assigned.").wait_for()
    page.get_by_label("Domain", exact=True).select_option(label="burnbox.test")
    page.get_by_label("Access").select_option("create_inbox")
    page.get_by_role("button", name="Assign").click()
    assigned.get_by_text("create inboxes").wait_for()
    page.get_by_role("button", name="Make catch-all").click()
    assigned.get_by_text("catch-all", exact=True).wait_for()
    # The catch-all's chaos rules, which each inbox it creates copies.
    title = "Chaos rules for new inboxes at burnbox.test"
    page.get_by_text(title, exact=True).click()
    template = page.get_by_role("form", name="Add a chaos rule")
    template.get_by_label("Code").fill("452")
    template.get_by_role("button", name="Add rule").click()
    rule = re.compile(r"RCPT: reply 452 .* next 1")
    page.get_by_role("list", name=title).get_by_text(rule).wait_for()
    page.get_by_text(f"{title} (1)", exact=True).wait_for()
    screenshot(page, "team-domains")
    page.get_by_role("button", name="Turn catch-all off").click()
    page.get_by_role("button", name="Make catch-all").wait_for()
    assert page.get_by_text(title).count() == 0


def test_the_try_it_page_gives_an_inbox_that_shows_its_mail(tmp_path, page):
    with serve(tmp_path, BURNBOX_BOOTSTRAP__ENABLED="true",
               BURNBOX_BOOTSTRAP__ADMIN_PASSWORD=PASSWORD) as served:
        page.goto(served.base + "/try")
        page.get_by_text("The try-it mode is off on this server.").wait_for()
        assignment = served.api("GET", "/my/domains", token=_api_login(served)).json()["data"][0]
    with serve(tmp_path, BURNBOX_BOOTSTRAP__ENABLED="true",
               BURNBOX_BOOTSTRAP__ADMIN_PASSWORD=PASSWORD, BURNBOX_DEMO__ENABLED="true",
               BURNBOX_DEMO__ASSIGNMENT_ID=assignment["id"]) as served:
        page.goto(served.base + "/try")
        page.get_by_role("button", name="Create a throwaway inbox").click()
        address = page.get_by_role("heading", name=re.compile("@burnbox.test")).inner_text()
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = "a@example.org", address, "Demo"
        message.set_content("hello demo")
        with smtplib.SMTP("127.0.0.1", served.smtp_port, timeout=10) as smtp:
            smtp.send_message(message)
        page.get_by_role("button", name=re.compile("^Demo")).click(timeout=15000)
        page.get_by_text("hello demo").wait_for()
        screenshot(page, "try")


def test_a_page_still_loading_never_draws_over_the_page_the_user_moved_to(bootstrapped, page):
    """The inboxes' answer is held in the browser's network layer until the user has opened
    another page; when it arrives, the page on screen stays the one the user chose."""
    served = bootstrapped()
    held = []
    page.route("**/api/v1/inboxes?per_page=100", lambda route: held.append(route))
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.wait_for_function("() => document.querySelector('a[href=\"/admin\"]')?.hidden === false")
    page.get_by_role("link", name="Account").click()
    page.get_by_role("heading", name="Account").wait_for()
    assert held, "the inboxes page never asked for its inboxes"
    for route in held:
        route.continue_()
    # The old page's answer has arrived and been drawn (off screen) by now.
    page.wait_for_timeout(500)
    assert page.get_by_role("heading", name="Inboxes").count() == 0
    page.get_by_role("heading", name="Account").wait_for()
    assert page.title() == "Account · Burnbox"
