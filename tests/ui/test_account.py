"""The account page in a real browser against a real `burnbox serve`: the display name, the
password change (a wrong current password shows the API's message), and the sessions list with
revoke."""

from tests.ui.conftest import ADMIN, PASSWORD, screenshot, sign_in

NEW_PASSWORD = "An0ther-long-passphrase!"


def test_a_user_renames_revokes_a_session_and_changes_the_password(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    other = served.api("POST", "/auth/login", json={"email": ADMIN, "password": PASSWORD},
                       headers={"User-Agent": "the other laptop"})
    assert other.status_code == 200, other.text
    other_token = other.json()["tokens"]["access_token"]
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name="Account").click()
    page.get_by_role("heading", name="Account").wait_for()

    page.get_by_label("Display name").fill("Ada Lovelace")
    page.get_by_role("button", name="Save name").click()
    expect(page.locator("#status")).to_have_text("Display name saved")
    assert served.api("GET", "/auth/me", token=other_token).json()["display_name"] == (
        "Ada Lovelace")

    sessions = page.get_by_role("list", name="My sessions").get_by_role("listitem")
    expect(sessions).to_have_count(2)
    expect(sessions.filter(has_text="this device")).to_have_count(1)
    screenshot(page, "account")
    page.get_by_role("button", name="End session of the other laptop", exact=False).click()
    expect(page.locator("#status")).to_have_text("Session ended")
    expect(sessions).to_have_count(1)
    assert served.api("GET", "/auth/me", token=other_token).status_code == 401

    page.get_by_label("Current password").fill("not the password")
    page.get_by_label("New password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    alert = page.get_by_role("form", name="Change password").get_by_role("alert")
    expect(alert).to_have_text("password is incorrect")
    screenshot(page, "account-password-error")
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.locator("#status")).to_have_text(
        "Password changed; your other sessions were ended")
    # This page's own session goes on; the new password signs in.
    page.reload()
    page.get_by_role("heading", name="Account").wait_for()
    assert served.api("POST", "/auth/login",
                      json={"email": ADMIN, "password": NEW_PASSWORD}).status_code == 200


def test_a_user_chooses_which_events_notify_them(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name="Account").click()
    page.get_by_role("heading", name="Account").wait_for()
    settings = page.get_by_role("form", name="Notifications")
    new_mail = settings.get_by_label("New mail in an inbox I created")
    expired = settings.get_by_label("An inbox I created expired")
    # The defaults: an expiry notifies, new mail does not.
    expect(new_mail).not_to_be_checked()
    expect(expired).to_be_checked()

    new_mail.check()
    expired.uncheck()
    settings.get_by_role("button", name="Save notification settings").click()
    expect(page.locator("#status")).to_have_text("Notification settings saved")
    token = served.api("POST", "/auth/login",
                       json={"email": ADMIN, "password": PASSWORD}).json()["tokens"]["access_token"]
    assert served.api("GET", "/notifications/preferences", token=token).json() == {
        "email.received": True, "inbox.created": False, "inbox.expired": False,
        "audit.export_ready": True}
    page.reload()
    page.get_by_role("heading", name="Account").wait_for()
    expect(page.get_by_label("New mail in an inbox I created")).to_be_checked()
    expect(page.get_by_label("An inbox I created expired")).not_to_be_checked()
    screenshot(page, "account-notifications")
