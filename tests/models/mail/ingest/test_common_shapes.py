"""The common-shape reader (models/mail/ingest/common_shapes.py) builds the feed parser's very tree
or declines: on every message of the test corpora and the benchmark, on generated multipart
structures with the edge cases of boundaries, preambles, epilogues and line breaks, and on
those messages mutated line by line. Declined messages are read by the feed parser, so the
only failure is a tree that differs."""

from __future__ import annotations

from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from bench.ingest import small, with_attachment
from models.mail.ingest.parse import parse_message
from tests.corpus.heldout import HELD_OUT
from tests.corpus.products import PRODUCTS
from tests.corpus.products_heldout import PRODUCTS_HELD_OUT
from tests.corpus.transactional import SAMPLES
from tests.models.mail.ingest.compare_structure import common_shape_tree, compare, feed_parser_tree
from tests.properties import property_settings

CORPUS = [sample.message() for sample in (*SAMPLES, *PRODUCTS, *PRODUCTS_HELD_OUT, *HELD_OUT)]
PROPERTY = property_settings(300, suppress_health_check=[HealthCheck.too_slow,
                                                        HealthCheck.data_too_large])


def test_every_corpus_and_benchmark_message_is_read_alike_and_none_declined():
    messages = [*CORPUS, small("a@burnbox.test"), with_attachment("a@burnbox.test")]
    assert [compare(raw) for raw in messages] == [True] * len(messages)


def test_a_multipart_tree_with_preamble_epilogue_and_nesting_is_the_feed_parsers():
    raw = (b"From: a@example.com\r\nContent-Type: multipart/mixed; boundary=outer\r\n"
           b"Subject: folded\r\n  on two lines\r\n\r\n"
           b"preamble line\r\n\r\n--outer \t\r\nContent-Type: multipart/alternative;\r\n"
           b" boundary=\"outer-inner\"\r\n\r\n--outer-inner\r\n\r\nplain\r\n--outer-x\r\n"
           b"--outer-inner\r\nContent-Type: text/html\r\n\r\n<p>hi</p>\r\n\r\n"
           b"--outer-inner--\r\ninner epilogue\r\n--outer\r\nContent-Type: text/plain\r\n\r\n"
           b"last\r\n--outer--\r\nepilogue\r\n")
    tree = common_shape_tree(raw)
    assert tree is not None
    assert tree == feed_parser_tree(raw)


def test_shapes_the_reader_does_not_take_are_declined():
    head = b"From: a@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
    declined = [
        b"From a@example.com Mon Jan  1 00:00:00 2026\r\nSubject: x\r\n\r\nbody",  # envelope
        b"Subject: x\rbare carriage return\r\n\r\nbody",
        b"Subject: x\r\nno empty line, then the body\r\n",
        b" continued\r\nSubject: x\r\n\r\nbody",
        b"Content-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\nbody",
        head + b"--b\r\n\r\nno close boundary\r\n",
        head + b"no start boundary\r\n",
        head + b"--b\r\n--b\r\n\r\ntwo boundaries in a row\r\n--b--\r\n",
        b"Content-Type: multipart/digest; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b--\r\n",
        b"Content-Type: multipart/mixed; boundary=b\r\nContent-Transfer-Encoding: base64\r\n"
        b"\r\n--b\r\n\r\nx\r\n--b--\r\n",
        b"Content-Type: multipart/mixed\r\n\r\nno boundary parameter",
    ]
    assert [common_shape_tree(raw) for raw in declined] == [None] * len(declined)


def test_a_line_that_is_a_boundary_of_two_multiparts_is_the_enclosing_ones():
    """"--a--" closes the outer multipart and opens the inner one (boundary "a--"): the feed
    parser ends the inner part there, finds no close boundary and notes a defect, so the
    reader declines it."""
    raw = (b"Content-Type: multipart/mixed; boundary=a\r\n\r\n--a\r\n"
           b'Content-Type: multipart/mixed; boundary="a--"\r\n\r\n--a--\r\n'
           b"Content-Type: text/plain\r\n\r\nx\r\n--a--\r\n")
    assert common_shape_tree(raw) is None
    assert feed_parser_tree(raw)[0][6] == []  # the outer part itself is whole


