"""Reload-safe sessions in a real browser: 30 reloads in a minute keep the user signed in (the
refresh has a bucket of its own, not login's 10 per minute), and a 429 tells the user when to
try again instead of signing them out without a word."""

import re

from tests.ui.conftest import sign_in


def test_thirty_reloads_in_a_minute_keep_the_user_signed_in(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped(BURNBOX_RATE_LIMITS__AUTH="10/minute",
                          BURNBOX_RATE_LIMITS__REFRESH="120/minute")
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    for _ in range(30):
        page.reload()
        expect(page.get_by_role("button", name="Sign out")).to_be_visible()
        expect(page.get_by_role("heading", name="Inboxes")).to_be_visible()
    assert page.url.endswith("/inboxes")


def test_a_refused_refresh_says_when_to_try_again_and_keeps_the_session(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped(BURNBOX_RATE_LIMITS__REFRESH="2/minute")
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.reload()
    page.reload()
    page.reload()  # the third refresh in the minute is refused
    expect(page.get_by_role("alert")).to_have_text(
        re.compile(r"^Too many requests: try again in \d+ seconds?\.$"))
    expect(page.get_by_role("button", name="Try again")).to_be_visible()
    # The session was not ended: once the window has passed, a reload restores it.
    cookies = {cookie["name"] for cookie in page.context.cookies()}
    assert {"bb_refresh_token", "bb_session"} <= cookies

