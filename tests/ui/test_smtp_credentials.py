"""The inbox page's SMTP credentials in a real browser against `burnbox serve`: create them from
the keyboard, see the settings an application needs and the password once, send with them over
SMTP to anyone and find the one message with its envelope recipients, rotate (the old password
fails), revoke; no serious axe violation on the way."""

import smtplib
import ssl

import pytest

from tests.ui.conftest import admin_token, screenshot, sign_in
from tests.ui.test_accessibility import AXE, _violations

ANYONE = ["alice@gmail.com", "bob@example.org"]


def _send(served, username, password, *, starttls=False):
    with smtplib.SMTP("127.0.0.1", served.smtp_port, timeout=10) as smtp:
        if starttls:  # the self-signed certificate `burnbox serve` made in its data folder
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            smtp.starttls(context=context)
        smtp.login(username, password)
        smtp.sendmail("app@myapp.example", ANYONE,
                      b"From: app@myapp.example\r\nTo: alice@gmail.com\r\n"
                      b"Subject: Welcome aboard\r\n\r\nHello.\r\n")


def test_credentials_are_created_used_rotated_and_revoked_from_the_inbox_page(bootstrapped,
                                                                              page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "app"}).json()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    panel = page.locator("details.smtp-credentials")
    summary = panel.get_by_text("SMTP credentials", exact=True)
    summary.focus()
    page.keyboard.press("Enter")  # opened from the keyboard
    create = panel.get_by_role("button", name="Create credentials")
    expect(create).to_be_visible()
    create.focus()
    page.keyboard.press("Enter")

    secret_box = panel.get_by_role("alert").filter(has_text="will not be shown again")
    expect(secret_box).to_be_visible()
    secret = secret_box.locator("code").inner_text()
    settings = panel.get_by_role("definition")
    expect(settings).to_have_text([
        "localhost", str(served.smtp_port), "STARTTLS (or none on this machine)",
        inbox["full_address"], "shown above, once", "never"])
    if AXE.exists():
        assert _violations(page) == []
    screenshot(page, "smtp-credentials")

    _send(served, inbox["full_address"], secret)
    _send(served, inbox["full_address"], secret, starttls=True)
    emails = served.api("GET", f"/inboxes/{inbox['id']}/emails", token=token).json()["data"]
    assert len(emails) == 2
    detail = served.api("GET", f"/emails/{emails[0]['id']}", token=token).json()
    assert detail["envelope_to"] == ANYONE

    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Rotate").click()
    expect(secret_box.locator("code")).not_to_have_text(secret)
    with pytest.raises(smtplib.SMTPAuthenticationError):
        _send(served, inbox["full_address"], secret)

    page.once("dialog", lambda dialog: dialog.accept())
    panel.get_by_role("button", name="Revoke").click()
    expect(panel.get_by_role("button", name="Create credentials")).to_be_visible()
    assert served.api("GET", f"/inboxes/{inbox['id']}/smtp-credentials",
                      token=token).json()["active"] is False

    page.get_by_role("list", name="E-mails").get_by_role("listitem").first.click()
    expect(page.locator(".email .headline")).to_contain_text(
        "Envelope to" + ", ".join(ANYONE))
