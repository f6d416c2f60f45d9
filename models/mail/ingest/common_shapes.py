"""The MIME structure of a message of a common shape, read without the standard library's feed
parser, into the very tree the feed parser would build.

Why: the feed parser reads a message line by line in Python (about a microsecond a line) and
compiles a regular expression for every multipart boundary it meets (tens of microseconds; the
`re` cache never holds a message's unique boundary). Under the ingest benchmark that was 11 % of
the SMTP process's CPU for a 2 KB message and 40 % for a 50 KB one with an attachment. Here a
part's body is one slice of the text and a boundary is found with `str.find`.

Exactness is the contract: `read_common_shape` returns either None (the message is not of a
shape it reads; the caller runs the feed parser) or a tree equal to the feed parser's in every
respect the parser sets: each part's header fields (set through the part's own `set_raw`, so
the parse budget applies as it does there), payloads, preambles, epilogues, defects (none: a
message that would get one is declined), and the order parts are made and attached in.
`tests/models/mail/ingest/test_common_shapes.py` compares the two on every message the tests hold,
on generated ones, and (`python -m tests.models.mail.ingest.compare_structure DIR`) on any folder of
messages.

A common shape: line breaks of CRLF or LF (no bare CR); each part's header block made of
well-formed fields (a name of printable characters and a colon, continuation lines after the
first) and ended by an empty line; leaf parts of any type but `message/*`; multiparts (not
`multipart/digest`, with a 7bit, 8bit or binary transfer encoding) with a boundary parameter,
a start boundary, single boundary lines between parts and a close boundary. Anything else,
and any exception raised while building (the parse budget's), is declined.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from email.message import Message
from email.policy import Compat32

# The feed parser's header test (email.feedparser.headerRE) for lines that are not
# continuations, minus its "From " envelope line and a field without a name, both declined.
_FIELD = re.compile(r"[\041-\071\073-\176]+:")
# What follows "--" + boundary on a boundary line, as the feed parser's per-boundary pattern
# reads it: "--" for the close boundary, blanks, the line break (matched from the end of the
# separator to the end of its line, `match(text, pos, endpos)`: `$` is then the line's end).
_BOUNDARY_TAIL = re.compile(r"(?P<end>--)?(?P<ws>[ \t]*)(?P<linesep>\r\n|\r|\n)?$")
_UNFRAMED_TRANSFER_ENCODINGS = ("7bit", "8bit", "binary")


class _Declined(Exception):
    """The message is not of a shape this module reads."""


def read_common_shape(text: str, new_part: Callable[[Compat32], Message],
                      policy: Compat32) -> Message | None:
    """The MIME tree of `text` (the message's bytes decoded as ASCII with surrogate escapes, as
    BytesFeedParser decodes them), its parts made with `new_part(policy)`; None when the
    message is not of a common shape (see the module docstring) or building it raised."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return None  # a bare CR is a line break to the feed parser: not one of our shapes
    try:
        return _Reader(text, new_part, policy).part(0, len(text), None, ())
    except Exception:  # _Declined, or the parse budget spent: the feed parser decides
        return None


