"""The inbox page's chaos rules in a real browser against `burnbox serve`: add a rule through
the form, see it refuse mail over SMTP and its counter afterwards, clear the rules."""

import smtplib

import pytest

from tests.ui.conftest import admin_token, screenshot, send_mail, sign_in


def test_a_rule_is_added_fires_and_is_cleared_from_the_inbox_page(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "retry"}).json()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    rules = page.get_by_role("list", name="Chaos rules")
    page.get_by_text("Chaos rules", exact=True).click()
    expect(rules).to_contain_text("None: mail to this inbox is answered as usual.")

    form = page.get_by_role("form", name="Add a chaos rule")
    form.get_by_label("Stage").select_option("rcpt")
    form.get_by_label("Action").select_option("reply")
    form.get_by_label("Code").fill("451")
    form.get_by_label("Text").fill("Greylisted")
    form.get_by_label("N", exact=True).fill("1")
    form.get_by_role("button", name="Add rule").click()
    expect(rules.get_by_role("listitem")).to_have_text(
        "RCPT: reply 451 4.3.0 Greylisted · next 1 · fired 0 times")

    with pytest.raises(smtplib.SMTPRecipientsRefused):
        send_mail(served, inbox["full_address"], "Refused")
    send_mail(served, inbox["full_address"], "Stored")  # the rule is spent
    page.reload()
    page.get_by_text("Chaos rules (1)", exact=True).click()
    expect(rules.get_by_role("listitem")).to_contain_text("fired 1 time, last ")
    expect(rules.get_by_role("listitem")).to_contain_text("· spent")
    expect(page.get_by_role("list", name="E-mails").get_by_role("listitem")).to_have_count(1)

    form.get_by_label("Action").select_option("delay")
    form.get_by_label("Delay (s)").fill("120")
    form.get_by_role("button", name="Add rule").click()
    expect(form.get_by_role("alert")).to_contain_text("delay_seconds")
    screenshot(page, "chaos-rules")

    page.get_by_role("button", name="Clear rules").click()
    expect(rules).to_contain_text("None: mail to this inbox is answered as usual.")
    assert served.api("GET", f"/inboxes/{inbox['id']}/chaos", token=token).json() == {
        "rules": []}
