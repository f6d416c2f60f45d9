"""The navigation bar in a real browser against a real `burnbox serve`: the links that show only
once their answers arrive (the Admin link, the unread count) never move the user's own links."""

from tests.ui.conftest import screenshot, sign_in


def test_the_admin_link_showing_late_moves_no_link_of_the_user(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    held = []
    # The browser's request for the signed-in user is held: the Admin link, which waits for
    # it, shows only when the test lets it through.
    page.route("**/api/v1/auth/me", lambda route: held.append(route))
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    account = page.get_by_role("link", name="Account")
    sign_out = page.get_by_role("button", name="Sign out")
    admin = page.get_by_role("link", name="Admin")
    expect(account).to_be_visible()
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the page never asked for /auth/me"
    expect(admin).to_be_hidden()
    before = (account.bounding_box(), sign_out.bounding_box())

    for route in held:
        route.continue_()
    page.unroute("**/api/v1/auth/me")
    expect(admin).to_be_visible()
    # A click aimed at Account while the Admin link appeared used to land on Admin.
    assert (account.bounding_box(), sign_out.bounding_box()) == before
    screenshot(page, "navigation")
