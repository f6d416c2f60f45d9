"""A clean console: no error logged in the browser through a tour of every page, from the first
load signed out (no 401 noise) to leaving pages that follow a live stream (their WebSocket
closes without `Invalid frame header`)."""

from tests.ui.conftest import admin_token, sign_in


def test_no_console_error_from_the_first_load_through_every_page(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped(BURNBOX_DEMO__ENABLED="true")
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "console"}).json()
    org = served.api("GET", "/orgs", token=token).json()["data"][0]
    team = served.api("GET", f"/orgs/{org['id']}/teams", token=token).json()["data"][0]
    errors: list[str] = []
    page.on("response", lambda response: response.status >= 400 and errors.append(
        f"{response.status} {response.request.method} {response.url}"))
    page.on("console", lambda message: message.type == "error" and errors.append(
        f"{page.url}: {message.text}"))

    page.goto(served.base + "/")
    page.wait_for_url("**/login")
    page.get_by_role("button", name="Sign in").wait_for()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    tour = [f"/inboxes/{inbox['id']}", "/admin", "/teams", f"/teams/{org['id']}/{team['id']}/keys",
            f"/teams/{org['id']}/{team['id']}/webhooks", f"/teams/{org['id']}/{team['id']}/domains",
            f"/orgs/{org['id']}", "/notifications", "/account", "/admin/users", "/admin/orgs",
            "/admin/platform", "/admin/sso", f"/orgs/{org['id']}/analytics",
            f"/teams/{org['id']}/{team['id']}/analytics", "/try", f"/inboxes/{inbox['id']}",
            "/inboxes"]
    for path in tour:
        # Through the app's own links where there is one (a page change, no reload), and a
        # reload too: both leave the live pages' sockets behind.
        page.goto(served.base + path)
        expect(page.locator("main h1").first).to_be_visible()
        page.wait_for_timeout(300)  # the live pages' sockets open
        page.get_by_role("link", name="Inboxes", exact=True).click()
        expect(page.get_by_role("heading", name="Inboxes")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/login")
    page.wait_for_timeout(500)
    assert errors == [], "\n".join(errors)
