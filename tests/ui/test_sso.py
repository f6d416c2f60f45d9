"""Single sign-on in a real browser against a real `burnbox serve` and a real OpenID provider
(oidc-provider-mock): the login page shows the provider's button, the provider's page signs
the person in, the callback's one-time code is exchanged on /login, and the account page lists
the linked provider; at the session limit the sign-in continues on /session-limit; an error
comes back to /login as a message."""

from burnbox.secretbox import new_key
from tests.oidc_provider import CLIENT_ID, CLIENT_SECRET, mock_provider, set_mock_user
from tests.ui.conftest import ADMIN, PASSWORD, screenshot


def test_a_mapped_user_signs_in_with_sso_and_sees_the_link_on_the_account_page(
        bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped(BURNBOX_SSO__ALLOW_PRIVATE_ISSUERS="true",
                          BURNBOX_SECRETS__ENCRYPTION_KEYS=new_key())
    token = served.api("POST", "/auth/login",
                       json={"email": ADMIN, "password": PASSWORD}).json()["tokens"]["access_token"]
    org_id = served.api("GET", "/orgs", token=token).json()["data"][0]["id"]
    with mock_provider() as issuer:
        created = served.api("POST", "/admin/sso/providers", token=token, json={
            "name": "corp", "issuer_url": issuer, "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET})
        assert created.status_code == 201, created.text
        mapped = served.api("POST", f"/admin/sso/providers/{created.json()['id']}/domain-mappings",
                            token=token, json={"domain": "corp.example", "org_id": org_id})
        assert mapped.status_code == 201, mapped.text
        set_mock_user(issuer, "ann-1", email="ann@corp.example", email_verified=True,
                      name="Ann Corp")

        page.goto(served.base + "/login")
        button = page.get_by_role("link", name="Sign in with Corp")
        expect(button).to_be_visible()
        screenshot(page, "login-sso")
        button.click()
        page.locator("input[name=sub]").fill("ann-1")
        page.get_by_role("button", name="Authorize").click()
        page.wait_for_url("**/inboxes")
        page.get_by_role("link", name="Account").click()
        expect(page.get_by_text("Signed in as")).to_contain_text("ann@corp.example")
        linked = page.get_by_role("list", name="Linked providers").get_by_role("listitem")
        expect(linked).to_have_count(1)
        expect(linked).to_contain_text("corp")

        # At her limit of one session, a sign-in in another browser goes through the
        # session-limit page.
        ann = served.api("GET", "/admin/users", token=token, params={"q": "ann@"}).json()
        served.api("PATCH", f"/admin/users/{ann['data'][0]['id']}", token=token,
                   json={"max_sessions": 1})
        page.context.clear_cookies()
        page.goto(served.base + "/login")
        page.get_by_role("link", name="Sign in with Corp").click()
        page.locator("input[name=sub]").fill("ann-1")
        page.get_by_role("button", name="Authorize").click()
        page.wait_for_url("**/session-limit")
        page.get_by_role("button", name="End this session").click()
        page.wait_for_url("**/inboxes")

    page.goto(served.base + "/api/v1/auth/sso/nobody")
    page.wait_for_url("**/login")
    expect(page.get_by_role("alert").first).to_have_text("no such SSO provider")
