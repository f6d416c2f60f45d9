"""The org page's domain history: each check shows when it ran."""

from tests.ui.conftest import admin_token, sign_in


def test_a_domain_check_in_the_history_shows_when_it_ran(bootstrapped, page):
    # The history read `created_at`, which checks do not have (they carry `checked_at`), so
    # the date column stayed empty.
    from playwright.sync_api import expect

    served = bootstrapped()
    org = served.api("GET", "/orgs", token=admin_token(served)).json()["data"][0]
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(f"{served.base}/orgs/{org['id']}")
    page.get_by_role("button", name="Verify now").first.click()
    # The check's answer redraws the list: its notice, then the page's own reads settle, and
    # only then is the History button the one on screen.
    expect(page.locator("#status")).to_contain_text("burnbox.test")
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="History").first.click()
    first_cell = page.locator("table.log tr td").first
    expect(first_cell).to_be_visible()
    expect(first_cell).not_to_have_text("")
    assert any(character.isdigit() for character in first_cell.inner_text())
