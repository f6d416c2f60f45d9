"""pytest-mailpit's client (PyPI, pinned in requirements-test.lock) pointed at a Mailpit scope
of a running Burnbox, exactly as its users point it at Mailpit: the scope's base URL, and the
team API key as the Basic password. Mail arrives over real SMTP; every client method the
scope serves is used, and the native API sees the same read state and tags."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pytest_mailpit.client import MailpitClient
from pytest_mailpit.errors import MailpitError

from tests.compat.mailpit.conftest import CSV, PNG, SENDER_NAME, SUBJECT, Scoped


@pytest.fixture
def mailpit(scoped: Scoped):
    client = MailpitClient(scoped.url, username="ci", password=scoped.key, wait_timeout=5)
    yield client
    client.close()


def test_the_client_reads_a_rich_message_as_mailpit_shapes_it(scoped, mailpit):
    assert mailpit.is_ready()
    scoped.send()
    message = mailpit.wait_for_message(recipient=scoped.address, subject="Bestellung")
    assert message.subject == SUBJECT
    assert (message.sender.name, message.sender.address) == (SENDER_NAME, "zoe@shop.example")
    assert [a.address for a in message.to] == [scoped.address]
    assert [(a.name, a.address) for a in message.cc] == [("Ops", "ops@shop.example")]
    assert "Danke für Ihre Bestellung." in message.text
    assert "<b>Bestellung</b>" in message.html
    assert message.list_unsubscribe.links == ("https://shop.example/unsubscribe?u=1",)
    [inline] = message.inline
    [attached] = message.attachments
    assert (inline.file_name, inline.content_type, inline.content_id) == (
        "logo.png", "image/png", "logo@shop.example")
    assert mailpit.get_attachment(inline) == PNG
    assert (attached.file_name, attached.size) == ("report.csv", len(CSV))
    assert mailpit.get_attachment(attached) == CSV
    assert attached.checksums["SHA256"]
    assert abs(message.date - datetime.now(UTC)) < timedelta(minutes=5)

    headers = mailpit.get_headers(message.id)
    assert headers["Subject"][0].startswith("=?utf-8?")  # as sent: still encoded
    assert "Message-Id" in headers and headers["To"] == [scoped.address]
    raw = mailpit.get_raw(message.id)
    assert raw.startswith(b"From: ") or b"\r\nFrom: " in raw
    assert b"report.csv" in raw


def test_reading_marks_read_and_the_native_api_sees_read_state_and_tags(scoped, mailpit):
    scoped.send()
    [summary] = mailpit.messages().messages
    assert summary.read is False and summary.attachments == 1
    assert summary.created.tzinfo is not None
    mailpit.get_message(summary.id)
    email = scoped.native("GET", f"/emails/{summary.id}").json()
    assert email["is_read"] is True
    mailpit.mark_read([summary.id], read=False)
    assert scoped.native("GET", f"/emails/{summary.id}").json()["is_read"] is False

    mailpit.set_tags([summary.id], ["checkout", "eu shop"])
    assert sorted(scoped.native("GET", f"/emails/{summary.id}").json()["tags"]) == [
        "checkout", "eu shop"]
    listed = mailpit.messages()
    assert sorted(listed.tags) == ["checkout", "eu shop"]
    assert mailpit.search("tag:checkout").messages[0].id == summary.id
    mailpit.set_tags([summary.id], [])
    assert scoped.native("GET", f"/emails/{summary.id}").json()["tags"] == []


def test_search_pages_and_deletes_stay_in_the_scope(scoped, mailpit):
    for n in range(3):
        scoped.send(f"Order {n}", rich=False)
    scoped.send("Welcome aboard", rich=False)
    page = mailpit.messages(start=1, limit=2)
    assert (page.total, page.start, len(page.messages)) == (4, 1, 2)
    found = mailpit.search('subject:"Order" -subject:"Order 1"')
    assert sorted(m.subject for m in found.messages) == ["Order 0", "Order 2"]
    assert len(mailpit.search_all("subject:Order")) == 3

    mailpit.delete_search("subject:Welcome")
    assert mailpit.messages().total == 3
    first = mailpit.search('subject:"Order 0"').messages[0]
    mailpit.delete_messages([first.id])
    assert sorted(m.subject for m in mailpit.messages().messages) == ["Order 1", "Order 2"]
    mailpit.delete_all()
    assert mailpit.messages().total == 0
    assert scoped.native("GET", f"/inboxes/{scoped.service.inbox.id}/emails").json()["total"] == 0


def test_wait_for_message_times_out_naming_what_arrived(scoped, mailpit):
    scoped.send("Something else", rich=False)
    with pytest.raises(AssertionError):
        mailpit.wait_for_message(subject="never sent", timeout=0.5)
    mailpit.assert_no_message(subject="never sent", within=0.2)


def test_a_wrong_key_is_refused_as_mailpit_refuses_bad_credentials(scoped):
    with MailpitClient(scoped.url, username="ci", password="bb_wrong") as client:
        with pytest.raises(MailpitError) as refused:
            client.messages()
        assert "401" in str(refused.value)


def test_mailpit_terms_for_cc_inline_parts_tags_sizes_and_message_ids_find_their_mail(
        scoped, mailpit):
    scoped.send()  # rich: Cc Ops, an inline logo, a CSV attached
    scoped.send("Plain one", rich=False)
    rich = mailpit.search("has:inline").messages
    assert [m.subject for m in rich] == [SUBJECT]
    [plain] = mailpit.search("-has:inline").messages
    assert len(mailpit.search("cc:OPS@shop.example").messages) == 2  # both are Cc'd to Ops
    assert not mailpit.search("cc:zoe@shop.example").messages  # the sender is not Cc'd
    sizes = sorted((m.size, m.id) for m in mailpit.messages().messages)
    assert [m.id for m in mailpit.search(f"larger:{sizes[0][0]}").messages] == [sizes[1][1]]
    assert [m.id for m in mailpit.search(f"smaller:{sizes[1][0]}").messages] == [sizes[0][1]]
    message_id = mailpit.get_message(plain.id).message_id
    assert [m.id for m in mailpit.search(f"message-id:{message_id}").messages] == [plain.id]
    assert not mailpit.search("is:tagged").messages
    mailpit.set_tags([plain.id], ["seen"])
    assert [m.id for m in mailpit.search("is:tagged").messages] == [plain.id]
    with pytest.raises(MailpitError):
        mailpit.search("bcc:someone")
