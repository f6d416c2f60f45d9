"""Seeing an e-mail as its reader would, in a real browser against a real `burnbox serve`: the
HTML at a phone's, a tablet's and a desktop's width; its source highlighted, every piece a text
node; the theme chosen on the account page, kept on the account, painted from the first frame
after a reload and followed by another browser; axe in the forced dark theme; and the plain
pages `/view/:id.html` and `/view/:id.txt` opened and screenshotted by a Playwright test with an
API key, under the frame's policy (the remote image waits until asked for, and the key never
reaches the image's host)."""

import re

import pytest

from tests.ui.conftest import SCREENSHOTS, admin_token, screenshot, send_mail, sign_in
from tests.ui.test_accessibility import AXE, _violations, violations_in_both_themes

SUBJECT = "Welcome aboard"


def _html(image_url: str) -> str:
    return ("<!-- greeting --><table width='600' style='width:600px;background:#fff7ed'><tr><td>"
            "<h1 style='color:#9a3412'>Welcome, Żaneta &amp; friends</h1>"
            "<p>Your code is <b>424242</b>.</p>"
            f"<img src='{image_url}/pixel.gif' alt='pixel' width=1 height=1>"
            "<script>document.body.dataset.ran = 'yes'</script></td></tr></table>"
            "<style>@media (max-width: 600px) { h1 { font-size: 20px } }</style>")


@pytest.fixture
def world(bootstrapped, image_host):
    """A bootstrapped server with an inbox holding one HTML e-mail (its image on image_host)."""
    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "viewing"}).json()
    send_mail(served, inbox["full_address"], SUBJECT, "Welcome, Żaneta. Your code is 424242.",
              html=_html(image_host.url), sender="Acme Shop <noreply@acme.example>")
    for _ in range(100):
        emails = served.api("GET", f"/inboxes/{inbox['id']}/emails", token=token).json()["data"]
        if emails:
            break
    detail = served.api("GET", f"/emails/{emails[0]['id']}", token=token).json()
    return served, token, inbox, detail


def _open_email(page, served, inbox, detail):
    page.set_viewport_size({"width": 1440, "height": 900})
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(f"{served.base}/inboxes/{inbox['id']}/emails/{detail['id']}")
    return page.get_by_role("region", name="Open e-mail")


def test_the_html_is_shown_at_a_phones_a_tablets_and_the_panes_width(world, page):
    from playwright.sync_api import expect

    served, _, inbox, detail = world
    reader = _open_email(page, served, inbox, detail)
    frame = reader.locator("iframe.mail-frame")
    expect(frame).to_be_visible()
    widths = reader.get_by_role("group", name="Width of the HTML view")
    expect(widths.get_by_role("button", name="Desktop")).to_have_attribute("aria-pressed", "true")
    pane = reader.locator(".frame-stage").bounding_box()["width"]
    assert abs(frame.bounding_box()["width"] - pane) <= 2
    for name, pixels in (("Phone", 390), ("Tablet", 768)):
        widths.get_by_role("button", name=name).click()
        expect(widths.get_by_role("button", name=name)).to_have_attribute("aria-pressed", "true")
        assert frame.bounding_box()["width"] == pixels
        screenshot(page, f"html-width-{name.lower()}")
    # On a phone, a tablet's frame scrolls sideways in its stage; the page itself does not.
    page.set_viewport_size({"width": 390, "height": 800})
    widths.get_by_role("button", name="Tablet").click()
    assert frame.bounding_box()["width"] == 768
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    stage = reader.locator(".frame-stage")
    assert stage.evaluate("(el) => el.scrollWidth > el.clientWidth")
    page.set_viewport_size({"width": 1440, "height": 900})
    # The choice stays when the frame is drawn again (another tab, then back to HTML).
    reader.get_by_role("tab", name="Headers").click()
    reader.get_by_role("tab", name="HTML", exact=True).click()
    expect(widths.get_by_role("button", name="Tablet")).to_have_attribute("aria-pressed", "true")
    assert reader.locator("iframe.mail-frame").bounding_box()["width"] == 768
    widths.get_by_role("button", name="Desktop").click()
    expect(page.frame_locator("iframe.mail-frame").get_by_text("Your code is")).to_be_visible()
    assert page.frame_locator("iframe.mail-frame").locator("body").get_attribute("data-ran") is None