def test_the_parse_budget_spent_in_the_reader_leaves_the_cut_to_the_feed_parser():
    raw = b"".join(b"X-Field: %d\r\n" % n for n in range(1_500)) + b"\r\nbody"
    assert common_shape_tree(raw) is None
    parsed = parse_message(raw)
    assert parsed.truncated and parsed.parse_ok


# --- generated messages -----------------------------------------------------------------------

_BOUNDARIES = st.sampled_from(["b", "b-1", "b-12", "=_x", "b b", "bb", "b--"])
_LINE_BREAKS = st.sampled_from(["\r\n", "\n"])
# Lines that look like boundaries, fields, envelopes and breaks to a line-by-line reader.
_TRICKY_LINES = st.sampled_from([
    "", "--b", "--b--", "--b ", "--b-1", "--b-12--", "--bb", "--b-", "-- b", "--b--x",
    "--=_x", "--b b", "From me", "Subject: inner", " folded", "\t", ":no name", "x", "\r",
    "--b\r", "Content-Type: multipart/mixed; boundary=b-1",
])


@st.composite
def _body_lines(draw: st.DrawFn) -> list[str]:
    return draw(st.lists(st.one_of(_TRICKY_LINES, st.text("ab -:\t=é", max_size=8)),
                         max_size=5))


@st.composite
def _part(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """The lines of one part: fields, an empty line, then a body or, as a multipart, parts
    between boundary lines with a preamble and an epilogue."""
    fields = draw(st.lists(st.sampled_from([
        "Subject: hello", "X-Folded: one", " two", "Content-Transfer-Encoding: 7bit",
        "Content-Type: text/plain; charset=utf-8", "To: a@example.com"]), max_size=3))
    if depth < 2 and draw(st.booleans()):
        boundary = draw(_BOUNDARIES)
        separator = "--" + boundary
        parts = draw(st.lists(_part(depth + 1), min_size=1, max_size=3))
        subtype = draw(st.sampled_from(["mixed", "alternative"]))
        lines = [*fields, f'Content-Type: multipart/{subtype}; boundary="{boundary}"', "",
                 *draw(_body_lines())]
        for inner in parts:
            lines += [separator + draw(st.sampled_from(["", " ", "\t "])), *inner]
        lines.append(separator + "--" + draw(st.sampled_from(["", " "])))
        return lines + draw(_body_lines())
    return [*fields, "", *draw(_body_lines())]


@st.composite
def _message(draw: st.DrawFn) -> bytes:
    lines = draw(_part())
    line_break = draw(_LINE_BREAKS)
    text = line_break.join(lines) + draw(st.sampled_from(["", line_break]))
    return text.encode("utf-8", "surrogateescape")


@PROPERTY
@given(_message())
def test_a_generated_message_read_by_the_reader_is_the_feed_parsers_tree(raw):
    assert compare(raw) is not False


@PROPERTY
@given(st.sampled_from([*CORPUS[:20], with_attachment("a@burnbox.test")]),
       st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["drop", "double", "insert"]),
                          _TRICKY_LINES), min_size=1, max_size=4))
def test_a_corpus_message_mutated_line_by_line_is_read_alike_or_declined(raw, edits):
    lines = raw.split(b"\n")
    for position, edit, line in edits:
        at = position % len(lines)
        if edit == "drop" and len(lines) > 1:
            del lines[at]
        elif edit == "double":
            lines.insert(at, lines[at])
        else:
            lines.insert(at, line.encode() + b"\r")
    assert compare(b"\n".join(lines)) is not False
