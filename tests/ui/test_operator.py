"""The operator's pages in a real browser: SSO providers and their domain mappings managed in
the admin UI (added, edited with the API's errors under their fields, removed), and analytics
as charts (e-mails per day as a line, the busiest domains and teams as bars) for an org and
for a team."""

import re

from burnbox.secretbox import new_key
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


def test_an_sso_provider_and_a_mapping_are_edited_in_the_admin_ui(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped(BURNBOX_SECRETS__ENCRYPTION_KEYS=new_key())
    token = admin_token(served)
    org = served.api("GET", "/orgs", token=token).json()["data"][0]
    qa = served.api("POST", f"/orgs/{org['id']}/teams", token=token, json={"name": "QA"}).json()
    provider = served.api("POST", "/admin/sso/providers", token=token, json={
        "name": "company", "issuer_url": "https://login.example.com", "client_id": "old-client",
        "client_secret": "first-secret"}).json()
    served.api("POST", f"/admin/sso/providers/{provider['id']}/domain-mappings", token=token,
               json={"domain": "example.com", "org_id": org["id"]})
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(served.base + "/admin/sso")

    page.get_by_label("Edit company").click()
    edit = page.get_by_role("form", name="Settings of company")
    expect(edit.get_by_label("Client ID")).to_have_value("old-client")
    expect(edit.get_by_label(re.compile("^Client secret"))).to_have_value("")  # write-only
    issuer = edit.get_by_label("Issuer URL")
    issuer.fill("ftp://login.example.com")  # a URL to the browser, not to the API
    edit.get_by_role("button", name="Save provider").click()
    expect(edit.locator(".field-error")).to_have_text("an absolute http(s) URL")
    expect(issuer).to_have_attribute("aria-invalid", "true")
    expect(issuer).to_be_focused()
    screenshot(page, "admin-sso-edit-error")

    issuer.fill("https://id.example.org")
    edit.get_by_label("Client ID").fill("new-client")
    edit.get_by_label(re.compile("^Allowed e-mail domains")).fill("example.com, example.org")
    edit.get_by_role("button", name="Save provider").click()  # the secret field left empty
    expect(page.locator("#status")).to_have_text("Provider company saved")
    page.reload()
    page.get_by_label("Edit company").click()
    edit = page.get_by_role("form", name="Settings of company")
    expect(edit.get_by_label("Issuer URL")).to_have_value("https://id.example.org")
    expect(edit.get_by_label("Client ID")).to_have_value("new-client")
    [stored] = served.api("GET", "/admin/sso/providers", token=token).json()
    assert (stored["client_id"], stored["has_client_secret"], stored["allowed_domains"]) == (
        "new-client", True, ["example.com", "example.org"])

    page.get_by_label("Edit the mapping of example.com").click()
    mapping = page.get_by_role("form", name="Mapping of example.com")
    mapping.get_by_label("Role in the org").select_option("admin")
    mapping.get_by_label("Team", exact=True).select_option(label="QA")
    screenshot(page, "admin-sso-edit")
    mapping.get_by_role("button", name="Save mapping").click()
    expect(page.locator("#status")).to_have_text("Mapping of example.com saved")
    page.reload()
    mapped = page.get_by_role("list", name="Domain mappings of company")
    expect(mapped.get_by_text(re.compile(r"→ .+ as admin, team QA as member"))).to_be_visible()
    [stored] = served.api("GET", f"/admin/sso/providers/{provider['id']}/domain-mappings",
                          token=token).json()
    assert (stored["org_role"], stored["team_id"]) == ("admin", qa["id"])

    page.get_by_label("Edit the mapping of example.com").click()
    mapping = page.get_by_role("form", name="Mapping of example.com")
    mapping.get_by_label("Team", exact=True).select_option(label="No team")
    mapping.get_by_role("button", name="Save mapping").click()
    expect(page.locator("#status")).to_have_text("Mapping of example.com saved")
    expect(mapped.get_by_text(re.compile(r"→ .+ as admin$"))).to_be_visible()


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