def test_the_html_source_is_highlighted_and_never_parsed(world, page):
    from playwright.sync_api import expect

    served, token, inbox, detail = world
    reader = _open_email(page, served, inbox, detail)
    reader.get_by_role("tab", name="HTML source").click()
    versions = reader.get_by_role("group", name="Version of the HTML")
    expect(versions.get_by_role("button", name="As sent")).to_have_attribute("aria-pressed", "true")
    source = reader.get_by_label("HTML source of the e-mail")
    expect(source).to_be_visible()
    # As sent: every character the sender wrote, its script too, shown as text in order;
    # nothing of it is an element of the page but the highlighting's spans, and nothing ran.
    sent = served.api("GET", f"/emails/{detail['id']}/html-source", token=token).json()["html"]
    assert "<script>" in sent
    assert source.text_content() == sent
    assert source.locator(":not(span)").count() == 0
    expect(source.locator(".hl-tag", has_text="<script")).to_have_count(1)
    expect(source.locator(".hl-comment")).to_have_text(["<!-- greeting -->"])
    assert page.locator("body").get_attribute("data-ran") is None
    # As shown: the sanitised HTML the frame holds.
    shown = versions.get_by_role("button", name="As shown")
    shown.click()
    expect(shown).to_have_attribute("aria-pressed", "true")
    expect(source).not_to_contain_text("<script")
    assert source.text_content() == detail["body_html"]
    assert source.locator(":not(span)").count() == 0
    expect(source.locator(".hl-tag", has_text="<table")).to_have_count(1)
    versions.get_by_role("button", name="As sent").click()  # the screenshot: as sent
    expect(source.locator(".hl-tag", has_text="<script")).to_have_count(1)
    # The highlighting's colours, light and dark.
    for scheme, found in violations_in_both_themes(page).items():
        assert found == [], scheme
    expect(source.locator(".hl-attr", has_text="style").first).to_be_visible()
    expect(source.locator(".hl-entity")).to_have_text(["&amp;"])
    screenshot(page, "html-source")

    # The tokenizer on what sanitising would never let through: still only text.
    pieces = page.evaluate("""async () => {
        const { tokens } = await import("/ui/static/js/html-source.js");
        const cases = ["<script>alert(1)</script>", "<a href=x onclick='y'>t</a>",
                       "<img src=\\"a\\" / >", "<!-- open", "<p class=\\"cut", "1 < 2 && 3 > 2",
                       "<!DOCTYPE html><br/>", "&#x1F600;&nbsp;&bogus"];
        return cases.map((one) => [one, tokens(one)]);
    }""")
    for markup, found in pieces:
        assert "".join(text for _, text in found) == markup
    kinds = dict(pieces)
    assert kinds["<a href=x onclick='y'>t</a>"] == [
        ["tag", "<a"], ["text", " "], ["attr", "href"], ["punct", "="], ["value", "x"],
        ["text", " "], ["attr", "onclick"], ["punct", "="], ["value", "'y'"], ["tag", ">"],
        ["text", "t"], ["tag", "</a"], ["tag", ">"]]
    assert kinds["<!-- open"] == [["comment", "<!-- open"]]
    assert [kind for kind, _ in kinds["&#x1F600;&nbsp;&bogus"]] == ["entity", "entity", "entity"]


def _background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


LIGHT, DARK = "rgb(250, 250, 249)", "rgb(12, 10, 9)"


