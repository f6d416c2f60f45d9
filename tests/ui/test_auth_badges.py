"""The reading pane's authentication badges, in a real browser against a real `burnbox serve`
whose DNS is the loopback test server: a signed message from an allowed IP shows SPF, DKIM and
DMARC pass (green), a tampered one DKIM fail (red), with the domain in the title."""

import smtplib

from tests.models.mail.checks.test_authentication import DOMAIN, HERE, key, publish, signed
from tests.ui.conftest import admin_token, screenshot, sign_in

__all__ = ["key"]  # the signing key fixture, shared with the model tests


def test_the_reading_pane_shows_spf_dkim_and_dmarc_badges(bootstrapped, page, dns_server, key):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    publish(dns_server, key)
    served = bootstrapped(BURNBOX_DNS__NAMESERVERS=dns_server.nameserver,
                          BURNBOX_DNS__TIMEOUT="1s")
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "auth"}).json()
    with smtplib.SMTP("127.0.0.1", served.smtp_port, local_hostname=HERE.helo,
                      timeout=10) as smtp:
        smtp.sendmail(HERE.mail_from, [inbox["full_address"]], signed(key))
        smtp.sendmail(HERE.mail_from, [inbox["full_address"]],
                      signed(key, body="Tampered.\r\n").replace(b"Tampered", b"Changed!"))

    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows).to_have_count(2)

    rows.last.click()  # the first sent: intact
    badges = page.locator(".auth-results")
    # Pending at first, then filled in place without reloading the pane.
    expect(badges.locator(".auth.pass")).to_have_text(["SPF pass", "DKIM pass", "DMARC pass"],
                                                      timeout=15_000)
    expect(badges.get_by_text("DKIM pass")).to_have_attribute("title", f"d={DOMAIN} s=s1")
    expect(badges.get_by_text("DMARC pass")).to_have_attribute(
        "title", f"{DOMAIN}, policy reject")
    screenshot(page, "auth-badges-pass")

    rows.first.click()
    expect(badges.locator(".auth.fail")).to_have_text(["DKIM fail"], timeout=15_000)
    # SPF passed for the same domain, so DMARC still passes (aligned SPF is enough).
    expect(badges.locator(".auth.pass")).to_have_text(["SPF pass", "DMARC pass"])
    screenshot(page, "auth-badges-fail")
