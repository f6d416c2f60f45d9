"""The system administrator's pages in a real browser against a real `burnbox serve`: the
platform figures updated live, users (search, disable, enable, end sessions, delete after a
confirmation), orgs, and the platform settings with the API's errors shown."""

import re

from tests.ui.conftest import PASSWORD, screenshot, sign_in

OTHER = "grace@example.org"


def _register(served, email: str) -> str:
    """A second account, signed in once through the API (one session); its access token."""
    response = served.api("POST", "/auth/register",
                          json={"email": email, "password": PASSWORD, "display_name": "Grace"})
    assert response.status_code == 201, response.text
    return response.json()["tokens"]["access_token"]


def test_an_administrator_watches_the_platform_and_manages_users_and_settings(bootstrapped,
                                                                               page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped(BURNBOX_CLOCK__ADMIN_STATS_INTERVAL="1s")
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name="Admin").click()
    page.get_by_role("heading", name="Platform").wait_for()
    users = page.locator('[data-figure="total_users"]')
    expect(users).to_have_text("1")
    # A new account reaches the figures over the stream, without a reload.
    other_token = _register(served, OTHER)
    expect(users).to_have_text("2", timeout=15000)
    # The time of the last figures is in the account's formats (24-hour clock by default),
    # not the browser's locale (which said "9:54:33 PM").
    expect(page.get_by_text(re.compile(r"^Updated "))).to_have_text(
        re.compile(r"^Updated \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} · live$"))
    screenshot(page, "admin-stats")

    page.get_by_role("navigation", name="Administration").get_by_role("link", name="Users").click()
    page.get_by_label("Search users").fill("grace")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url("**/admin/users?q=grace")
    rows = page.get_by_role("list", name="Users").get_by_role("listitem")
    expect(rows).to_have_count(1)
    page.get_by_role("button", name=f"End sessions of {OTHER}").click()
    expect(page.locator("#status")).to_have_text(f"1 session(s) of {OTHER} ended")
    assert served.api("GET", "/auth/me", token=other_token).status_code == 401
    page.get_by_role("button", name=f"Disable {OTHER}").click()
    expect(rows.first).to_contain_text("disabled")
    refused = served.api("POST", "/auth/login", json={"email": OTHER, "password": PASSWORD})
    assert refused.status_code == 403
    screenshot(page, "admin-users")
    page.get_by_role("button", name=f"Enable {OTHER}").click()
    expect(rows.first).not_to_contain_text("disabled")
    # The administrator cannot disable themselves: the envelope's message is shown.
    page.get_by_label("Search users").fill("")
    page.get_by_role("button", name="Search").click()
    page.get_by_role("button", name="Disable admin@burnbox.test").click()
    expect(page.get_by_role("alert").filter(has_text=re.compile("yourself|own"))).to_be_visible()
    # Deleting asks first; dismissing keeps the user.
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name=f"Delete {OTHER}").click()
    expect(page.get_by_role("button", name=f"Delete {OTHER}")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=f"Delete {OTHER}").click()
    expect(page.locator("#status")).to_have_text(f"{OTHER} deleted")
    expect(page.get_by_role("button", name=f"Delete {OTHER}")).to_have_count(0)

    page.get_by_role("navigation", name="Administration").get_by_role("link", name="Orgs").click()
    expect(page.get_by_role("list", name="Orgs").get_by_role("listitem")).to_have_count(1)
    screenshot(page, "admin-orgs")

    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="Settings").click()
    # A 0 where it means no limit says so beside the control, as the value changes.
    for label in ("Domains per org", "Teams per org", "Inboxes per domain", "Sessions per user"):
        limit = page.get_by_label(label)
        zero = page.locator(f"#{limit.get_attribute('id')}-zero")
        limit.fill("0")
        expect(zero).to_have_text("No limit")
        expect(limit).to_have_accessible_description(re.compile("No limit$"))
        limit.fill("7")
        expect(zero).to_be_hidden()
    page.get_by_label("Failed sign-ins before lock-out").fill("0")
    expect(page.locator("#f-lockout_max_attempts-zero")).to_have_text("Lock-out off")
    screenshot(page, "admin-settings-zero")
    page.reload()  # nothing saved: the form as the API has it
    minimum = page.get_by_label("Minimum password length")
    minimum.fill("3")
    page.get_by_role("button", name="Save settings").click()
    alert = page.get_by_role("form", name="Platform settings").get_by_role("alert")
    expect(alert).to_contain_text("password_min_length")
    assert served.api("POST", "/auth/register", json={
        "email": "short@example.org", "password": "abc", "display_name": "S"}).status_code == 400
    screenshot(page, "admin-settings-error")
    minimum.fill("14")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#status")).to_have_text("Saved: revision 1")
    expect(page.get_by_role("button", name="Unpin Minimum password length")).to_be_visible()
    screenshot(page, "admin-settings")
    page.get_by_role("button", name="Unpin Minimum password length").click()
    expect(page.get_by_role("button", name="Unpin Minimum password length")).to_have_count(0)


def test_the_admin_link_is_shown_only_to_system_administrators(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    _register(served, OTHER)
    page.goto(served.base + "/login")
    page.get_by_label("E-mail").fill(OTHER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name="Teams").wait_for()
    expect(page.get_by_role("link", name="Admin")).to_be_hidden()
    # Typing the address gets the API's refusal, shown as its envelope message.
    page.goto(served.base + "/admin")
    expect(page.get_by_role("alert")).to_contain_text("system administrator")
