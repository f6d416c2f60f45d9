"""The mail parser: a corpus of tricky hand-written messages with exact expected fields, byte-exact
attachments, HTML sanitising, executable dropping, the spam score, the bounds, and a property
test that no input makes it raise or exceed its bounds."""

import base64
import binascii
import time
from datetime import UTC, datetime
from email.message import Message

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from models.mail.ingest import parse as mail_parse
from models.mail.ingest.parse import (
    MAX_BODY_CHARS,
    MAX_FILENAME_CHARS,
    MAX_HEADER_BYTES,
    MAX_PARTS,
    MAX_SUBJECT_CHARS,
    SNIPPET_CHARS,
    UNPARSEABLE_SUBJECT,
    ParsedAttachment,
    ParsedMessage,
    parse_message,
)
from tests.properties import property_settings

# The property tests' settings: 200 examples each in a default run, a few seconds in all.
PROPERTY = property_settings(
    200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def eml(text: str) -> bytes:
    """A message written with \\n line ends, sent with CRLF; non-ASCII characters go as UTF-8."""
    return text.replace("\n", "\r\n").encode("utf-8")


def multipart(*parts: bytes, boundary: str = "BOUNDARY", subtype: str = "mixed",
              headers: str = "From: a@example.com\nSubject: parts\n") -> bytes:
    """A multipart message of already-encoded parts (each: header lines, blank line, body)."""
    head = eml(f'{headers}MIME-Version: 1.0\n'
               f'Content-Type: multipart/{subtype}; boundary="{boundary}"\n\n')
    sep = f"\r\n--{boundary}\r\n".encode()
    return head + b"preamble" + sep + sep.join(parts) + f"\r\n--{boundary}--\r\n".encode()


def text_part(body: str, content_type: str = "text/plain; charset=utf-8") -> bytes:
    return eml(f"Content-Type: {content_type}\n\n{body}")


def attachment_part(data: bytes, filename: str | None = "file.bin",
                    content_type: str = "application/octet-stream",
                    encoding: str = "base64", extra: str = "") -> bytes:
    """An attachment part with `data` in the given transfer encoding."""
    disposition = f'attachment; filename="{filename}"' if filename is not None else "attachment"
    head = eml(f"Content-Type: {content_type}\nContent-Disposition: {disposition}\n"
               f"Content-Transfer-Encoding: {encoding}\n{extra}\n")
    if encoding == "base64":
        body = base64.encodebytes(data).replace(b"\n", b"\r\n")
    elif encoding == "quoted-printable":
        # Binary-safe: line ends in the data are encoded too (=0D=0A).
        body = binascii.b2a_qp(data, istext=False).replace(b"\n", b"\r\n")
    else:
        body = data
    return head + body


# --- Headers and bodies ---------------------------------------------------------------------


def test_a_plain_message_yields_every_field_exactly():
    parsed = parse_message(eml(
        "Return-Path: <alice@example.com>\n"
        "From: Alice Example <alice@example.com>\n"
        "To: bob@example.org, \"Carol, C.\" <carol@example.net>\n"
        "Cc: dave@example.com\n"
        "Subject: Lunch on Friday?\n"
        "Date: Fri, 20 Nov 2026 09:30:00 +0100\n"
        "Message-ID: <lunch.1@example.com>\n"
        "\n"
        "Hi Bob,\n"
        "\n"
        "shall we   meet at noon?\n"
    ))
    assert parsed == ParsedMessage(
        message_id="<lunch.1@example.com>",
        from_address="alice@example.com",
        from_name="Alice Example",
        to_addresses=("bob@example.org", "carol@example.net"),
        cc_addresses=("dave@example.com",),
        subject="Lunch on Friday?",
        date=datetime(2026, 11, 20, 8, 30, tzinfo=UTC),
        body_text="Hi Bob,\r\n\r\nshall we   meet at noon?\r\n",
        body_html="",
        snippet="Hi Bob, shall we meet at noon?",
        headers=(
            ("Return-Path", "<alice@example.com>"),
            ("From", "Alice Example <alice@example.com>"),
            ("To", 'bob@example.org, "Carol, C." <carol@example.net>'),
            ("Cc", "dave@example.com"),
            ("Subject", "Lunch on Friday?"),
            ("Date", "Fri, 20 Nov 2026 09:30:00 +0100"),
            ("Message-ID", "<lunch.1@example.com>"),
        ),
        spam_score=0.0,
    )


def test_encoded_words_in_several_charsets_and_folded_lines_are_decoded():
    parsed = parse_message(eml(
        "From: =?iso-8859-1?q?Andr=E9?= =?utf-8?b?TcO8bGxlcg==?= <andre@example.de>\n"
        "To: =?utf-8?q?Jos=C3=A9=2C_Mar=C3=ADa?= <jm@example.es>\n"
        "Subject: =?utf-8?b?R3LDvMOfZQ==?=\n"
        "  =?utf-8?q?_aus_K=C3=B6ln?= and\n"
        "\tmore\n"
        "\n"
        "x"
    ))
    assert parsed.from_name == "AndréMüller"
    assert parsed.to_addresses == ("jm@example.es",)
    assert parsed.subject == "Grüße aus Köln and more"  # the tab is a control: a space


def test_raw_utf8_and_latin1_bytes_in_headers_are_read_as_text():
    parsed = parse_message(
        b"From: J\xc3\xbcrgen <j@example.de>\r\n"
        b"Subject: Gr\xc3\xbc\xc3\x9fe\r\n"
        b"X-Latin: caf\xe9\r\n"
        b"\r\nbody"
    )
    assert (parsed.from_name, parsed.subject) == ("Jürgen", "Grüße")
    assert ("X-Latin", "café") in parsed.headers


def test_an_unknown_charset_falls_back_to_utf8_then_windows_1252():
    parsed = parse_message(multipart(
        text_part("caf\u00e9 \u2603", "text/plain; charset=x-no-such-charset"),
        b"Content-Type: text/plain; charset=utf-8\r\n\r\nna\xefve \x93quoted\x94",
    ))
    assert parsed.body_text == "café ☃\nnaïve “quoted”"


def test_a_utf8_part_with_a_few_invalid_bytes_keeps_its_valid_text():
    # A list message declared UTF-8 whose footer was pasted in Latin-1 (one byte, \xf1): the
    # whole part used to be read as Windows-1252, so every accent of the valid text was
    # garbled ("Atención" as "AtenciÃ³n"). Only the bad byte may go.
    parsed = parse_message(
        b"From: Lista de socios <socios@club.example>\r\nTo: ana@example.es\r\n"
        b"Subject: =?utf-8?q?Atenci=C3=B3n=3A_asamblea?=\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        b"Atenci\xc3\xb3n: la asamblea ser\xc3\xa1 el mi\xc3\xa9rcoles.\r\n--\r\n"
        b"Club N\xe1utico Espa\xf1a\r\n")
    assert parsed.body_text == ("Atención: la asamblea será el miércoles.\r\n--\r\n"
                                "Club N\ufffdutico Espa\ufffda\r\n")


@pytest.mark.parametrize(("written", "address", "name"), [
    # Both from other projects' test messages: mailboxes without angle brackets or commas.
    ("tim@powerupdev.com concierge@powerupdev.com", "tim@powerupdev.com", ""),
    ("Big Bug bb@bug.com", "bb@bug.com", "Big Bug"),
])
def test_a_from_without_angle_brackets_keeps_its_first_whole_address(written, address, name):
    parsed = parse_message(eml(f"From: {written}\nTo: qa@example.com\nSubject: Order shipped\n"
                               "Date: Tue, 24 Nov 2026 10:00:00 +0000\n\nYour order shipped."))
    assert (parsed.from_address, parsed.from_name) == (address, name)


def test_a_kernel_log_in_a_report_yields_no_code():
    # A nightly report quoting the boot log: "kernel code" announced "21976k" as a code.
    parsed = parse_message(eml(
        "From: logwatch@host.example\nTo: root@host.example\nSubject: Logwatch for host\n\n"
        "--------------------- Kernel Begin ------------------------\n"
        "Memory: 2055112k/2097152k available (4126k kernel code, 21976k reserved, 1906k data, "
        "412k init)\n---------------------- Kernel End -------------------------\n"))
    assert parsed.codes == ()


def test_a_charset_name_that_is_no_text_encoding_is_ignored():
    parsed = parse_message(b"Content-Type: text/plain; charset=punycode\r\n\r\nplain words")
    assert parsed.body_text == "plain words"


@pytest.mark.parametrize("charset", [b"\x00", b"\x8d", b'"utf\x00-8"'])
def test_a_charset_name_with_a_nul_or_a_raw_byte_is_ignored_and_the_8bit_body_kept(charset):
    # email's get_payload() decodes 8-bit content with the charset parameter and failed on
    # such a name with ValueError or UnicodeEncodeError: the whole message went unparsed.
    parsed = parse_message(b"Content-Type: text/plain; charset=" + charset
                           + b"\r\n\r\nna\xc3\xafve words")
    assert parsed.parse_ok
    assert parsed.body_text == "na\u00efve words"


def test_an_alternative_message_keeps_both_bodies_and_the_snippet_comes_from_the_text():
    parsed = parse_message(multipart(
        text_part("The plain version."),
        text_part("<p>The <b>HTML</b> version.</p>", "text/html; charset=utf-8"),
        subtype="alternative",
    ))
    assert parsed.body_text == "The plain version."
    assert parsed.body_html == "<p>The <b>HTML</b> version.</p>"
    assert parsed.snippet == "The plain version."


def test_an_html_only_message_gets_its_snippet_from_the_html_text():
    parsed = parse_message(eml(
        "Content-Type: text/html; charset=utf-8\n\n"
        "<html><head><title>Newsletter</title><style>p {color: red}</style></head>"
        "<body><h1>Big&nbsp;news</h1><p>First&amp;second</p><ul><li>one</li><li>two</li></ul>"
        "<script>var hidden = 1;</script></body></html>"
    ))
    assert parsed.body_text == ""
    assert parsed.snippet == "Big news First&second one two"


def test_the_snippet_is_whitespace_collapsed_and_at_most_200_characters():
    parsed = parse_message(eml("Subject: long\n\n" + "word \n\t " * 100))
    assert len(parsed.snippet) == 199  # 200 characters cut, the trailing space stripped
    assert parsed.snippet == ("word " * 40).strip()


def test_the_snippet_skips_any_amount_of_leading_white_space():
    parsed = parse_message(eml("Subject: late\n\n" + " \n\u3000" * 100_000 + "word " * 100))
    assert parsed.snippet == ("word " * 40).strip()
    assert parse_message(eml("Subject: blank\n\n" + " \n" * 10_000)).snippet == ""


def test_header_text_without_encoded_words_is_kept_as_written_with_controls_as_spaces():
    parsed = parse_message(eml("Subject:  Re:\tplans  for\x7f tomorrow ?= \nX-Other: =?\n\nx"))
    assert parsed.subject == "Re: plans  for  tomorrow ?="
    assert parsed.headers[-1] == ("X-Other", "=?")


def test_lists_of_bare_addresses_are_split_and_trimmed():
    parsed = parse_message(eml("From: a.b+c@x.example\nTo: d@y.example ,\te@z.example\n"
                               "Cc: f@y.example,\n g@y.example\n\nx"))
    assert (parsed.from_address, parsed.from_name) == ("a.b+c@x.example", "")
    assert parsed.to_addresses == ("d@y.example", "e@z.example")
    assert parsed.cc_addresses == ("f@y.example", "g@y.example")


@pytest.mark.parametrize(("written", "name", "address"), [
    ('"Smith, John" <j@x.example>', "Smith, John", "j@x.example"),
    ('"  spaced  (not a comment) " <j@x.example>', "spaced  (not a comment)", "j@x.example"),
    ("Dave \t  D. <d@x.example>", "Dave D.", "d@x.example"),
    ('"" <e@x.example>', "", "e@x.example"),
    ("<f@x.example>", "", "f@x.example"),
    ("=?utf-8?q?J=C3=BCrgen?= <g@x.example>", "J\u00fcrgen", "g@x.example"),
    ('"A" B <h@x.example>', "A B", "h@x.example"),
    ("Ann (work) <i@x.example>", "Ann (work)", "i@x.example"),
])
def test_display_names_are_read_in_every_form(written, name, address):
    parsed = parse_message(eml(f"From: {written}\n\nx"))
    assert (parsed.from_name, parsed.from_address) == (name, address)


def test_dates_are_utc_and_unreadable_dates_are_none():
    def date_of(value: str) -> datetime | None:
        return parse_message(eml(f"Date: {value}\n\nx")).date

    assert date_of("Mon, 2 Nov 2026 23:30:00 -0500") == datetime(2026, 11, 3, 4, 30, tzinfo=UTC)
    assert date_of("2 Nov 2026 10:00:00 -0000") == datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    assert date_of("yesterday at noon") is None
    assert date_of("Mon, 1 Jan 99999999999 00:00:00 +0000") is None


def test_group_syntax_and_repeated_address_headers_are_read():
    parsed = parse_message(eml(
        "To: undisclosed-recipients:;\n"
        "To: team: ann@example.com, ben@example.com;\n"
        "Cc: <cat@example.com>, Dan <dan@example.com>\n\nx"
    ))
    assert parsed.to_addresses == ("ann@example.com", "ben@example.com")
    assert parsed.cc_addresses == ("cat@example.com", "dan@example.com")


def test_a_message_without_any_header_is_all_body():
    parsed = parse_message(b"just some text\r\nwithout headers")
    assert parsed.parse_ok
    assert parsed.headers == ()
    assert parsed.body_text == "just some text\r\nwithout headers"
    assert (parsed.subject, parsed.from_address, parsed.message_id) == ("", "", "")


def test_empty_input_is_an_empty_message():
    parsed = parse_message(b"")
    assert parsed.parse_ok
    assert (parsed.subject, parsed.body_text, parsed.headers, parsed.attachments) == (
        "", "", (), ())


def test_binary_garbage_becomes_readable_text_without_nul():
    parsed = parse_message(bytes(range(256)) * 4)
    assert parsed.parse_ok
    assert "\x00" not in parsed.body_text
    parsed.body_text.encode("utf-8")


def test_nul_characters_never_reach_the_fields():
    parsed = parse_message(b"Subject: a\x00b\r\nX-N: c\x00d\r\n\r\ne\x00f")
    assert (parsed.subject, parsed.body_text) == ("ab", "ef")
    assert ("X-N", "cd") in parsed.headers


def test_a_multipart_whose_boundary_never_appears_is_read_as_text():
    parsed = parse_message(eml(
        "Subject: broken\nContent-Type: multipart/mixed; boundary=nowhere\n\n"
        "--elsewhere\nContent-Type: text/plain\n\nstill readable\n"
    ))
    assert parsed.parse_ok
    assert "still readable" in parsed.body_text
    assert parsed.attachments == ()


def test_a_multipart_without_its_closing_boundary_keeps_every_part():
    raw = multipart(text_part("first"), attachment_part(b"%PDF", "a.pdf", "application/pdf"))
    parsed = parse_message(raw[:raw.rindex(b"--BOUNDARY--")])
    assert parsed.body_text == "first"
    assert [(a.filename, a.content) for a in parsed.attachments] == [("a.pdf", b"%PDF")]


def test_a_multipart_without_a_boundary_parameter_is_read_as_text():
    parsed = parse_message(eml("Content-Type: multipart/mixed\n\nno boundary here"))
    assert parsed.body_text == "no boundary here"


# --- Attachments ----------------------------------------------------------------------------

BINARY = bytes(range(256)) * 3 + b"\r\n\n\r\x00end"


@pytest.mark.parametrize("encoding", ["base64", "quoted-printable"])
def test_attachments_come_out_byte_for_byte(encoding):
    parsed = parse_message(multipart(text_part("see attached"),
                                     attachment_part(BINARY, "data.bin", encoding=encoding)))
    assert parsed.attachments == (ParsedAttachment(
        filename="data.bin", content_type="application/octet-stream", content=BINARY),)
    assert parsed.attachments[0].size == len(BINARY)


def test_an_8bit_attachment_keeps_its_bytes_and_line_ends():
    data = "caf\u00e9\r\nna\u00efve\nline\rend".encode("latin-1") + b"\xff\xfe"
    parsed = parse_message(multipart(attachment_part(data, "notes.txt", "text/plain", "8bit")))
    assert parsed.attachments[0].content == data
    assert parsed.body_text == ""


def test_a_uuencoded_attachment_is_decoded():
    uu = eml("begin 644 hi.txt\n%:&5L;&\\`\n`\nend\n")
    parsed = parse_message(multipart(attachment_part(uu, "hi.txt", "text/plain", "x-uuencode")))
    assert parsed.attachments[0].content == b"hello"


@PROPERTY
@given(st.lists(st.sampled_from(["text/plain", "attachment", "inline", "; ", "NaMe", "=",
                                 "file", "*0*", "*1", '"', "a.txt", "x", "É", "=?utf-8?q?n?="]),
                max_size=12),
       st.sampled_from(["Content-Type", "Content-Disposition"]))
def test_a_part_said_to_name_no_file_has_no_filename(pieces, field):
    """The shortcut that skips the parameter parse only says "no name" when the parse
    would find none."""
    part = Message()
    part[field] = "".join(pieces)
    assert mail_parse._may_name_a_file(part) or part.get_filename() is None


def test_filenames_come_from_rfc2231_rfc2047_raw_utf8_or_the_name_parameter():
    parsed = parse_message(multipart(
        eml("Content-Type: application/pdf\n"
            "Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9%20final.pdf\n"
            "\n%PDF"),
        eml('Content-Type: application/pdf\n'
            'Content-Disposition: attachment; filename="=?utf-8?b?0L7RgtGH0ZHRgi5wZGY=?="\n'
            '\n%PDF'),
        b'Content-Type: image/png\r\n'
        b'Content-Disposition: attachment; filename="\xe5\x9b\xbe.png"\r\n\r\nPNG',
        eml('Content-Type: application/zip; name="archive.zip"\n\nPK'),
    ))
    assert [a.filename for a in parsed.attachments] == [
        "résumé final.pdf", "отчёт.pdf", "图.png", "archive.zip"]


def test_a_nameless_attachment_gets_a_fallback_name_from_its_type():
    parsed = parse_message(multipart(
        attachment_part(b"%PDF", None, "application/pdf"),
        attachment_part(b"\x00", None, "application/octet-stream"),
        attachment_part(b"BEGIN:VCALENDAR", None, "text/calendar"),
    ))
    assert [a.filename for a in parsed.attachments] == [
        "attachment-1.pdf", "attachment-2", "attachment-3"]


@pytest.mark.parametrize(("written", "kept"), [
    ("../../etc/passwd", "passwd"),
    ("C:\\Users\\me\\report.txt", "report.txt"),
    ("/abs/path/x.txt", "x.txt"),
    ("invoice\u202egpj.pdf", "invoicegpj.pdf"),  # right-to-left override removed
    ("zero\u200bwidth.txt", "zerowidth.txt"),
    ('we<i>rd:"|?*.txt', "we_i_rd_____.txt"),
    ("  .hidden  ", "hidden"),
    ("trailing dots...", "trailing dots"),
    ("many    spaces.txt", "many spaces.txt"),
    ("..", "attachment-1.pdf"),
    ("", "attachment-1.pdf"),
])
def test_filenames_are_sanitised(written, kept):
    parsed = parse_message(multipart(eml(
        f'Content-Type: application/pdf\nContent-Disposition: attachment; filename="{written}"\n'
        f"\n%PDF")))
    assert [a.filename for a in parsed.attachments] == [kept]


def test_control_characters_in_a_filename_are_removed():
    parsed = parse_message(multipart(
        b'Content-Type: text/plain\r\nContent-Disposition: attachment; filename="a\x01b\x1b.txt"'
        b"\r\n\r\nx"))
    assert parsed.attachments[0].filename == "ab.txt"


def test_a_long_filename_is_shortened_keeping_its_extension():
    parsed = parse_message(multipart(attachment_part(b"x", "n" * 500 + ".tar.gz")))
    assert parsed.attachments[0].filename == "n" * (MAX_FILENAME_CHARS - 3) + ".gz"


def test_inline_parts_with_a_content_id_are_kept_and_marked_inline():
    parsed = parse_message(multipart(
        text_part('<p>Logo: <img src="cid:logo@example.com"></p>', "text/html"),
        eml("Content-Type: image/png\nContent-ID: <logo@example.com>\n"
            "Content-Disposition: inline\nContent-Transfer-Encoding: base64\n\niVBORw0K"),
        eml("Content-Type: image/gif; name=spacer.gif\nContent-ID: <spacer>\n"
            "Content-Disposition: attachment\n\nGIF89a"),
        subtype="related",
    ))
    assert parsed.body_html == '<p>Logo: <img src="cid:logo@example.com"></p>'
    assert [(a.filename, a.content_type, a.content_id, a.inline) for a in parsed.attachments] == [
        ("attachment-1.png", "image/png", "logo@example.com", True),
        ("spacer.gif", "image/gif", "spacer", False),
    ]
    assert parsed.attachments[0].content == base64.b64decode("iVBORw0K")


def test_a_forwarded_message_becomes_an_eml_attachment():
    inner = eml("From: c@example.com\nSubject: the original\n\noriginal body\n")
    parsed = parse_message(multipart(text_part("fyi"), eml("Content-Type: message/rfc822\n\n")
                                     + inner))
    assert parsed.body_text == "fyi"
    [forwarded] = parsed.attachments
    assert (forwarded.filename, forwarded.content_type) == ("attachment-1.eml", "message/rfc822")
    assert parse_message(forwarded.content).subject == "the original"
    assert parse_message(forwarded.content).body_text.strip() == "original body"


def test_a_text_part_with_a_filename_is_an_attachment_not_a_body():
    parsed = parse_message(multipart(
        text_part("the body"),
        eml('Content-Type: text/plain\nContent-Disposition: inline; filename="notes.txt"\n\n'
            "notes"),
        eml("Content-Type: text/html\nContent-Disposition: attachment\n\n<b>page</b>"),
    ))
    assert parsed.body_text == "the body"
    assert parsed.body_html == ""
    assert [(a.filename, a.content) for a in parsed.attachments] == [
        ("notes.txt", b"notes"), ("attachment-2.html", b"<b>page</b>")]


def test_an_unsafe_content_type_is_replaced_by_octet_stream():
    parsed = parse_message(multipart(eml(
        'Content-Type: image/png"; x=<script>\nContent-Disposition: attachment; filename=a.png\n'
        "\nPNG")))
    assert parsed.attachments[0].content_type == "application/octet-stream"


# --- Executables ----------------------------------------------------------------------------


@pytest.mark.parametrize("filename", [
    "setup.exe", "run.bat", "run.cmd", "old.com", "install.msi", "screen.scr", "link.pif",
    "macro.vbs", "app.js", "host.wsh", "job.wsf", "script.ps1", "page.hta", "panel.cpl",
    "keys.reg", "autorun.inf", "SETUP.EXE", "Report.Ps1", "invoice.pdf.exe", "photo.jpg.scr",
    "trailing.exe.", "trailing.exe ", "evil.exe\u202e", "a/b/evil.bat",
])
def test_executable_attachments_are_dropped_and_named(filename):
    parsed = parse_message(multipart(text_part("hello"), attachment_part(b"MZ", filename),
                                     attachment_part(b"%PDF", "keep.pdf", "application/pdf")))
    assert [a.filename for a in parsed.attachments] == ["keep.pdf"]
    assert len(parsed.dropped_attachments) == 1
    assert mail_parse.is_executable(parsed.dropped_attachments[0])


@pytest.mark.parametrize("content_type", [
    "application/x-msdownload", "application/x-msdos-program", "application/javascript",
    "application/hta",
])
def test_a_nameless_executable_is_dropped_by_its_content_type(content_type):
    parsed = parse_message(multipart(attachment_part(b"MZ", None, content_type)))
    assert parsed.attachments == ()
    assert len(parsed.dropped_attachments) == 1


@pytest.mark.parametrize("filename", [
    "exe.pdf", "setup.exe.txt", "notes.js.md", "executive summary.docx", "com.example.zip",
])
def test_names_that_only_contain_an_executable_extension_are_kept(filename):
    parsed = parse_message(multipart(attachment_part(b"data", filename)))
    assert [a.filename for a in parsed.attachments] == [filename]
    assert parsed.dropped_attachments == ()


# --- HTML sanitising ------------------------------------------------------------------------


def test_the_stored_html_body_is_the_sanitised_one():
    parsed = parse_message(eml(
        'Content-Type: text/html\n\n<p onclick="steal()">Hello <script>x()</script>there</p>'))
    assert parsed.body_html == "<p>Hello there</p>"
    assert parsed.snippet == "Hello there"


# --- Spam score -----------------------------------------------------------------------------

CLEAN_HEADERS = ("From: Alice <alice@example.com>\nTo: bob@example.org\n"
                 "Date: Fri, 20 Nov 2026 09:30:00 +0000\nMessage-ID: <1@example.com>\n")


def score(headers: str = CLEAN_HEADERS, body: str = "Hello Bob.", subject: str = "Hello",
          html: bool = False) -> float:
    content_type = "text/html" if html else "text/plain"
    return parse_message(eml(f"{headers}Subject: {subject}\n"
                             f"Content-Type: {content_type}\n\n{body}")).spam_score


def test_an_ordinary_message_scores_zero():
    assert score() == 0.0


@pytest.mark.parametrize(("change", "expected"), [
    ({"headers": CLEAN_HEADERS.replace("Message-ID: <1@example.com>\n", "")}, 1.0),
    ({"headers": CLEAN_HEADERS.replace("Date: Fri, 20 Nov 2026 09:30:00 +0000\n", "")}, 1.0),
    ({"headers": CLEAN_HEADERS.replace("Date: Fri, 20 Nov 2026", "Date: someday")}, 1.0),
    ({"headers": CLEAN_HEADERS.replace("From: Alice <alice@example.com>\n", "")}, 1.0),
    ({"headers": CLEAN_HEADERS + "Reply-To: <collect@elsewhere.example>\n"}, 1.0),
    ({"headers": CLEAN_HEADERS + "Reply-To: <alice@mail.example.com>\n"}, 0.0),
    ({"headers": CLEAN_HEADERS + "Return-Path: <bounce@mailer.example>\n"}, 0.5),
    ({"headers": CLEAN_HEADERS + "X-Spam-Flag: YES\n"}, 5.0),
    ({"headers": CLEAN_HEADERS + "X-Spam-Status: Yes, score=9.1\n"}, 5.0),
    ({"headers": CLEAN_HEADERS + "X-Spam-Status: No, score=0.1\n"}, 0.0),
    ({"headers": CLEAN_HEADERS + "X-Spam-Flag: YES\nX-Spam-Status: Yes\n"}, 5.0),
    ({"subject": "URGENT OFFER INSIDE"}, 1.0),
    ({"subject": "OK"}, 0.0),
    ({"subject": "Hello!!!"}, 1.0),
    ({"subject": "Hello!!"}, 0.0),
    ({"html": True, "body": "<p>Hello Bob.</p>"}, 0.5),
    ({"headers": CLEAN_HEADERS.replace(
        "To: bob@example.org", "To: " + ", ".join(f"u{i}@example.org" for i in range(21)))},
     1.0),
    ({"body": "You are a WINNER of our lottery, click here"}, 1.5),
    ({"body": "viagra casino lottery bitcoin inheritance wire transfer"}, 2.0),
    ({"body": "swinner and lotteryx and a_casino"}, 0.0),  # phrases inside words do not count
    ({"body": "a100% free money"}, 0.5),  # "free money" is found past a "100% free" in a word
])
def test_each_spam_signal_adds_its_documented_weight(change, expected):
    assert score(**change) == expected


def test_the_spam_score_is_capped_at_ten():
    assert score(headers="X-Spam-Flag: YES\nReply-To: a@x.example\n",
                 subject="FREE MONEY!!! ACT NOW", html=True,
                 body="viagra casino lottery bitcoin inheritance") == 10.0


# --- Bounds ---------------------------------------------------------------------------------


def test_huge_header_fields_are_cut_and_parsed_quickly():
    raw = (b"To: " + b"," * 1_000_000 + b"\r\nFrom: " + b'"a",' * 200_000 + b"\r\n"
           b"Content-Type: text/plain; " + b"a=b;" * 200_000 + b"\r\n"
           b"Subject: still here\r\n\r\nbody")
    started = time.monotonic()
    parsed = parse_message(raw)
    assert time.monotonic() - started < 5  # the stdlib's own parsers need minutes here
    assert (parsed.subject, parsed.body_text, parsed.truncated) == ("still here", "body", True)
    assert sum(len(name) + len(value) for name, value in parsed.headers) <= MAX_HEADER_BYTES


@pytest.mark.parametrize("text", ["a@b.example," + " " * 60_000 + "<", "a " * 30_000 + "x",
                                  '"x"' + " " * 60_000, "aaaa " * 12_000 + "<", "a <" * 20_000])
def test_address_lists_that_almost_look_simple_are_read_in_linear_time(text):
    # Unbounded text: in a message each field is cut to MAX_FIELD_CHARS, which would hide a
    # quadratic pattern (one took 4 s on the first of these, 0.06 s on an 8 KiB field).
    started = time.monotonic()
    assert mail_parse._simple_addresses(text) is None
    assert time.monotonic() - started < 1


def test_nested_comments_in_an_address_do_not_break_the_parse():
    parsed = parse_message(b"From: " + b"(" * 50_000 + b"\r\nSubject: s\r\n\r\nbody")
    assert parsed.parse_ok
    assert (parsed.from_address, parsed.subject) == ("", "s")


def test_the_header_budget_is_configurable():
    raw = eml("Subject: first\n" + "".join(f"X-Filler-{i}: {'v' * 50}\n" for i in range(50))
              + "\nbody")
    parsed = parse_message(raw, max_header_bytes=500)
    assert parsed.subject == "first"
    assert sum(len(name) + len(value) for name, value in parsed.headers) <= 500
    assert parsed.truncated


def test_a_part_with_too_many_header_fields_ends_the_parse():
    parsed = parse_message(eml("Subject: s\n" + "X-A: b\n" * 5_000 + "\nbody"))
    assert parsed.parse_ok and parsed.truncated
    assert len(parsed.headers) == mail_parse.MAX_FIELDS
    assert parsed.subject == "s"


def test_deep_nesting_is_cut_at_the_depth_bound():
    raw = eml("Subject: nested\nMIME-Version: 1.0\n")
    for level in range(5_000):
        raw += eml(f'Content-Type: multipart/mixed; boundary="b{level}"\n\n--b{level}\n')
    started = time.monotonic()
    parsed = parse_message(raw + eml("Content-Type: text/plain\n\ndeepest\n"))
    assert time.monotonic() - started < 5
    assert (parsed.parse_ok, parsed.truncated, parsed.subject) == (True, True, "nested")
    assert "deepest" not in parsed.body_text


def test_text_at_an_allowed_depth_is_found():
    raw = eml("Subject: nested\nMIME-Version: 1.0\n")
    for level in range(mail_parse.MAX_DEPTH):
        raw += eml(f'Content-Type: multipart/mixed; boundary="b{level}"\n\n--b{level}\n')
    parsed = parse_message(raw + eml("Content-Type: text/plain\n\ndeepest\n"))
    assert parsed.body_text.strip() == "deepest"
    assert not parsed.truncated


def test_only_the_first_parts_of_a_message_with_very_many_are_parsed():
    parts = [attachment_part(str(n).encode(), f"{n}.txt", "text/plain", "7bit")
             for n in range(3 * MAX_PARTS)]
    parsed = parse_message(multipart(*parts))
    assert parsed.truncated
    assert len(parsed.attachments) == MAX_PARTS
    assert parsed.attachments[-1].content == str(MAX_PARTS - 1).encode()


def test_a_message_of_millions_of_lines_is_parsed_up_to_the_line_bound():
    started = time.monotonic()
    parsed = parse_message(b"Subject: lines\r\n\r\n" + b"\r\n" * 5_000_000)
    assert time.monotonic() - started < 10  # the whole message takes the parser ~20 s
    assert parsed.truncated and parsed.subject == "lines"


def test_long_bodies_are_cut_to_the_body_bound():
    parsed = parse_message(b"Subject: big\r\n\r\n" + b"x" * (MAX_BODY_CHARS + 10))
    assert len(parsed.body_text) == MAX_BODY_CHARS
    assert parsed.truncated


def test_a_long_subject_is_cut():
    parsed = parse_message(eml("Subject: " + "s" * 5_000 + "\n\nx"))
    assert parsed.subject == "s" * MAX_SUBJECT_CHARS


@pytest.mark.parametrize("argument", ["Subject: a str\r\n\r\nx", 12345, None])
def test_an_argument_that_is_not_bytes_gives_the_unparseable_result(argument):
    assert parse_message(argument) == ParsedMessage(subject=UNPARSEABLE_SUBJECT, parse_ok=False)


def test_bytearray_and_memoryview_are_read_like_bytes():
    raw = eml("Subject: same\n\nx")
    assert parse_message(bytearray(raw)) == parse_message(memoryview(raw)) == parse_message(raw)


# --- Property: nothing makes it raise or break its bounds -----------------------------------

CORPUS = [
    eml(CLEAN_HEADERS + "Subject: hi\n\nbody"),
    multipart(text_part("t"), text_part("<b>h</b>", "text/html"), subtype="alternative"),
    multipart(text_part("t"), attachment_part(BINARY, "a.bin"),
              attachment_part(b"MZ", "x.exe"), attachment_part(b"q=", "q.txt", "text/plain",
                                                               "quoted-printable")),
    multipart(text_part("fyi"), eml("Content-Type: message/rfc822\n\nSubject: in\n\nx")),
    eml("Subject: =?utf-8?b?w6k=?=\nFrom: =?x-bad?q?a?= <a@b>\nDate: now\n\nbody"),
]

HEADER_NAMES = ["From", "To", "Cc", "Reply-To", "Return-Path", "Subject", "Date", "Message-ID",
                "Content-Type", "Content-Disposition", "Content-Transfer-Encoding", "Content-ID",
                "X-Spam-Flag", "X-Spam-Status", "MIME-Version", "X-Other"]
CHARSETS = ["utf-8", "iso-8859-1", "utf-16", "utf-7", "x-unknown", "punycode", "idna", "zlib",
            "", "undefined", "shift_jis"]
ATOMS = [b"=?", b"?=", b"?q?", b"?b?", b"\xff", b"\x00", b"(", b")", b"<", b">", b"@", b",",
         b";", b'"', b"\\", b"\r\n", b"\r\n ", b"\n", b"\r", b"multipart/mixed", b"boundary=",
         b"filename*0*=", b"''", b"%", b"--", b"text/html", b"<script>", b"base64", b"\t",
         "é".encode(), "☃".encode(), "\U0001f600".encode(), "\u202e".encode(), b".exe"]


encoded_words = st.tuples(
    st.sampled_from(CHARSETS), st.sampled_from(["q", "b", "Q", "x"]), st.binary(max_size=12),
).map(lambda t: f"=?{t[0]}?{t[1]}?".encode() + t[2] + b"?=")
header_values = st.lists(st.one_of(st.sampled_from(ATOMS), st.binary(max_size=16), encoded_words),
                         max_size=8).map(b"".join)
header_blocks = st.lists(
    st.tuples(st.sampled_from(HEADER_NAMES), header_values).map(
        lambda t: t[0].encode() + b": " + t[1] + b"\r\n"),
    max_size=5,
).map(b"".join)
leaf_parts = st.tuples(header_blocks, st.binary(max_size=200)).map(
    lambda t: t[0] + b"\r\n" + t[1])


def multipart_of(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Multiparts of `children`, with boundaries that may be odd, repeated or never closed."""
    def build(t: tuple[bytes, bytes, list[bytes], bytes]) -> bytes:
        headers, boundary, parts, closing = t
        return (headers + b'Content-Type: multipart/mixed; boundary="' + boundary + b'"\r\n\r\n'
                + b"".join(b"--" + boundary + b"\r\n" + part + b"\r\n" for part in parts)
                + closing.replace(b"B", boundary))
    return st.tuples(header_blocks, st.sampled_from([b"b", b"B1", b"", b"x y", b"--"]),
                     st.lists(children, max_size=3),
                     st.sampled_from([b"--B--\r\n", b"", b"--other--"])).map(build)


mime_trees = st.recursive(leaf_parts, multipart_of, max_leaves=8)


@st.composite
def mutated_corpus(draw) -> bytes:
    raw = bytearray(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 8))):
        position = draw(st.integers(0, len(raw)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate", "truncate"]))
        if action == "insert":
            raw[position:position] = draw(st.one_of(st.sampled_from(ATOMS), st.binary(max_size=30)))
        elif action == "delete":
            del raw[position:position + draw(st.integers(1, 40))]
        elif action == "duplicate":
            raw[position:position] = raw[position:position + draw(st.integers(1, 200))]
        else:
            del raw[position:]
    return bytes(raw)


def assert_within_bounds(parsed: ParsedMessage, max_header_bytes: int = MAX_HEADER_BYTES) -> None:
    assert parsed.parse_ok, "the catch-all fired: a parser bug, see the log"
    assert isinstance(parsed.subject, str) and len(parsed.subject) <= MAX_SUBJECT_CHARS
    strings = [parsed.message_id, parsed.from_address, parsed.from_name, parsed.subject,
               parsed.body_text, parsed.body_html, parsed.snippet, *parsed.to_addresses,
               *parsed.cc_addresses, *parsed.dropped_attachments,
               *(text for pair in parsed.headers for text in pair)]
    for attachment in parsed.attachments:
        strings += [attachment.filename, attachment.content_type, attachment.content_id or ""]
        assert 0 < len(attachment.filename) <= MAX_FILENAME_CHARS
        assert not set("/\\\x00") & set(attachment.filename)
        assert not mail_parse.is_executable(attachment.filename)
        assert mail_parse._CONTENT_TYPE.fullmatch(attachment.content_type)
        assert attachment.size == len(attachment.content)
    for text in strings:
        assert isinstance(text, str) and "\x00" not in text
        text.encode("utf-8")  # no lone surrogates: storable in PostgreSQL and JSON
    assert sum(len(name) + len(value) for name, value in parsed.headers) <= max_header_bytes
    assert len(parsed.snippet) <= SNIPPET_CHARS
    assert len(parsed.body_text) <= MAX_BODY_CHARS
    assert "<script" not in parsed.body_html.lower()
    assert 0.0 <= parsed.spam_score <= 10.0
    assert parsed.date is None or parsed.date.tzinfo is not None


@PROPERTY
@given(st.binary(max_size=4096))
def test_random_bytes_never_make_the_parser_raise(raw):
    assert_within_bounds(parse_message(raw))


@PROPERTY
@given(mime_trees)
def test_random_mime_structures_never_make_the_parser_raise(raw):
    assert_within_bounds(parse_message(raw))


@PROPERTY
@given(mutated_corpus(), st.sampled_from([MAX_HEADER_BYTES, 64, 1]))
def test_mutated_messages_never_make_the_parser_raise(raw, max_header_bytes):
    assert_within_bounds(parse_message(raw, max_header_bytes=max_header_bytes), max_header_bytes)


def test_a_parts_parameters_are_read_again_once_its_field_changes():
    # Each part remembers its fields' parsed parameters (two reads per body part), keyed by the
    # field's value: a changed field must not answer with the old parameters.
    raw = (b"Content-Type: text/plain; charset=iso-8859-1; name=a.txt\r\n"
           b"Content-Disposition: inline; filename*=utf-8''%C3%A9t%C3%A9.txt\r\n\r\nbody\r\n")
    part, _ = mail_parse._read_structure(raw, MAX_HEADER_BYTES)
    assert (part.get_content_charset(), part.get_filename()) == ("iso-8859-1", "été.txt")
    assert part.get_params() == [("text/plain", ""), ("charset", "iso-8859-1"),
                                 ("name", "a.txt")]
    part.set_param("charset", "UTF-8")
    del part["Content-Disposition"]
    assert (part.get_content_charset(), part.get_filename()) == ("utf-8", "a.txt")
    assert part.get_param("charset") == "UTF-8"
