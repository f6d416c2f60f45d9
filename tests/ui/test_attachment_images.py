"""Images in the reading pane, in a real browser against a real `burnbox serve`, with mail put
in over HTTP (POST /inboxes/:id/messages): the thumbnails of image attachments in a strip
under the headline and in the attachments tab, and the inline (`cid:`) image of the HTML
body drawn in the sandboxed frame (as a data: URL: the frame's policy stays as it is); in
the e-mail list, a row's first image as a small picture in a box sized before it loads, named
by its alt text in the row's link."""

import base64
import io
import re
import time

from tests.ui.conftest import admin_token, screenshot, sign_in


def _png(color, size=(480, 240)) -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def _wait_for_thumbnails(served, token, email_id) -> None:
    """Until the worker has made the thumbnail of every image the e-mail has (within moments;
    10 s at most)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        parts = served.api("GET", f"/emails/{email_id}", token=token).json()["attachments"]
        if all(part["has_thumbnail"] for part in parts
               if part["content_type"].startswith("image/")):
            return
        time.sleep(0.1)
    raise AssertionError(f"the thumbnails of {email_id} were not made within 10 s")


def test_thumbnails_and_inline_images_are_shown(bootstrapped, page):
    from playwright.sync_api import expect

    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "pictures"}).json()
    put = served.api("POST", f"/inboxes/{inbox['id']}/messages", token=token, json={
        "from": "Acme Shop <noreply@acme.example>", "subject": "Your photos",
        "text": "Two photos.", "tags": ["photos"],
        "html": '<h1>Hello</h1><p><img id="logo" src="cid:logo" alt="Logo" width="120"></p>',
        "attachments": [
            {"filename": "logo.png", "content": _png((194, 65, 12)), "content_id": "logo"},
            {"filename": "holiday.png", "content": _png((37, 99, 235), (300, 600))}]})
    assert put.status_code == 201, put.text
    email = put.json()
    _wait_for_thumbnails(served, token, email["id"])

    page.set_viewport_size({"width": 1440, "height": 900})
    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.get_by_role("link", name=inbox["full_address"]).click()
    page.get_by_role("link", name=re.compile("Your photos")).click()
    reader = page.get_by_role("region", name="Open e-mail")
    strip = reader.get_by_role("list", name="Images attached")
    expect(strip.get_by_role("img")).to_have_count(2)
    for name in ("logo.png", "holiday.png"):
        image = strip.get_by_role("img", name=f"Preview of {name}")
        expect(image).to_have_attribute("src", re.compile("^blob:"))
        page.wait_for_function("(img) => img.complete && img.naturalWidth > 0",
                               arg=image.element_handle())

    frame = page.frame_locator("iframe.mail-frame")
    logo = frame.get_by_role("img", name="Logo")
    expect(logo).to_have_attribute("src", re.compile("^data:image/png;base64,"))
    logo.evaluate("(img) => img.complete || new Promise((r) => img.onload = r)")
    assert logo.evaluate("(img) => img.naturalWidth") == 480
    screenshot(page, "attachment-images")

    reader.get_by_role("tab", name="Attachments (2)").click()
    panel = reader.get_by_role("tabpanel")
    expect(panel.get_by_role("img", name="Preview of holiday.png")).to_be_visible()
    screenshot(page, "attachment-images-tab")


def test_a_list_row_shows_its_first_image_small_and_named(bootstrapped, page):
    from playwright.sync_api import expect

    from tests.ui.test_accessibility import violations_in_both_themes

    served = bootstrapped()
    token = admin_token(served)
    inbox = served.api("POST", "/inboxes", token=token,
                       json={"domain": "burnbox.test", "alias": "gallery"}).json()
    messages = f"/inboxes/{inbox['id']}/messages"
    assert served.api("POST", messages, token=token, json={
        "from": "news@acme.example", "subject": "Words only", "text": "No pictures."}
    ).status_code == 201
    put = served.api("POST", messages, token=token, json={
        "from": "Acme Shop <noreply@acme.example>", "subject": "Your photos",
        "text": "Two photos.", "attachments": [
            {"filename": "notes.txt", "content": base64.b64encode(b"notes").decode()},
            {"filename": "holiday.png", "content": _png((37, 99, 235), (300, 600))},
            {"filename": "beach.png", "content": _png((194, 65, 12))}]})
    assert put.status_code == 201, put.text
    _wait_for_thumbnails(served, token, put.json()["id"])

    sign_in(page, served)
    page.wait_for_url("**/inboxes")
    page.goto(f"{served.base}/inboxes/{inbox['id']}")
    rows = page.get_by_role("list", name="E-mails").get_by_role("listitem")
    expect(rows).to_have_count(2)
    photos = rows.filter(has_text="Your photos")
    image = photos.get_by_role("img", name="Image attached: holiday.png")
    expect(image).to_have_attribute("src", re.compile("^blob:"))
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 0",
                           arg=image.element_handle())
    # Sized by its attributes before it loads, so the row does not move when it does.
    assert image.get_attribute("width") == "40" and image.get_attribute("height") == "40"
    box = image.bounding_box()
    assert (round(box["width"]), round(box["height"])) == (40, 40)
    expect(rows.filter(has_text="Words only").get_by_role("img")).to_have_count(0)
    # One stop for the keyboard, the image named inside the row's link.
    link = photos.get_by_role("link")
    expect(link).to_have_count(1)
    assert "Image attached: holiday.png" in link.evaluate(
        "(a) => [...a.querySelectorAll('img')].map((img) => img.alt).join()")
    link.focus()
    expect(link).to_be_focused()
    checks = violations_in_both_themes(page)
    screenshot(page, "list-thumbnails")
    bad = [f"{where}: {line}" for where, lines in checks.items() for line in lines]
    assert not bad, "\n".join(bad)
