"""Building a message from a composition: whatever the strings the request schema lets through
(one-line fields without control characters, bodies with line breaks), the result is a message
mail ingest reads back with the same subject, sender and bodies, or a ValidationFailed; never
another exception."""

import base64
import re

from hypothesis import example, given
from hypothesis import strategies as st

from models.errors import ValidationFailed
from models.mail.ingest.compose import Composition, Part, compose_message
from models.mail.ingest.parse import parse_message
from tests.properties import property_settings

# What `web.fields.Line` lets through: no control character, no line separator, no surrogate.
line = st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=80)
body = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
               max_size=200)
names = st.sampled_from(["Jörg", "Acme, Inc.", '"Quoted"', "=?utf-8?q?x?=", "a <b>", ""])
addresses = st.builds(lambda name, local, domain: f"{name} <{local}@{domain}>" if name
                      else f"{local}@{domain}",
                      names, st.from_regex(r"[a-z0-9._+-]{1,20}", fullmatch=True),
                      st.sampled_from(["example.test", "bücher.example", "a.b.c.example"]))
parts = st.builds(Part, filename=line.filter(bool), content_type=st.sampled_from(
    ["image/png", "application/pdf", "text/plain", "multipart/mixed", "message/rfc822"]),
    content=st.binary(max_size=64), content_id=st.none() | st.from_regex(
        r"[!-;=?-~]{1,20}", fullmatch=True), inline=st.booleans())
compositions = st.builds(
    Composition, sender=addresses | line, to=st.lists(addresses | line, max_size=3),
    cc=st.lists(addresses, max_size=2), subject=line, text=st.none() | body,
    html=st.none() | body, attachments=st.lists(parts, max_size=3),
    headers=st.lists(st.tuples(st.sampled_from(["X-A", "Reply-To", "Date", "Message-ID",
                                                "X-Ünicode", "Bad Name", "List-Id"]), line),
                     max_size=3),
    tags=st.lists(line, max_size=3))


def _folding_blanks(subject: str) -> str:
    """`subject` with runs of spaces and tabs made one space and whitespace of any kind
    stripped from its ends: what header folding and unfolding may change, and the parser's
    trimming. A no-break space or an em space inside is text and must come back as it went
    (`str.split` would take it for a blank)."""
    return re.sub(r"[ \t]+", " ", subject).strip()


@property_settings(200)
@given(composition=compositions)
@example(composition=Composition(sender="Jörg <0@example.test>", subject="0\xa00"))
@example(composition=Composition(sender="a@example.test", subject=" a\t\tb  c\u2003d "))
@example(composition=Composition(sender="Jörg <0@example.test>", subject="\xa0"))
def test_a_composition_is_a_message_ingest_reads_or_a_validation_error(composition):
    try:
        raw, envelope_from = compose_message(composition, inbox_address="box@inbox.test")
    except ValidationFailed:
        return
    parsed = parse_message(raw)
    assert parsed.parse_ok
    assert _folding_blanks(parsed.subject) == _folding_blanks(composition.subject)
    assert parsed.from_address == envelope_from
    assert len(parsed.attachments) == len(composition.attachments)


def test_inline_parts_are_related_to_the_html_and_files_are_attached():
    png = base64.b64decode("iVBORw0KGgo=")
    raw, _ = compose_message(Composition(
        sender="a@b.test", text="t", html='<img src="cid:logo">',
        attachments=[Part("logo.png", "image/png", png, "logo", True),
                     Part("a.pdf", "application/pdf", b"%PDF")]),
        inbox_address="box@inbox.test")
    parsed = parse_message(raw)
    assert [(part.filename, part.content_id, part.inline) for part in parsed.attachments] == [
        ("logo.png", "logo", True), ("a.pdf", None, False)]
    assert b"multipart/related" in raw and b"multipart/alternative" in raw
