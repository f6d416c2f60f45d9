"""A page load is cheap, and the UI survives a person's reloads, in a real browser against a
real `burnbox serve`: one load of an inbox page makes a handful of counted API calls (the page's
data in one call, the rarely changing reads kept in the tab's session storage) and opens each
of its two sockets once; 60 reloads in a minute under the default per-user limit (300 a
minute) leave the page listing its mail, its socket live; and a 429 makes the page wait for
the reset it was given, saying so calmly, then list its mail."""

from __future__ import annotations

import re

from tests.ui.conftest import admin_token, screenshot, send_mail, sign_in

# Calls that count in the per-user bucket: every API call but the refresh (a bucket of its
# own, per client IP) and the socket upgrades (their ticket was counted).
NOT_PER_USER = re.compile(r"^(POST /auth/refresh$|WS )")


def _inbox_with_mail(served, alias: str) -> dict:
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": alias}).json()
    send_mail(served, inbox["full_address"], "Your code is 482913")
    return inbox


def _calls(page, served) -> list[str]:
    """The API calls the page makes from now on, as `METHOD /path`, sockets included."""
    seen: list[str] = []
    page.on("request", lambda request: "/api/v1/" in request.url and seen.append(
        f"{request.method} {request.url.removeprefix(served.base + '/api/v1')}"))
    page.on("websocket", lambda socket: seen.append(
        "WS " + socket.url.split("/api/v1", 1)[1].split("?")[0]))
    return seen


def _sockets_seen(page, calls: list[str], *paths: str) -> None:
    """Let the page run until it has opened a socket to each of `paths` (at most 10 s), then
    until it has made no call for half a second. Not by a count of sockets: the inboxes page
    the test came from opens a notifications socket too, and when its event arrived after
    the test started counting, two sockets were "seen" before the inbox page's own stream,
    which then fell into the load measured next."""
    for _ in range(200):
        opened = [call.removeprefix("WS ") for call in calls if call.startswith("WS ")]
        if all(path in opened for path in paths):
            break
        page.wait_for_timeout(50)
    else:
        raise AssertionError(f"not every socket of {paths} opened: {calls}")
    for _ in range(20):
        made = len(calls)
        page.wait_for_timeout(500)
        if len(calls) == made:
            return
    raise AssertionError(f"the page kept calling: {calls}")


def _listed(page, subject: str, *, seconds: float = 5) -> None:
    """The page lists an e-mail of `subject` first (within `seconds`)."""
    from playwright.sync_api import expect

    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows.first).to_contain_text(subject, timeout=seconds * 1000)


def test_one_load_of_an_inbox_page_makes_four_counted_calls_and_opens_each_socket_once(
        bootstrapped, page):
    served = bootstrapped()
    inbox = _inbox_with_mail(served, "measured")
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    calls = _calls(page, served)
    page.goto(f"{served.base}/inboxes/{inbox['id']}")
    _listed(page, "Your code is 482913")
    sockets = (f"/ws/inboxes/{inbox['id']}", "/ws/notifications")
    _sockets_seen(page, calls, *sockets)  # the first load's, before the load measured
    del calls[:]
    page.reload()
    _listed(page, "Your code is 482913")
    _sockets_seen(page, calls, *sockets)  # and anything late
    per_user = [call for call in calls if not NOT_PER_USER.search(call)]
    assert sorted(per_user) == sorted([
        "GET /notifications?unread_only=true&per_page=1",
        "POST /ws/ticket", "POST /ws/ticket",
        f"GET /inboxes/{inbox['id']}/overview?per_page=50",
    ]), calls
    assert sorted(call for call in calls if call.startswith("WS ")) == [
        f"WS /ws/inboxes/{inbox['id']}", "WS /ws/notifications"], calls


def test_sixty_reloads_in_a_minute_then_the_page_lists_its_mail(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped(BURNBOX_RATE_LIMITS__AUTHENTICATED="300/minute",
                          BURNBOX_RATE_LIMITS__ANONYMOUS="60/minute")
    inbox = _inbox_with_mail(served, "reloaded")
    refused: list[str] = []
    page.on("response", lambda response: response.status == 429 and refused.append(response.url))
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(f"{served.base}/inboxes/{inbox['id']}")
    _listed(page, "Your code is 482913")
    for _ in range(60):
        page.reload()
        _listed(page, "Your code is 482913")
    assert refused == [], [*refused[:5], f"... {len(refused)} in all"]
    # The page's socket is live after all that: new mail shows without a reload.
    send_mail(served, inbox["full_address"], "After sixty reloads")
    _listed(page, "After sixty reloads")
    expect(page.get_by_role("alert")).to_have_count(0)


def test_a_refused_load_waits_for_its_reset_says_so_calmly_then_lists_the_mail(bootstrapped,
                                                                               page):
    from playwright.sync_api import expect

    served = bootstrapped(BURNBOX_RATE_LIMITS__AUTHENTICATED="30/20 seconds")
    inbox = _inbox_with_mail(served, "refused")
    token = admin_token(served)  # the same user as the page: the same per-user bucket
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    refused: list[int] = []
    page.on("response", lambda response: response.status == 429 and refused.append(
        int(response.headers["retry-after"])))

    def spend() -> int:
        """Spend the rest of the user's window; the seconds its 429 says to wait."""
        for _ in range(40):
            answer = served.api("GET", "/auth/me", token=token)
            if answer.status_code == 429:
                return int(answer.headers["Retry-After"])
        raise AssertionError("the window was never spent")

    # A window with most of its time left, so the load below lands inside it.
    left = spend()
    if left < 10:
        page.wait_for_timeout((left + 1) * 1000)
        assert spend() >= 10
    page.goto(f"{served.base}/inboxes/{inbox['id']}")
    expect(page.get_by_role("status")).to_have_text(
        re.compile(r"^Slowing down: retrying in \d+ s$"))
    expect(page.get_by_role("alert")).to_have_count(0)
    assert refused, "the page was not refused"
    screenshot(page, "inbox-slowing-down")
    # Once the window has passed the page lists its mail, and the notice has gone.
    _listed(page, "Your code is 482913", seconds=40)
    expect(page.locator("#status")).to_have_text("")
