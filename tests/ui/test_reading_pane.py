"""The inbox page as a tester uses it, in a real browser against a real `burnbox serve`: the
reading pane beside the list from 1200 px (the list, its scroll position and its selection
kept; the address names the e-mail; back and forward), the keyboard (j/k, Enter, Delete, /,
?), what a tester came for first (the sender as written, codes and links with copy buttons,
the spam score), mark read and unread, delete one and delete all, the unread count in the tab
title, and the one-column flow of a narrow screen."""

import re

from tests.ui.conftest import admin_token, screenshot, send_mail, sign_in

LINK = "https://acme.example/verify?token=abc123"
SENDER = "Acme Shop <noreply@acme.example>"


def _inbox_with_mail(served, alias: str, count: int) -> dict:
    """An inbox of the admin's with `count` e-mails "Mail 1"... (the last one newest); the
    first carries a code and a link."""
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": alias}).json()
    send_mail(served, inbox["full_address"], "Mail 1",
              f"Your verification code is 424242.\nConfirm your address: {LINK}\n", sender=SENDER)
    for n in range(2, count + 1):
        send_mail(served, inbox["full_address"], f"Mail {n}", sender=SENDER)
    for _ in range(100):
        listed = served.api("GET", f"/inboxes/{inbox['id']}", token=token).json()
        if listed["email_count"] == count:
            break
    inbox["token"], inbox["count"] = token, count
    return inbox


def _open_inbox(page, served, inbox: dict, width: int, height: int):
    """Sign in at `width` x `height` and open the inbox from the list; its e-mails' rows."""
    from playwright.sync_api import expect

    page.set_viewport_size({"width": width, "height": height})
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows).to_have_count(inbox["count"])
    return rows


def test_the_reading_pane_keeps_the_list_and_follows_the_keyboard(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    inbox = _inbox_with_mail(served, "pane", 30)
    rows = _open_inbox(page, served, inbox, 1440, 900)
    expect(page).to_have_title(f"(30) {inbox['full_address']} · Burnbox")

    # Scroll the list to its oldest mail, then open it: the list stays, scrolled and marked.
    page.evaluate("document.querySelector('.emails').dataset.kept = 'yes'")
    pane = page.locator(".list-pane")
    pane.evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    scrolled = pane.evaluate("(el) => el.scrollTop")
    assert scrolled > 500
    page.get_by_role("link", name=re.compile("Mail 1 ")).click()
    page.wait_for_url(re.compile(r"/inboxes/[\w-]+/emails/[\w-]+$"))
    reader = page.get_by_role("region", name="Open e-mail")
    expect(reader.get_by_role("heading", name="Mail 1")).to_be_visible()
    assert page.evaluate("document.querySelector('.emails').dataset.kept") == "yes"
    assert pane.evaluate("(el) => el.scrollTop") == scrolled
    expect(page.locator(".emails li.selected")).to_have_count(1)
    expect(page.locator(".emails li.selected a")).to_have_attribute("aria-current", "true")
    expect(page).to_have_title(f"(29) {inbox['full_address']} · Burnbox")
    first_url = page.url

    # What a tester came for, above the body: sender as written, the code, the link, the score.
    expect(reader.locator(".sender")).to_have_text("Acme Shop <noreply@acme.example>")
    reader.get_by_role("button", name="Copy code 424242").click()
    assert page.evaluate("navigator.clipboard.readText()") == "424242"
    reader.get_by_role("button", name=f"Copy link 1: {LINK}").click()
    assert page.evaluate("navigator.clipboard.readText()") == LINK
    expect(reader.get_by_text(re.compile(r"^Spam score \d+\.\d of 10$"))).to_be_visible()
    screenshot(page, "reading-pane")

    # k: the previous (newer) e-mail opens in the pane, and the address follows; back returns.
    page.keyboard.press("k")
    expect(reader.get_by_role("heading", name="Mail 2")).to_be_visible()
    assert page.url != first_url
    page.go_back()
    expect(reader.get_by_role("heading", name="Mail 1")).to_be_visible()
    assert page.url == first_url
    page.go_forward()
    expect(reader.get_by_role("heading", name="Mail 2")).to_be_visible()
    assert page.evaluate("document.querySelector('.emails').dataset.kept") == "yes"
    page.keyboard.press("j")
    expect(reader.get_by_role("heading", name="Mail 1")).to_be_visible()

    # Mark unread and read again: the row and the tab title follow.
    reader.get_by_role("button", name="Mark unread").click()
    expect(page).to_have_title(f"(29) {inbox['full_address']} · Burnbox")
    expect(page.locator(".emails li.selected")).to_have_class(re.compile("unread"))
    reader.get_by_role("button", name="Mark read").click()
    expect(page).to_have_title(f"(28) {inbox['full_address']} · Burnbox")

    # Delete (the key): gone from the list and the API, the neighbour opens.
    page.keyboard.press("Delete")
    expect(rows).to_have_count(29)
    expect(reader.get_by_role("heading", name="Mail 2")).to_be_visible()
    assert served.api("GET", f"/inboxes/{inbox['id']}",
                      token=inbox["token"]).json()["email_count"] == 29

    # / goes to the search; ? lists the shortcuts.
    page.keyboard.press("/")
    expect(page.get_by_role("searchbox", name="Search")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("row", name=re.compile("Next e-mail"))).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()

    # A link to an e-mail opens it with its list; the old /emails/:id address too.
    email_id = page.url.rsplit("/", 1)[1]
    page.goto(f"{served.base}/emails/{email_id}")
    page.wait_for_url(f"**/inboxes/{inbox['id']}/emails/{email_id}")
    expect(reader.get_by_role("heading", name="Mail 2")).to_be_visible()
    expect(rows).to_have_count(29)

    # Delete every e-mail: the inbox stays, empty.
    page.once("dialog", lambda confirm: confirm.accept())
    page.get_by_role("button", name="Delete all e-mails").click()
    expect(page.locator("#status")).to_have_text("29 e-mails deleted")
    expect(page.get_by_text("Waiting for e-mail…")).to_be_visible()
    expect(page).to_have_title(f"{inbox['full_address']} · Burnbox")


def test_a_narrow_screen_shows_the_list_or_the_email(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    inbox = _inbox_with_mail(served, "narrow", 3)
    _open_inbox(page, served, inbox, 390, 800)
    page.get_by_role("link", name=re.compile("Mail 1 ")).click()
    expect(page.get_by_role("heading", name="Mail 1")).to_be_visible()
    expect(page.get_by_role("list", name="E-mails")).to_be_hidden()
    screenshot(page, "reading-narrow")
    page.set_viewport_size({"width": 390, "height": 800})
    page.get_by_role("link", name="← Back to the list").click()
    expect(page.get_by_role("list", name="E-mails")).to_be_visible()
    expect(page.get_by_role("heading", name="Mail 1")).to_be_hidden()
    # j moves the selection (and the focus) without opening; Enter opens it.
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=re.compile(r"^Mail \d$"))).to_be_visible()
