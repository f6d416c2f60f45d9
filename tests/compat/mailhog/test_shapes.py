"""MailHog's message shape (compat.mailhog.shapes) on messages the standard library writes as
applications send them: the values MailHog's parser would give, and what the npm `mailhog`
client reads of them (`Content.Headers[...][0]`, `Body` still encoded, the top-level
`MIME.Parts`)."""

from __future__ import annotations

import base64
import json
import quopri
import uuid
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage

from compat.mailhog.shapes import Content, Envelope, go_time, message_shape, path, top_level_part

EMAIL_ID = uuid.UUID("3f2b1c9e-0d4a-4e6b-9f1a-2c3d4e5f6a7b")
WHEN = datetime(2026, 3, 4, 5, 6, 7, 120000, tzinfo=UTC)
ENVELOPE = Envelope(helo="app.example", sender="app@shop.example",
                    recipients=["qa@burnbox.test"], received_at=WHEN)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def wire(message: EmailMessage) -> bytes:
    """The message as it travels over SMTP: CRLF line ends."""
    return message.as_bytes(policy=policy.SMTP)


def shaped(message: EmailMessage | bytes) -> dict:
    """The message's MailHog shape, through JSON as a client receives it."""
    raw = message if isinstance(message, bytes) else wire(message)
    return json.loads(json.dumps(message_shape(EMAIL_ID, ENVELOPE, raw, "mx.burnbox.test")))


def base_message(subject: str = "Your order") -> EmailMessage:
    message = EmailMessage()
    message["From"] = "Shop <app@shop.example>"
    message["To"] = "qa@burnbox.test"
    message["Subject"] = subject
    return message


def test_a_plain_message_has_its_headers_as_lists_and_its_body_as_sent():
    message = base_message()
    message.set_content("Hello there\n")
    raw = wire(message)
    shape = shaped(message)
    assert shape["ID"] == str(EMAIL_ID)
    assert shape["Content"]["Headers"]["Subject"] == ["Your order"]
    assert shape["Content"]["Headers"]["From"] == ["Shop <app@shop.example>"]
    assert shape["Content"]["Body"] == "Hello there\r\n"
    assert shape["Content"]["Size"] == len(raw)
    assert shape["Content"]["MIME"] is None
    assert shape["MIME"] is None
    assert shape["Created"] == "2026-03-04T05:06:07.12Z"
    assert shape["Raw"] == {"From": "app@shop.example", "To": ["qa@burnbox.test"],
                            "Data": raw.decode(), "Helo": "app.example"}
    assert shape["From"] == {"Relays": None, "Mailbox": "app", "Domain": "shop.example",
                             "Params": ""}
    assert shape["To"] == [{"Relays": None, "Mailbox": "qa", "Domain": "burnbox.test",
                            "Params": ""}]
    assert list(shape["Content"]["Headers"]) == sorted(shape["Content"]["Headers"])


def test_the_headers_mailhog_adds_on_receipt_are_there():
    message = base_message()
    message.set_content("x")
    headers = shaped(message)["Content"]["Headers"]
    assert headers["Message-ID"] == [f"{EMAIL_ID}@mx.burnbox.test"]
    assert headers["Return-Path"] == ["<app@shop.example>"]
    [received] = headers["Received"]
    assert received.startswith("from app.example by mx.burnbox.test (Burnbox)\r\n"
                               f"          id {EMAIL_ID}@mx.burnbox.test; Wed, 04 Mar 2026")
    # A message with its own Message-ID keeps it, under its own spelling.
    message["Message-Id"] = "<abc@shop.example>"
    headers = shaped(message)["Content"]["Headers"]
    assert headers["Message-Id"] == ["<abc@shop.example>"]
    assert "Message-ID" not in headers


def test_a_non_ascii_subject_stays_an_encoded_word_the_client_decodes():
    message = base_message("Grüße aus Köln")
    message.set_content("Viele Grüße\n")
    shape = shaped(message)
    [subject] = shape["Content"]["Headers"]["Subject"]
    assert subject.startswith("=?utf-8?")
    charset, encoding, data = subject[2:-2].split("?")
    assert encoding in "bq"
    decoded = (base64.b64decode(data) if encoding == "b" else
               quopri.decodestring(data.replace("_", " ").encode(), header=True))
    assert decoded.decode(charset) == "Grüße aus Köln"
    # The body is still transfer-encoded, as MailHog leaves it.
    encoding = shape["Content"]["Headers"]["Content-Transfer-Encoding"][0]
    body = shape["Content"]["Body"].encode()
    plain = base64.b64decode(body) if encoding == "base64" else quopri.decodestring(body)
    assert plain.decode() == "Viele Grüße\r\n"


def test_folded_header_lines_are_joined_without_their_line_break():
    raw = (b"From: a@b.example\r\nX-Long: first\r\n  second\r\n\tthird\r\nSubject: s\r\n\r\nbody")
    headers = shaped(raw)["Content"]["Headers"]
    assert headers["X-Long"] == ["first  second\tthird"]


def test_a_repeated_header_keeps_its_last_value_as_mailhog_does():
    raw = b"X-Tag: one\r\nX-Tag: two\r\nReceived: older\r\nReceived: newer\r\n\r\nbody"
    headers = shaped(raw)["Content"]["Headers"]
    assert headers["X-Tag"] == ["two"]
    # MailHog's own Received line is appended to the one value it kept.
    assert headers["Received"][0] == "newer"
    assert len(headers["Received"]) == 2


