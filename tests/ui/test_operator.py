"""The operator's pages in a real browser: SSO providers and their domain mappings managed in
the admin UI, and analytics as charts (e-mails per day as a line, the busiest domains and
teams as bars) for an org and for a team."""

import re

from tests.ui.conftest import admin_token, screenshot, send_mail, sign_in


def test_sso_providers_and_their_domain_mappings_are_managed_in_the_admin_ui(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(served.base + "/admin/sso")
    expect(page.get_by_role("heading", name="Single sign-on")).to_be_visible()
    expect(page.get_by_text("No provider yet.")).to_be_visible()
    new = page.get_by_role("form", name="New provider")
    new.get_by_label("Name (in the sign-in address)").fill("company")
    new.get_by_label("Client ID").fill("burnbox-client")
    new.get_by_label("Issuer URL").fill("https://login.example.com")
    new.get_by_role("button", name="Add provider").click()
    expect(page.locator("#status")).to_have_text("Provider company added")
    providers = page.get_by_role("list", name="Providers")
    expect(providers.get_by_text("company")).to_be_visible()

    mapping = page.get_by_role("form", name="New domain mapping of company")
    mapping.get_by_label("E-mail domain").fill("example.com")
    mapping.get_by_label("Role in the org").select_option("admin")
    mapping.get_by_role("button", name="Add mapping").click()
    expect(page.locator("#status")).to_have_text("example.com mapped")
    mapped = page.get_by_role("list", name="Domain mappings of company")
    expect(mapped.get_by_text(re.compile(r"→ .+ as admin"))).to_be_visible()
    screenshot(page, "admin-sso")

    page.get_by_role("button", name="Disable company").click()
    expect(page.locator("#status")).to_have_text("company disabled")
    token = admin_token(served)
    [stored] = served.api("GET", "/admin/sso/providers", token=token).json()
    assert stored["enabled"] is False
    page.get_by_role("button", name="Remove the mapping of example.com").click()
    expect(page.get_by_text("No mapping: users join no org by their domain.")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Remove company").click()
    expect(page.get_by_text("No provider yet.")).to_be_visible()


def test_analytics_read_as_charts_for_an_org_and_a_team(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "charts"}).json()
    for n in range(3):
        send_mail(served, inbox["full_address"], f"Order {n}", sender="shop@acme.example")
    org = served.api("GET", "/orgs", token=token).json()["data"][0]
    team = served.api("GET", f"/orgs/{org['id']}/teams", token=token).json()["data"][0]
    for _ in range(100):
        totals = served.api("GET", f"/orgs/{org['id']}/analytics", token=token).json()
        if totals["total_emails"] == 3:
            break
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name="Teams").click()
    page.get_by_role("link", name="Analytics").first.click()
    expect(page.get_by_role("heading", name=f"Analytics of {org['name']}")).to_be_visible()
    line = page.get_by_role("img", name=re.compile(r"^E-mails per day, last 30 days: 3 in all"))
    expect(line).to_be_visible()
    expect(page.get_by_role("img", name=re.compile(
        r"^Busiest receiving domains, last 30 days: burnbox\.test 3"))).to_be_visible()
    expect(page.get_by_role("img", name=re.compile(
        r"^Busiest sender domains, last 30 days: acme\.example 3"))).to_be_visible()
    expect(page.get_by_role("img", name=re.compile(
        rf"^Busiest teams, all time: {team['name']} 3"))).to_be_visible()
    screenshot(page, "analytics-org")
    page.get_by_role("link", name="Last 7 days").click()
    expect(page.get_by_role("img", name=re.compile(r"^E-mails per day, last 7 days: 3"))
           ).to_be_visible()
    page.goto(f"{served.base}/teams/{org['id']}/{team['id']}/analytics")
    expect(page.get_by_role("heading", name=f"Analytics of {team['name']}")).to_be_visible()
    expect(page.get_by_role("img", name=re.compile(r"^E-mails per day.*: 3 in all"))
           ).to_be_visible()
