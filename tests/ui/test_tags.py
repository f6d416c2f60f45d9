"""Tags in a real browser against `burnbox serve`: chips in the list and the reading pane from
an `X-Tags` header, one click on a chip filters the list, a tag added and removed in the pane
shows in the list at once, and the team's Tags page shows the cloud with counts, renames and
deletes a tag and makes a rule; no serious axe violation on the way."""

from tests.ui.conftest import admin_token, screenshot, send_mail, sign_in
from tests.ui.test_accessibility import AXE, _violations


def test_tags_are_shown_filtered_added_removed_renamed_and_deleted(bootstrapped, page):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip first

    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "tagged"}).json()
    send_mail(served, inbox["full_address"], "Plain news")
    send_mail(served, inbox["full_address"], "Your receipt", headers={"X-Tags": "checkout, beta"})
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows).to_have_count(2)
    tagged = rows.filter(has_text="Your receipt")
    expect(tagged.locator("button.tag")).to_have_text(["beta", "checkout"])

    tagged.get_by_role("button", name="checkout").click()  # one click filters the list
    expect(page.locator("#f-q")).to_have_value('tag:"checkout"')
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Your receipt")

    rows.first.get_by_role("link").click()
    reader = page.get_by_role("region", name="Open e-mail")
    editor = reader.locator(".tag-editor")
    expect(editor.locator("button.tag")).to_have_text(["beta", "checkout"])
    editor.get_by_role("textbox", name="Add tags").fill("VIP")
    editor.get_by_role("button", name="Add tag").click()
    expect(editor.locator("button.tag")).to_have_text(["beta", "checkout", "VIP"])
    expect(rows.first.locator("button.tag")).to_have_text(["beta", "checkout", "VIP"])
    editor.get_by_role("button", name="Remove the tag beta").click()
    expect(editor.locator("button.tag")).to_have_text(["checkout", "VIP"])
    expect(rows.first.locator("button.tag")).to_have_text(["checkout", "VIP"])
    if AXE.exists():
        assert _violations(page) == []
    screenshot(page, "tags-reading-pane")

    page.goto(served.base + "/teams")
    page.get_by_role("link", name="Tags").first.click()
    cloud = page.get_by_role("list", name="Tags").get_by_role("listitem")
    # A tag no e-mail carries any more stays in the cloud, counted 0, until deleted.
    expect(cloud).to_have_count(3)
    expect(cloud.nth(0)).to_contain_text("beta 0 e-mails")
    expect(cloud.nth(1)).to_contain_text("checkout 1 e-mail")
    page.once("dialog", lambda dialog: dialog.accept("paid"))
    page.get_by_role("button", name="Rename checkout").click()
    expect(page.get_by_role("list", name="Tags")).to_contain_text("paid")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete VIP").click()
    expect(cloud).to_have_count(2)
    page.get_by_label("New mail matching this search").fill("subject:invoice")
    page.get_by_label("gets these tags (comma-separated)").fill("billing")
    page.get_by_role("button", name="Create rule").click()
    expect(page.get_by_role("list", name="Tag rules")).to_contain_text("subject:invoice")
    if AXE.exists():
        assert _violations(page) == []
    screenshot(page, "tags-team-page")
    detail = served.api("GET", f"/inboxes/{inbox['id']}/emails", token=token).json()["data"]
    assert {item["subject"]: item["tags"] for item in detail} == {
        "Your receipt": ["paid"], "Plain news": []}
