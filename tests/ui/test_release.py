"""Release in the reading pane, in a real browser against a real `burnbox serve` whose release
relay is a real SMTP receiver: the "Release" tab sends the e-mail on, the list shows it sent
with the relay's reply; a recipient no allow-list allows is refused in words. The inbox's
auto-release rules card adds a rule, and mail it matches arrives released, its Release tab
saying a rule did it. Axe clean in both themes, screenshots at 1440 and 390 px."""

from tests.smtp_sink import SmtpSink
from tests.ui.conftest import (
    admin_token,
    first_email,
    mailed_inbox,
    screenshot,
    send_mail,
    sign_in,
)
from tests.ui.test_accessibility import violations_in_both_themes

RELAY = {"BURNBOX_RELEASE__RELAY": "own", "BURNBOX_RELEASE__RELAY_HOST": "127.0.0.1",
         "BURNBOX_RELEASE__RELAY_TLS": "none",
         "BURNBOX_RELEASE__ALLOWED_RECIPIENTS": "*@company.example",
         "BURNBOX_RELEASE__RETRY_DELAY": "0s"}


def test_the_release_tab_sends_the_email_on_and_lists_the_result(bootstrapped, page):
    from playwright.sync_api import expect

    sink = SmtpSink().start()
    try:
        served = bootstrapped(**RELAY, BURNBOX_RELEASE__RELAY_PORT=str(sink.port))
        inbox, email = mailed_inbox(served, admin_token(served), "release",
                                    "Your order has shipped", "Tracking: 12345")
        sign_in(page, served)
        page.wait_for_url("**/inboxes")
        page.goto(f"{served.base}/inboxes/{inbox['id']}/emails/{email['id']}")

        page.get_by_role("tab", name="Release").click()
        expect(page.get_by_text("Not released yet.")).to_be_visible()
        page.get_by_label("Send to").fill("me@elsewhere.example")
        page.get_by_role("button", name="Release", exact=True).click()
        expect(page.get_by_text("these recipients are not allowed")).to_be_visible()

        page.get_by_label("Send to").fill("qa@company.example, dev@company.example")
        page.get_by_role("button", name="Release", exact=True).click()
        row = page.locator(".releases li").first
        expect(row).to_contain_text("Sent", timeout=15_000)
        expect(row).to_contain_text("qa@company.example, dev@company.example")
        expect(row.locator(".relay-reply")).to_contain_text("250")
        assert sink.wait_for(1)[0]["Subject"] == "Your order has shipped"
        checks = violations_in_both_themes(page)
        screenshot(page, "email-release")
        bad = [f"{where}: {line}" for where, lines in checks.items() for line in lines]
        assert not bad, "\n".join(bad)
    finally:
        sink.stop()


def test_an_auto_release_rule_added_on_the_inbox_releases_the_mail_it_matches(bootstrapped,
                                                                               page):
    from playwright.sync_api import expect

    sink = SmtpSink().start()
    try:
        served = bootstrapped(**RELAY, BURNBOX_RELEASE__RELAY_PORT=str(sink.port))
        token = admin_token(served)
        inbox = served.api("POST", "/inboxes", token=token,
                           json={"domain": "burnbox.test", "alias": "rules"}).json()
        sign_in(page, served)
        page.wait_for_url("**/inboxes")
        page.goto(f"{served.base}/inboxes/{inbox['id']}")

        card = page.locator("details.release-rules")
        card.locator("summary").click()
        expect(card.get_by_text("None: nothing is released by itself.")).to_be_visible()
        card.get_by_label("Mail matching").fill("subject:invoice")
        card.get_by_label("Recipients").fill("me@elsewhere.example")
        card.get_by_role("button", name="Add rule").click()
        expect(card.get_by_text("these recipients are not allowed")).to_be_visible()
        card.get_by_label("Recipients").fill("qa@company.example")
        card.get_by_role("button", name="Add rule").click()
        expect(card.locator("summary")).to_have_text("Auto-release rules (1)")
        expect(card.locator("li").first).to_contain_text("qa@company.example")
        checks = violations_in_both_themes(page)
        screenshot(page, "inbox-release-rules")

        send_mail(served, inbox["full_address"], "Your invoice 42", "Total: 12 EUR")
        email = first_email(served, token, inbox["id"], inbox["full_address"])
        assert sink.wait_for(1)[0]["Subject"] == "Your invoice 42"
        page.goto(f"{served.base}/inboxes/{inbox['id']}/emails/{email['id']}")
        page.get_by_role("tab", name="Release").click()
        row = page.locator(".releases li").first
        expect(row).to_contain_text("Sent", timeout=15_000)
        expect(row).to_contain_text("by an auto-release rule")
        bad = [f"{where}: {line}" for where, lines in checks.items() for line in lines]
        assert not bad, "\n".join(bad)
    finally:
        sink.stop()