class _Reader:
    """Reads one message's text; each method declines by raising _Declined."""

    def __init__(self, text: str, new_part: Callable[[Compat32], Message],
                 policy: Compat32) -> None:
        self.text = text
        self.new_part = new_part
        self.policy = policy

    def part(self, start: int, end: int, parent: Message | None,
             separators: tuple[str, ...]) -> Message:
        """The part that text[start:end] holds, attached to `parent` before its fields are
        read (the feed parser's order); `separators` are the enclosing multiparts'."""
        part = self.new_part(self.policy)
        if parent is not None:
            parent.attach(part)
        body = self._fields(part, start, end)
        if part.get_content_maintype() == "message":
            raise _Declined  # message/rfc822, delivery-status...: the feed parser recurses
        if part.get_content_maintype() == "multipart":
            self._multipart(part, body, end, separators)
        else:
            part.set_payload(self.text[body:end])
        return part

    def _fields(self, part: Message, start: int, end: int) -> int:
        """Read the header block at `start` into `part`; the offset of the body after its
        empty line."""
        text = self.text
        position = start
        field: list[str] = []
        while True:
            line_end = text.find("\n", position, end)
            if line_end < 0:
                raise _Declined  # the part ends within its header block
            line = text[position:line_end + 1]
            position = line_end + 1
            if line in ("\r\n", "\n"):
                break
            if line[0] in " \t":
                if not field:
                    raise _Declined  # a continuation first: a defect to the feed parser
                field.append(line)
                continue
            if line.startswith("From ") or not _FIELD.match(line):
                raise _Declined  # an envelope line, or the body without its empty line
            if field:
                part.set_raw(*self.policy.header_source_parse(field))
            field = [line]
        if field:
            part.set_raw(*self.policy.header_source_parse(field))
        return position

    def _multipart(self, part: Message, body: int, end: int,
                   separators: tuple[str, ...]) -> None:
        boundary = part.get_boundary()
        if (boundary is None or "\n" in boundary or "\r" in boundary
                or part.get_content_type() == "multipart/digest"
                or str(part.get("content-transfer-encoding", "8bit")).lower()
                not in _UNFRAMED_TRANSFER_ENCODINGS):
            raise _Declined
        own = "--" + boundary
        inner = (*separators, own)
        found = self._boundary(body, end, inner)
        if found is None or found[0] != own or found[2]["end"]:
            raise _Declined  # no start boundary, or a close boundary first
        _, position, match = found
        if position > body:  # the preamble, without the line break that is the boundary's
            part.preamble = _without_line_end(self.text[body:position])
        while True:
            next_line = match.end()  # the boundary line's end: the next part's first line
            found = self._boundary(next_line, end, inner)
            if found is None or found[0] != own or found[1] == next_line:
                raise _Declined  # no close boundary, an enclosing one, or two in a row
            _, position, match = found
            child = self.part(next_line, position, part, inner)
            _drop_line_end_before_boundary(child)
            if match["end"]:
                break
        after = match.end()
        # The feed parser's epilogue: what follows the close boundary's line, "" when that line
        # had no line break (the message's last line), None when nothing but its line break.
        part.epilogue = self.text[after:end] if match["linesep"] else ""

    def _boundary(self, start: int, end: int, separators: tuple[str, ...]
                  ) -> tuple[str, int, re.Match[str]] | None:
        """The first boundary line of any of `separators` (outermost first) that starts at or
        after `start` (a line start) and before `end`: its separator, its offset and its
        tail's match. A line that is a boundary of several is an enclosing multipart's: the
        feed parser ends the inner part there and then finds no close boundary of its own.
        The innermost separator is searched first (its next boundary is usually near) and the
        others only up to what it found, so finding a message's boundaries takes time linear
        in its size times its depth, not in its size times its parts."""
        best: tuple[str, int, re.Match[str]] | None = None
        before = end
        for separator in reversed(separators):
            found = self._line_starting(separator, start, before, end)
            if found is not None:
                best = (separator, *found)
                before = found[0] + 1  # an enclosing multipart's on the same line wins
        return best

    def _line_starting(self, separator: str, start: int, before: int, end: int
                       ) -> tuple[int, re.Match[str]] | None:
        """The first line of text[start:end] starting before `before` (`start` a line start)
        that is a boundary line of `separator`: its offset and its tail's match."""
        text = self.text
        position = start
        while position < before:
            if text.startswith(separator, position):
                line_end = text.find("\n", position, end)
                line_end = end if line_end < 0 else line_end + 1
                match = _BOUNDARY_TAIL.match(text, position + len(separator), line_end)
                if match is not None:
                    return position, match
            found = text.find("\n" + separator, position, min(end, before + len(separator)))
            if found < 0:
                return None
            position = found + 1
        return None


def _without_line_end(text: str) -> str:
    """`text` without the line break it ends with (RFC 2046: it belongs to the boundary)."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def _drop_line_end_before_boundary(child: Message) -> None:
    """What the feed parser does to a part once the next boundary is found: the line break
    before the boundary leaves its payload, or a nested multipart's epilogue (where an
    epilogue of "" becomes None)."""
    if child.get_content_maintype() == "multipart":
        if child.epilogue == "":
            child.epilogue = None
        elif child.epilogue is not None:
            child.epilogue = _without_line_end(child.epilogue)
    elif isinstance(child._payload, str):  # type: ignore[attr-defined]
        child._payload = _without_line_end(child._payload)  # type: ignore[attr-defined]