def test_the_theme_is_kept_per_user_and_painted_from_the_first_frame(world, page, browser):
    from playwright.sync_api import expect

    served, token, inbox, detail = world
    page.emulate_media(color_scheme="light")
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    assert _background(page) == LIGHT  # "Same as the device": the device is light
    page.get_by_role("link", name="Account").click()
    appearance = page.get_by_role("form", name="Appearance")
    expect(appearance.get_by_label("Same as the device")).to_be_checked()
    appearance.get_by_label("Dark").check()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert _background(page) == DARK
    expect(page.get_by_role("status")).to_have_text("Theme: Dark")
    assert served.api("GET", "/auth/me", token=token).json()["theme"] == "dark"
    screenshot(page, "account-theme")

    # A reload is dark before any script runs: the server marked the page it sent.
    sent = []
    page.on("response", lambda response: sent.append(response) if response.request
            .resource_type == "document" else None)
    page.goto(f"{served.base}/inboxes/{inbox['id']}/emails/{detail['id']}")
    assert '<html lang="en" data-session data-theme="dark">' in sent[-1].text()
    expect(page.get_by_role("region", name="Open e-mail")).to_be_visible()
    assert _background(page) == DARK
    if AXE.exists():  # axe on the forced dark theme of a light device
        assert _violations(page) == []
        page.get_by_role("link", name="Account").click()
        expect(page.get_by_role("form", name="Appearance")).to_be_visible()
        assert _violations(page) == []
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=str(SCREENSHOTS / "theme-dark-reader.png"))
    page.emulate_media(color_scheme="light")

    # Another browser (no cookie) follows the account once signed in.
    other = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    try:
        fresh = other.new_page()
        sign_in(fresh, served)
        fresh.wait_for_url("**/inboxes")
        expect(fresh.locator("html")).to_have_attribute("data-theme", "dark")
        # Light on purpose, then back to the device's choice: the page follows the device.
        fresh.goto(f"{served.base}/account")
        fresh.get_by_role("form", name="Appearance").get_by_label("Same as the device").check()
        expect(fresh.locator("html")).not_to_have_attribute("data-theme", re.compile("."))
        assert _background(fresh) == LIGHT
    finally:
        other.close()

    # Signing out forgets the theme in this browser: the next sign-in may be someone else.
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/login")
    expect(page.locator("html")).not_to_have_attribute("data-theme", re.compile("."))
    assert not [c for c in page.context.cookies() if c["name"] == "bb_theme"]


def _api_key(served, token) -> str:
    org = served.api("GET", "/orgs", token=token).json()["data"][0]
    team = served.api("GET", f"/orgs/{org['id']}/teams", token=token).json()["data"][0]
    created = served.api("POST", f"/orgs/{org['id']}/teams/{team['id']}/api-keys", token=token,
                         json={"name": "playwright", "scopes": ["team.emails.view"]})
    assert created.status_code == 201, created.text
    return created.json()["raw_key"]


def test_a_playwright_test_opens_and_screenshots_the_plain_pages(world, browser, image_host):
    from playwright.sync_api import expect

    served, token, _, detail = world
    key = _api_key(served, token)
    SCREENSHOTS.mkdir(exist_ok=True)
    # As docs/testing-with-burnbox.md shows it: the key in extraHTTPHeaders.
    context = browser.new_context(viewport={"width": 390, "height": 800},
                                  extra_http_headers={"Authorization": f"Bearer {key}"})
    try:
        page = context.new_page()
        response = page.goto(f"{served.base}/view/{detail['id']}.html")
        assert response.status == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert "sandbox" in response.headers["content-security-policy"]
        expect(page.get_by_role("heading", name="Welcome, Żaneta & friends")).to_be_visible()
        assert page.locator("body").get_attribute("data-ran") is None  # no script ran
        page.screenshot(path=str(SCREENSHOTS / "view-html-390.png"), full_page=True)
        assert image_host.hits == []  # the remote image stayed blocked

        text = page.goto(f"{served.base}/view/{detail['id']}.txt")
        assert text.headers["content-type"] == "text/plain; charset=utf-8"
        expect(page.locator("body")).to_contain_text("Welcome, Żaneta. Your code is 424242.")
        page.screenshot(path=str(SCREENSHOTS / "view-text-390.png"))

        missing = page.goto(f"{served.base}/view/00000000-0000-4000-8000-000000000000.html")
        assert missing.status == 404
    finally:
        context.close()

    # Remote images on: the key is sent to Burnbox alone (a route adds it), never to the
    # image's host, as the docs advise.
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        context.route(f"{served.base}/view/**", lambda route: route.continue_(
            headers={**route.request.headers, "authorization": f"Bearer {key}"}))
        page = context.new_page()
        assert page.goto(f"{served.base}/view/{detail['id']}.html?remote_images=true").status \
            == 200
        page.wait_for_load_state("load")  # the page's images are in
        expect(page.get_by_role("img", name="pixel")).to_be_attached()
        assert image_host.hits == ["/pixel.gif"]
        assert "Authorization" not in image_host.headers[0]
        page.screenshot(path=str(SCREENSHOTS / "view-html-1280.png"), full_page=True)
    finally:
        context.close()
