"""The checks of an e-mail in the reading pane, in a real browser against a real `burnbox serve`:
the spam score's reasons, the "HTML check" tab (scores per client family, the issues) and the
"Links" tab (check now against a real receiver on loopback, the operator allowance on), axe
clean on both tabs in both themes, screenshots at 1440 and 390 px."""

from tests.receiver import Answer
from tests.ui.conftest import admin_token, open_first_email, screenshot, send_mail
from tests.ui.test_accessibility import violations_in_both_themes

HTML = """<html><head><style>.row {{ display: flex; }}</style></head><body>
<div class="row"><p>Welcome!</p><a href="{ok}">Confirm</a> <a href="{gone}">Old page</a></div>
</body></html>"""


def test_the_html_check_links_and_spam_reasons_in_the_reading_pane(bootstrapped, page,
                                                                     receiver):
    from playwright.sync_api import expect

    served = bootstrapped()  # the UI servers allow private webhook (and link) targets
    receiver.by_path["/gone"] = Answer(404)
    base = f"http://127.0.0.1:{receiver.port}"
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "checks"}).json()
    send_mail(served, inbox["full_address"], "CLAIM YOUR PRIZE!!!", "Click here to confirm.",
              html=HTML.format(ok=f"{base}/ok", gone=f"{base}/gone"))
    open_first_email(page, served, token, inbox["id"])

    page.get_by_text("Why this score").click()
    expect(page.get_by_text("the subject is written in capitals only")).to_be_visible()

    page.get_by_role("tab", name="HTML check").click()
    scores = page.locator(".html-check .scores li")
    expect(scores.filter(has_text="Outlook")).to_have_count(1)
    expect(page.get_by_role("row", name="display:flex")).to_be_visible()
    checks = {}
    checks.update(violations_in_both_themes(page, "html check"))
    screenshot(page, "email-html-check")

    page.get_by_role("tab", name="Links").click()
    expect(page.get_by_text("Not checked yet.")).to_be_visible()
    page.get_by_role("button", name="Check links").click()
    rows = page.locator(".link-results tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("200")
    expect(rows.nth(1)).to_contain_text("404")
    expect(rows.nth(1)).to_have_class("failed")
    checks.update(violations_in_both_themes(page, "links"))
    screenshot(page, "email-links")
    bad = [f"{where}: {line}" for where, lines in checks.items() for line in lines]
    assert not bad, "\n".join(bad)
