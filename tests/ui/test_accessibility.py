"""Accessibility: axe-core (npm `axe-core`, installed into tests/ui/node_modules by `make
install`) injected into every page of the UI, in the light and the dark theme, finds no
serious or critical violation; and the inbox page is usable with the keyboard alone, with the
focus visible."""

from pathlib import Path

import pytest

from tests.ui.conftest import admin_token, send_mail, sign_in

AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"


def _violations(page) -> list[str]:
    """The serious and critical violations axe finds in the page as it is now, one line each."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated, not a script tag: the page's CSP allows no script but its own.
        page.evaluate(AXE.read_text(encoding="utf-8"))
    found = page.evaluate("""async () => {
        const result = await axe.run(document, { resultTypes: ["violations"] });
        return result.violations
          .filter((v) => v.impact === "serious" || v.impact === "critical")
          .map((v) => `${v.id} (${v.impact}): `
            + v.nodes.map((n) => n.target.join(" ")).join(", "));
    }""")
    return found


def violations_in_both_themes(page, where: str = "") -> dict[str, list[str]]:
    """`_violations` of the page as it is now in the light and the dark theme, keyed by the
    scheme (and `where`), the light one emulated again after; nothing without axe-core."""
    if not AXE.exists():
        return {}
    found = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        found[f"{scheme} {where}".strip()] = _violations(page)
    page.emulate_media(color_scheme="light")
    return found


def _tab_to(page, target, what: str) -> None:
    """Press Tab until `target` has the focus (at most 40 times)."""
    for _ in range(40):
        page.keyboard.press("Tab")
        if target.evaluate("(el) => el === document.activeElement"):
            return
    raise AssertionError(f"{what} is never reached with Tab")


@pytest.fixture
def world(bootstrapped):
    """A bootstrapped server with an inbox holding one e-mail; the ids the pages need."""
    if not AXE.exists():
        pytest.skip(f"no axe-core: {AXE} is missing (make install runs npm ci in tests/ui)")
    served = bootstrapped(BURNBOX_DEMO__ENABLED="true")
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "axe"}).json()
    send_mail(served, inbox["full_address"], "Your code 424242",
              "Your verification code is 424242. https://acme.example/verify?t=1",
              html="<p>Your code is <b>424242</b></p>", sender="Acme Shop <noreply@acme.example>")
    for _ in range(100):
        emails = served.api("GET", f"/inboxes/{inbox['id']}/emails", token=token).json()["data"]
        if emails:
            break
    org = served.api("GET", "/orgs", token=token).json()["data"][0]
    team = served.api("GET", f"/orgs/{org['id']}/teams", token=token).json()["data"][0]
    return served, {"inbox": inbox["id"], "email": emails[0]["id"], "org": org["id"],
                    "team": team["id"]}


PAGES = [
    ("/inboxes", "Inboxes"),
    ("/inboxes/{inbox}", "axe@burnbox.test"),
    ("/inboxes/{inbox}/emails/{email}", "Your code 424242"),
    ("/teams", "Teams"),
    ("/teams/{org}/{team}/keys", "API keys of"),
    ("/teams/{org}/{team}/webhooks", "Webhooks of"),
    ("/teams/{org}/{team}/domains", "Domains of"),
    ("/orgs/{org}", "Domains"),
    ("/notifications", "Notifications"),
    ("/account", "Account"),
    ("/admin", "Platform"),
    ("/admin/users", "Users"),
    ("/admin/orgs", "Orgs"),
    ("/admin/platform", "Platform settings"),
    ("/admin/sso", "Single sign-on"),
    ("/orgs/{org}/analytics", "Analytics of"),
    ("/teams/{org}/{team}/analytics", "Analytics of"),
]


def test_no_page_has_a_serious_or_critical_violation_in_either_theme(world, page):
    from playwright.sync_api import expect

    served, ids = world
    found = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.context.clear_cookies()
        page.goto(served.base + "/try")
        page.get_by_role("heading", name="Try Burnbox").wait_for()
        found[f"{scheme} /try"] = _violations(page)
        page.goto(served.base + "/login")
        page.get_by_role("button", name="Sign in").wait_for()
        found[f"{scheme} /login"] = _violations(page)
        sign_in(page, served)
        page.wait_for_url("**/inboxes")
        for path, heading in PAGES:
            page.goto(served.base + path.format(**ids))
            expect(page.get_by_role("heading", name=heading).first).to_be_visible()
            page.wait_for_load_state("networkidle")
            found[f"{scheme} {path}"] = _violations(page)
        page.keyboard.press("?")
        page.get_by_role("dialog", name="Keyboard shortcuts").wait_for()
        found[f"{scheme} shortcuts dialog"] = _violations(page)
    bad = [f"{where}: {line}" for where, lines in found.items() for line in lines]
    assert not bad, "\n".join(bad)


def test_the_inbox_page_works_from_the_keyboard_alone_with_the_focus_visible(world, page):
    from playwright.sync_api import expect

    served, ids = world
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(f"{served.base}/inboxes/{ids['inbox']}")
    link = page.get_by_role("link", name="Your code 424242")
    link.wait_for()
    # Tab from the top of the page until the e-mail's link has the focus, then open it.
    _tab_to(page, link, "the e-mail's link")
    # Read from the focused element itself: the list may be read again meanwhile (new mail,
    # the e-mail's authentication results), which replaces the link with a new one that keeps
    # the focus; the locator's element could be the old one, detached, with no style at all.
    outline = page.evaluate("""() => {
        const el = document.activeElement, style = getComputedStyle(el);
        return [el.textContent.includes("Your code 424242"), style.outlineStyle,
                style.outlineWidth];
    }""")
    assert outline == [True, "solid", "3px"], f"the focused link shows no outline: {outline}"
    page.keyboard.press("Enter")
    reader = page.get_by_role("region", name="Open e-mail")
    expect(reader.get_by_role("heading", name="Your code 424242")).to_be_visible()
    # The copy button of the code and the tabs are reached and used by the keyboard too.
    copy_code = reader.get_by_role("button", name="Copy code 424242")
    _tab_to(page, copy_code, "the code's copy button")
    page.keyboard.press("Enter")
    assert page.evaluate("navigator.clipboard.readText()") == "424242"
