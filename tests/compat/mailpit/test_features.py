"""Mailpit's optional features over a scope, through pytest-mailpit where it offers them and
HTTP where it does not: the HTML and link checks, chaos triggers as the scope's chaos rules
(a 100% Recipient trigger refuses RCPT TO over real SMTP), `send` into the inbox, `release`
through the native relay and its guard rails, and the `webui` flags that tell clients what is
on."""

from __future__ import annotations

import dataclasses
import io
import smtplib

import pytest
import requests
from pytest_mailpit.client import MailpitClient
from pytest_mailpit.models import ChaosTrigger, ChaosTriggers

from compat.mailpit.thumbs import mailpit_thumbnail
from tests.compat.mailpit.conftest import KEY_SCOPES, SUBJECT, Scoped, scope_of
from tests.processes import wait_until
from tests.release_helpers import release_settings
from tests.smtp_sink import SmtpSink

CHAOS_SCOPES = [*KEY_SCOPES, "team.inboxes.view", "team.inboxes.manage"]


def _client(scoped: Scoped) -> MailpitClient:
    return MailpitClient(scoped.url, username="ci", password=scoped.key, wait_timeout=5)


def test_the_html_and_link_checks_answer_in_mailpits_shapes(scoped):
    scoped.send()
    with _client(scoped) as mailpit:
        [summary] = mailpit.messages().messages
        html = mailpit.check_html(summary.id)
        assert html.platforms and html.tests >= 1
        links = mailpit.check_links(summary.id)
        assert [link.url for link in links.links] == ["https://shop.example/orders/1001"]
    plain = requests.get(f"{scoped.url}/api/v1/message/latest/html-check", timeout=10,
                         auth=("ci", scoped.key))
    assert plain.status_code == 200
    scoped.send("No HTML here", rich=False)
    refused = requests.get(f"{scoped.url}/api/v1/message/latest/html-check", timeout=10,
                           auth=("ci", scoped.key))
    assert (refused.status_code, refused.text) == (400, "message does not contain HTML")


def test_chaos_triggers_are_the_scopes_rules_and_fail_smtp(committed_runtime):
    with scope_of(committed_runtime, CHAOS_SCOPES) as scoped, _client(scoped) as mailpit:
        assert not mailpit.chaos().active
        applied = mailpit.set_chaos(ChaosTriggers(recipient=ChaosTrigger(452, 100)))
        assert (applied.recipient.error_code, applied.recipient.probability) == (452, 100)
        rules = scoped.native("GET", f"/inboxes/{scoped.service.inbox.id}/chaos").json()
        assert [(r["stage"], r["code"], r["percent"]) for r in rules["rules"]] == [
            ("rcpt", 452, 100)]
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            scoped.send(rich=False)
        assert refused.value.recipients[scoped.address][0] == 452
        mailpit.set_chaos(ChaosTriggers())
        scoped.send(rich=False)
        assert mailpit.messages().total == 1
        answer = requests.put(f"{scoped.url}/api/v1/chaos", auth=("ci", scoped.key), timeout=10,
                              json={"Authentication": {"ErrorCode": 535, "Probability": 50}})
        assert answer.status_code == 400 and "Authentication" in answer.text


def test_a_key_without_the_chaos_permission_is_a_403(scoped):
    answer = requests.get(f"{scoped.url}/api/v1/chaos", auth=("ci", scoped.key), timeout=10)
    assert answer.status_code == 403


def test_send_puts_a_message_into_the_inbox(committed_runtime):
    with scope_of(committed_runtime, CHAOS_SCOPES) as scoped:
        body = {"From": {"Email": "app@shop.example", "Name": "Shöp"},
                "To": [{"Email": scoped.address}], "Subject": "Sent über HTTP",
                "Text": "hello", "HTML": "<p>hello</p>", "Tags": ["api"],
                "Attachments": [{"Filename": "a.txt", "Content": "aGk=",
                                 "ContentType": "text/plain"}]}
        answer = requests.post(f"{scoped.url}/api/v1/send", json=body, auth=("ci", scoped.key),
                               timeout=10)
        assert answer.status_code == 200, answer.text
        sent = answer.json()["ID"]
        with _client(scoped) as mailpit:
            message = mailpit.get_message(sent)
        assert (message.subject, message.sender.name, message.tags) == (
            "Sent über HTTP", "Shöp", ("api",))
        assert scoped.native("GET", f"/emails/{sent}").json()["subject"] == "Sent über HTTP"
        bad = requests.post(f"{scoped.url}/api/v1/send", json={"Subject": "x"},
                            auth=("ci", scoped.key), timeout=10)
        assert bad.status_code == 400 and "Error" in bad.json()


