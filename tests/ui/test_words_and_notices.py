"""Words for people and notices that fit, in a real browser: dates in the user's chosen zone
and formats, durations as people write them, settings labelled in words with a line of help;
a notice lives until dismissed or the page changes; a webhook's signing secret shows once, in
its own box, and on no other page; "Show remote images" takes away "Remote images are
blocked"; the API key form offers every scope a key can hold, grouped."""

import re

from tests.ui.conftest import admin_token, screenshot, send_mail, sign_in


def test_dates_follow_the_users_zone_and_formats_and_settings_read_as_words(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "dates"}).json()
    send_mail(served, inbox["full_address"], "Hi")
    sign_in(page, served)
    page.wait_for_url("**/inboxes")

    page.get_by_role("link", name="Account").click()
    page.get_by_label("Time zone").fill("Asia/Tokyo")
    page.get_by_label("Date format").select_option("DD.MM.YYYY")
    page.get_by_label("Time format").select_option("12h")
    page.get_by_role("button", name="Save date and time settings").click()
    expect(page.locator("#status")).to_have_text("Date and time settings saved")
    me = served.api("GET", "/auth/me", token=token).json()
    assert (me["timezone"], me["date_format"], me["time_format"]) == ("Asia/Tokyo", "DD.MM.YYYY",
                                                                      "12h")
    # The sample on the page: 13:05:09 UTC is 10:05:09 PM in Tokyo.
    expect(page.get_by_text("28.11.2026 10:05:09 PM")).to_be_visible()
    screenshot(page, "account")

    page.get_by_role("link", name="Inboxes", exact=True).click()
    page.get_by_role("link", name=inbox["full_address"]).click()
    shown = page.locator(".emails time").first
    expect(shown).to_have_text(re.compile(r"^\d\d\.\d\d\.\d{4} \d{1,2}:\d\d:\d\d [AP]M$"))

    page.get_by_role("link", name="Admin").click()
    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="Settings").click()
    expect(page.get_by_label("Maximum attachment size (MB)")).to_be_visible()
    expect(page.get_by_text("Larger attachments are dropped; the e-mail is kept.")).to_be_visible()
    # Durations as people write them: the API's 10m0s is 10m, its 24h0m0s is 24h.
    expect(page.get_by_label("Default inbox lifetime")).to_have_value("10m")
    expect(page.get_by_label("Longest inbox lifetime")).to_have_value("24h")
    assert "0m0s" not in page.locator("main").inner_text()
    # Saving with nothing changed pins nothing (the shown `10m` is the API's `10m0s`).
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#status")).to_have_text("Nothing changed")
    screenshot(page, "admin-settings-words")


def test_notices_fit_and_a_secret_is_shown_once_on_its_own_page(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    token = admin_token(served)
    org = served.api("GET", "/orgs", token=token).json()["data"][0]
    team = served.api("GET", f"/orgs/{org['id']}/teams", token=token).json()["data"][0]
    sign_in(page, served)
    page.wait_for_url("**/inboxes")

    # A notice stays until it is dismissed...
    page.get_by_label("Alias (optional)").fill("notice")
    page.get_by_role("button", name="Create inbox").click()
    expect(page.locator("#status")).to_have_text("Created notice@burnbox.test")
    page.get_by_role("button", name="Dismiss the notice").click()
    expect(page.locator("#status")).to_have_text("")
    # ... or the page changes.
    page.get_by_role("button", name="Copy address").click()
    expect(page.locator("#status")).to_have_text("Copied to the clipboard")
    page.get_by_role("link", name="Teams").click()
    expect(page.get_by_role("heading", name="Teams")).to_be_visible()
    expect(page.locator("#status")).to_have_text("")

    page.goto(f"{served.base}/teams/{org['id']}/{team['id']}/webhooks")
    page.get_by_label("URL").fill("https://hooks.example.com/burnbox")
    page.get_by_role("button", name="Create webhook").click()
    secret_box = page.locator(".secret")
    expect(secret_box).to_contain_text("Copy its signing secret now")
    secret = secret_box.locator("code").inner_text()
    assert len(secret) >= 32
    secret_box.get_by_role("button", name="Copy secret").click()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    screenshot(page, "webhook-secret")
    for name in ("Account", "Teams", "Admin", "Inboxes"):
        page.get_by_role("link", name=name, exact=True).click()
        expect(page.locator("main h1").first).to_be_visible()
        assert secret not in page.content(), f"the secret is still shown on {name}"

    # Every scope a key can hold (18), grouped, a sensible default already chosen.
    page.goto(f"{served.base}/teams/{org['id']}/{team['id']}/keys")
    scopes = page.get_by_role("group", name="Scopes").get_by_role("checkbox")
    expect(scopes).to_have_count(18)
    expect(page.get_by_role("group", name="E-mails")).to_be_visible()
    checked = sorted(box.get_attribute("value") for box in scopes.all() if box.is_checked())
    assert checked == ["team.emails.view", "team.inboxes.create", "team.inboxes.view"]
    screenshot(page, "keys-form")


def test_showing_remote_images_takes_away_the_blocked_notice(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    inbox = served.api("POST", "/inboxes", token=admin_token(served),
                       json={"domain": "burnbox.test", "alias": "images"}).json()
    send_mail(served, inbox["full_address"], "Pic",
              html="<p>Look <img src='http://127.0.0.1:9/x.png'></p>")
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    page.get_by_role("link", name=re.compile("Pic")).click()
    expect(page.get_by_text("Remote images are blocked.")).to_be_visible()
    page.get_by_role("button", name="Show remote images").click()
    expect(page.get_by_text("Remote images are blocked.")).to_have_count(0)
    expect(page.get_by_text("Remote images are shown for this e-mail.")).to_be_visible()
