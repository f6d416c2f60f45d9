"""The spam engine's verdict, the List-Unsubscribe check and the attachments' checksums in the
reading pane, in a real browser against a real `burnbox serve` asking the suite's real spamd:
axe clean in both themes, screenshots at 1440 and 390 px."""

import hashlib
import smtplib
from email.message import EmailMessage

from tests.ui.conftest import admin_token, open_first_email, screenshot
from tests.ui.test_accessibility import violations_in_both_themes

REPORT = b"%PDF-1.4\n" + bytes(range(256)) * 40 + b"\n%%EOF\n"


def test_the_engine_verdict_unsubscribe_and_checksums_in_the_reading_pane(bootstrapped, page,
                                                                         spamd):
    from playwright.sync_api import expect

    served = bootstrapped(BURNBOX_CHECKS__SPAM_ENGINE=spamd,
                          BURNBOX_CHECKS__SPAM_ENGINE_TIMEOUT="30s")
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "engine"}).json()
    message = EmailMessage()
    message["From"], message["To"] = "Deals <deals@shop.example>", inbox["full_address"]
    message["Subject"] = "FREE VIAGRA NOW!!!"
    message["List-Unsubscribe"] = "<mailto:stop@shop.example>, <https://shop.example/u/42>"
    message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content("Buy cheap viagra now, click here.")
    message.add_attachment(REPORT, maintype="application", subtype="pdf", filename="report.pdf")
    with smtplib.SMTP("127.0.0.1", served.smtp_port, timeout=10) as smtp:
        smtp.send_message(message)
    open_first_email(page, served, token, inbox["id"])

    verdict = page.locator(".spam-engine")
    expect(verdict).to_contain_text("SpamAssassin", timeout=30_000)
    expect(verdict).to_contain_text("spam from 5.0")
    verdict.locator("summary").click()
    expect(verdict.get_by_role("row", name="DRUGS_ERECTILE")).to_be_visible()
    unsubscribe = page.locator(".unsubscribe")
    expect(unsubscribe).to_contain_text("One-click unsubscribe")
    unsubscribe.locator("summary", has_text="1 problem").click()
    expect(unsubscribe).to_contain_text("no DKIM signature covers both")

    page.get_by_role("tab", name="Attachments (1)").click()
    expect(page.locator("table.checksums")).to_contain_text(hashlib.sha256(REPORT).hexdigest())
    expect(page.locator("table.checksums")).to_contain_text(hashlib.md5(REPORT).hexdigest())
    checks = violations_in_both_themes(page)
    screenshot(page, "email-spam-engine")
    bad = [f"{where}: {line}" for where, lines in checks.items() for line in lines]
    assert not bad, "\n".join(bad)