def test_an_html_message_has_its_alternatives_as_top_level_parts():
    message = base_message()
    message.set_content("Plain text\n")
    message.add_alternative("<p>HTML <b>text</b></p>\n", subtype="html")
    shape = shaped(message)
    assert shape["Content"]["MIME"] is None
    parts = shape["MIME"]["Parts"]
    types = [part["Headers"].get("Content-Type", [None])[0] for part in parts]
    assert types[0] == 'text/plain; charset="utf-8"'
    assert types[1] == 'text/html; charset="utf-8"'
    # The closing delimiter's "--" is a part of its own, as MailHog's splitter leaves it.
    assert parts[-1] == {"Headers": {}, "Body": "--", "Size": 2, "MIME": None}
    html = parts[1]
    assert html["Headers"]["Content-Transfer-Encoding"] == ["7bit"]
    assert html["Body"] == "<p>HTML <b>text</b></p>"
    assert html["Size"] == len(html["Body"]) + len(
        "".join(f"{name}: {value[0]}\r\n" for name, value in html["Headers"].items())) + 2


def test_an_attachment_is_a_top_level_part_with_its_disposition_and_encoded_body():
    message = base_message()
    message.set_content("See the report\n")
    message.add_attachment(b"a,b\r\n1,2\r\n", maintype="text", subtype="csv",
                           filename="report.csv")
    message.add_attachment(PNG, maintype="image", subtype="png", filename="chart.png")
    shape = shaped(message)
    parts = shape["MIME"]["Parts"]
    [png] = [part for part in parts
             if part["Headers"].get("Content-Disposition") == ['attachment; filename="chart.png"']]
    assert png["Headers"]["Content-Transfer-Encoding"] == ["base64"]
    assert base64.b64decode(png["Body"]) == PNG
    index = parts.index(png)
    download = top_level_part(wire(message), index)
    assert download is not None
    assert download.body == PNG
    assert download.content_type == "image/png"


def test_nested_multiparts_carry_their_own_parts():
    message = base_message()
    message.set_content("Plain\n")
    message.add_alternative("<p><img src=\"cid:logo\"></p>\n", subtype="html")
    message.get_payload()[1].add_related(PNG, maintype="image", subtype="png", cid="<logo>")
    message.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf",
                           filename="invoice.pdf")
    shape = shaped(message)
    [alternative] = [part for part in shape["MIME"]["Parts"]
                     if part["Headers"].get("Content-Type", [""])[0].startswith(
                         "multipart/alternative")]
    nested = alternative["MIME"]["Parts"]
    [related] = [part for part in nested if part["MIME"] is not None]
    [image] = [part for part in related["MIME"]["Parts"]
               if part["Headers"].get("Content-ID") == ["<logo>"]]
    assert base64.b64decode(image["Body"]) == PNG


def test_a_multipart_without_a_boundary_has_no_parts():
    raw = b"Content-Type: multipart/mixed\r\n\r\n--x\r\nhello\r\n--x--\r\n"
    assert shaped(raw)["MIME"] == {"Parts": None}


def test_a_message_without_a_blank_line_is_all_body():
    assert Content.parse(b"no headers at all").shape() == {
        "Headers": {}, "Body": "no headers at all", "Size": 17, "MIME": None}


def test_bytes_that_are_not_utf8_become_replacement_characters_sizes_count_bytes():
    raw = b"Subject: caf\xe9\r\n\r\nna\xefve"
    shape = shaped(raw)
    assert shape["Content"]["Headers"]["Subject"] == ["caf\ufffd"]
    assert shape["Content"]["Body"] == "na\ufffdve"
    assert shape["Content"]["Size"] == len(raw)


def test_paths_read_source_routes_and_addresses_without_a_domain():
    assert path("@relay1,@relay2:user@example.com") == {
        "Relays": ["@relay1", "@relay2"], "Mailbox": "user", "Domain": "example.com",
        "Params": ""}
    assert path("postmaster") == {"Relays": None, "Mailbox": "postmaster", "Domain": "",
                                  "Params": ""}
    assert path("") == {"Relays": None, "Mailbox": "", "Domain": "", "Params": ""}


def test_no_recipients_is_null_as_go_writes_an_empty_slice():
    envelope = Envelope(helo="", sender="", recipients=[], received_at=WHEN)
    shape = message_shape(EMAIL_ID, envelope, b"Subject: x\r\n\r\ny", "h")
    assert shape["To"] is None
    assert shape["Raw"]["To"] == []


def test_times_are_written_as_go_writes_them():
    assert go_time(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"
    assert go_time(datetime(2026, 1, 2, 3, 4, 5, 1)) == "2026-01-02T03:04:05.000001Z"


def test_part_downloads_outside_the_top_level_parts_are_none():
    message = base_message()
    message.set_content("x")
    assert top_level_part(wire(message), 0) is None
    message.add_alternative("<p>x</p>", subtype="html")
    raw = wire(message)
    assert top_level_part(raw, -1) is None
    assert top_level_part(raw, 3) is None
    quoted = top_level_part(raw, 1)
    assert quoted is not None and quoted.body == b"<p>x</p>"