def test_without_a_relay_webui_says_so_and_release_is_refused(scoped):
    webui = requests.get(f"{scoped.url}/api/v1/webui", auth=("ci", scoped.key), timeout=10)
    assert webui.json()["MessageRelay"]["Enabled"] is False
    assert webui.json()["SpamAssassin"] is False
    scoped.send(rich=False)
    answer = requests.post(f"{scoped.url}/api/v1/message/latest/release",
                           json={"To": ["qa@company.example"]}, auth=("ci", scoped.key),
                           timeout=10)
    assert answer.status_code in (400, 403)
    assert requests.get(f"{scoped.url}/api/v1/message/latest/sa-check", auth=("ci", scoped.key),
                        timeout=10).status_code == 404


def test_release_goes_through_the_native_relay_and_its_allow_list(committed_runtime):
    sink = SmtpSink().start()
    try:
        runtime = dataclasses.replace(committed_runtime, settings=release_settings(
            committed_runtime.settings, sink.port))
        with scope_of(runtime, [*KEY_SCOPES, "team.emails.release"]) as scoped:
            webui = requests.get(f"{scoped.url}/api/v1/webui", auth=("ci", scoped.key),
                                 timeout=10)
            assert webui.json()["MessageRelay"]["Enabled"] is True
            scoped.send(rich=False)
            url = f"{scoped.url}/api/v1/message/latest/release"
            refused = requests.post(url, json={"To": ["someone@elsewhere.example"]},
                                    auth=("ci", scoped.key), timeout=10)
            assert refused.status_code == 400
            answer = requests.post(url, json={"To": ["qa@company.example"]},
                                   auth=("ci", scoped.key), timeout=10)
            assert (answer.status_code, answer.text) == (200, "ok")
            [released] = sink.wait_for(1)
            assert released["Subject"] == SUBJECT
            assert sink.envelopes[0].rcpt_tos == ["qa@company.example"]
    finally:
        sink.stop()


def test_a_parts_thumb_is_a_180_by_120_jpeg_and_blank_for_a_part_that_is_no_image(scoped):
    from PIL import Image

    scoped.send()
    with _client(scoped) as mailpit:
        message = mailpit.get_message("latest")
    [inline], [attached] = message.inline, message.attachments

    def made() -> bool:
        parts = scoped.native("GET", f"/emails/{message.id}").json()["attachments"]
        return any(part["has_thumbnail"] for part in parts)

    wait_until(made, timeout=30)  # the worker makes the native thumbnail after the 250
    for part in (inline, attached):
        answer = requests.get(f"{scoped.url}/api/v1/message/{message.id}/part/{part.part_id}"
                              "/thumb", auth=("ci", scoped.key), timeout=10)
        assert answer.status_code == 200
        assert answer.headers["Content-Type"] == "image/jpeg"
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        with Image.open(io.BytesIO(answer.content)) as image:
            assert (image.format, image.size) == ("JPEG", (180, 120))
    missing = requests.get(f"{scoped.url}/api/v1/message/{message.id}/part/9.9/thumb",
                           auth=("ci", scoped.key), timeout=10)
    assert missing.status_code == 404


@pytest.mark.parametrize(("size", "colour_at_corner"), [((400, 200), "red"), ((50, 50), "white")])
def test_a_thumb_covers_the_box_from_a_large_image_and_pads_a_small_one(size, colour_at_corner):
    from PIL import Image

    stored = io.BytesIO()
    Image.new("RGB", size, "red").save(stored, "WEBP")
    with Image.open(io.BytesIO(mailpit_thumbnail(stored.getvalue()))) as image:
        assert image.size == (180, 120)
        corner, centre = image.getpixel((0, 0)), image.getpixel((90, 60))
    expected = {"red": (255, 0, 0), "white": (255, 255, 255)}[colour_at_corner]
    assert all(abs(a - b) < 16 for a, b in zip(corner, expected, strict=True))
    assert centre[0] > 200 and centre[1] < 40  # red in the middle either way
