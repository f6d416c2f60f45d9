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


def test_at_390_px_the_header_is_one_row_and_the_navigation_opens_from_menu(bootstrapped,
                                                                            page):
    """Three wrapped rows of links took 122 px at 390 px before any mail."""
    from playwright.sync_api import expect

    served = bootstrapped()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name="Admin").wait_for()  # every link of the bar is there
    page.set_viewport_size({"width": 390, "height": 800})
    header = page.locator("header.bar")
    menu = page.get_by_role("button", name="Menu")
    brand = page.get_by_role("link", name="Burnbox")
    expect(menu).to_be_visible()
    expect(page.get_by_role("link", name="Account")).to_be_hidden()
    box, brand_box, menu_box = header.bounding_box(), brand.bounding_box(), menu.bounding_box()
    assert box["height"] <= 60, box  # one row: the name and the button side by side
    assert abs((brand_box["y"] + brand_box["height"] / 2)
               - (menu_box["y"] + menu_box["height"] / 2)) < 4, (brand_box, menu_box)
    assert page.get_by_role("heading", name="Inboxes").bounding_box()["y"] < 120

    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("link", name="Account")).to_be_visible()
    assert header.bounding_box()["height"] == box["height"]  # it opens over the page
    screenshot(page, "navigation-menu-open")  # (it leaves the page at 1280 px)
    page.set_viewport_size({"width": 390, "height": 800})
    page.get_by_role("link", name="Teams").click()
    expect(page.get_by_role("heading", name="Teams")).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_role("link", name="Account")).to_be_hidden()
    menu.click()
    page.keyboard.press("Escape")
    expect(page.get_by_role("link", name="Account")).to_be_hidden()
    expect(menu).to_be_focused()
    screenshot(page, "navigation-narrow")
    # Wide (as the screenshots leave it): every link in the bar, no menu.
    expect(menu).to_be_hidden()
    expect(page.get_by_role("link", name="Account")).to_be_visible()


def test_a_mistyped_address_shows_the_uis_own_not_found_page(bootstrapped, page):
    """It showed the API's JSON envelope as raw text; the API's paths keep it."""
    from playwright.sync_api import expect

    served = bootstrapped()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    answer = page.goto(served.base + "/inboxs")
    assert answer.status == 404
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    expect(page.get_by_role("main")).to_contain_text("There is no page at /inboxs.")
    expect(page).to_have_title("Page not found · Burnbox")
    page.get_by_role("link", name="Your inboxes").click()
    expect(page.get_by_role("heading", name="Inboxes")).to_be_visible()
    page.goto(served.base + "/inboxes/not/a/page")
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    screenshot(page, "not-found")
    api = page.goto(served.base + "/api/v1/nothing")
    assert api.status == 404
    assert api.json() == {"error": "resource not found", "code": "not_found"}
