"""Turn a received message's raw bytes into the fields Burnbox stores and shows.

`parse_message(raw)` is a pure function: no database, no I/O. It never raises: whatever the input
(broken MIME, unknown charsets, 8-bit headers, binary garbage, hostile nesting), it returns a
`ParsedMessage`; when even that fails, the result has `parse_ok=False` and the subject
"(unparseable message)". The raw bytes are stored as they came and stay the source of truth; the
parse is a bounded, sanitised view of them (`truncated=True` says a bound cut something off).

Why not `email.policy.default` for the structure: its structured header parsers are super-linear on
hostile input (we measured 36 s for a 32 KiB `To:` of commas, 0.7 s for a 4 KiB one, and 256 s for a
32 KiB `Content-Type` of semicolons), and the feed parser runs them while it reads. So the MIME
structure is read with a compat32-based policy that keeps header values as their raw text, every
field is cut to a bounded length and parameter count as the parser reads it, and header text is
decoded with linear decoders: policy.default's unstructured parser for RFC 2047 words (with the raw
text as the fallback when it raises) and `email.utils.getaddresses` for addresses.
docs/mail-parsing.md describes what is kept, dropped and sanitised, and the spam score.
"""

from __future__ import annotations

import codecs
import logging
import mimetypes
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.feedparser import BytesFeedParser
from email.generator import BytesGenerator
from email.headerregistry import HeaderRegistry
from email.message import Message
from email.policy import Compat32
from email.utils import getaddresses, parsedate_to_datetime
from io import BytesIO
from itertools import islice
from typing import Any

from models.mail.checks.spam import spam_score, spam_signals
from models.mail.ingest.common_shapes import read_common_shape
from models.mail.ingest.extract import Link, extract_codes, extract_links
from models.mail.ingest.sanitise import html_to_text, sanitise_html

logger = logging.getLogger(__name__)

# Bounds. Each keeps the cost of one parse linear in the message size, and every stored field small.
MAX_HEADER_BYTES = 65_536  # header text kept per MIME part (name + value characters)
MAX_FIELD_CHARS = 8_192  # characters kept of one header field's value
MAX_FIELDS = 1_000  # header fields per MIME part; the parse stops at a part with more
MAX_PARAMS = 64  # ';'-separated parameters kept in Content-Type / Content-Disposition
MAX_LINES = 500_000  # lines parsed; the stdlib parser spends microseconds on each
MAX_PARTS = 256  # MIME parts parsed; later parts stay only in the raw message
MAX_DEPTH = 12  # multipart / message nesting levels parsed below the top-level message
MAX_BODY_CHARS = 1_048_576  # characters kept of body_text and of body_html (before sanitising)
MAX_SUBJECT_CHARS = 998
MAX_ID_CHARS = 998  # Message-ID and Content-ID
MAX_ADDRESS_CHARS = 320
MAX_ADDRESSES = 200  # addresses kept per To / Cc list
MAX_FILENAME_CHARS = 200
MAX_EXTENSION_CHARS = 16  # an extension this short survives filename shortening
SNIPPET_CHARS = 200
UNPARSEABLE_SUBJECT = "(unparseable message)"

# Attachments with these final extensions are dropped (design brief, SMTP decision).
EXECUTABLE_EXTENSIONS = frozenset(
    {"exe", "bat", "cmd", "com", "msi", "scr", "pif", "vbs", "js", "wsh", "wsf", "ps1", "hta",
     "cpl", "reg", "inf"}
)
# A nameless part of one of these types is named with the matching extension, so the same
# extension rule drops it. The stdlib table knows none of them except JavaScript.
_EXECUTABLE_TYPE_EXTENSIONS = {
    "application/x-msdownload": ".exe",
    "application/x-msdos-program": ".exe",
    "application/x-dosexec": ".exe",
    "application/vnd.microsoft.portable-executable": ".exe",
    "application/x-msi": ".msi",
    "application/x-ms-installer": ".msi",
    "application/hta": ".hta",
    "application/x-bat": ".bat",
    "application/javascript": ".js",
    "text/javascript": ".js",
}
# Codecs Python knows that are not MIME charsets; punycode also decodes in quadratic time.
_NOT_CHARSETS = frozenset({"punycode", "idna", "unicode-escape", "raw-unicode-escape", "undefined"})
_PARAMETERISED = frozenset({"content-type", "content-disposition"})
_BODY_TYPES = frozenset({"text/plain", "text/html"})
_CONTENT_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}")
# r"\r?\n(?=[ \t])" written so that re skips ahead to the next line break (a third faster).
_FOLD = re.compile(r"(?:\r\n|\n)(?=[ \t])")
_LINE_END = re.compile(rb"\r\n|\r|\n")  # what the stdlib parser splits lines on
_SURROGATE = re.compile("[\ud800-\udfff]")
_UTF8_TEXT = re.compile("[^\x00-\x7f\ufffd]")  # a character that UTF-8 read from 8-bit bytes
_WHITESPACE = re.compile(r"\s+")
_FILENAME_RESERVED = re.compile(r'[<>:"|?*]')
# Controls, formatting characters (bidi overrides, zero-width), surrogates, line separators.
_UNPRINTED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Control characters (category Cc) to spaces, for str.translate. Unicode guarantees the Cc set
# never changes (U+0000-U+001F and U+007F-U+009F), so the first 160 code points hold all of it.
_CONTROLS_TO_SPACES = {code: " " for code in range(0xA0) if unicodedata.category(chr(code)) == "Cc"}
# MimeTypes() without file names reads only the stdlib table, never /etc/mime.types, so fallback
# names are the same on every machine.
_MIME_TYPES = mimetypes.MimeTypes()
# policy.default's class for unstructured fields, applied to every field we decode (linear time).
# The registry builds a new class per look-up, so it is looked up once.
_UNSTRUCTURED = HeaderRegistry(use_default_map=False)["x-text"]


@dataclass(frozen=True)
class ParsedAttachment:
    """One kept attachment: a sanitised name, a safe content type and the decoded bytes.

    `inline` is true for parts the HTML body can show in place: those with a Content-ID that are
    not marked `Content-Disposition: attachment`; `content_id` is without angle brackets.
    """

    filename: str
    content_type: str
    content: bytes
    content_id: str | None = None
    inline: bool = False

    @property
    def size(self) -> int:
        """Size of the decoded content in bytes."""
        return len(self.content)


@dataclass(frozen=True)
class ParsedMessage:
    """The stored view of one message. Every string is valid Unicode without NUL characters.

    Addresses are bare addr-specs as written ("alice@example.com"); `from_name` is the display
    name. `date` is timezone-aware UTC, or None when missing or unreadable. `body_html` is
    sanitised. `headers` are the top-level (name, decoded value) pairs in order, at most
    `max_header_bytes` characters in all. `dropped_attachments` names the executables removed.
    `spam_score` is 0-10, the sum of the points of `spam_signals` (names of SPAM_WEIGHTS, a
    name repeated for each time it counted). `links` and `codes` are what
    `models.mail.ingest.extract` finds in the bodies (links) and in the subject and readable body
    (codes). `truncated` says a bound cut something off (see the MAX_* constants).
    """

    message_id: str = ""
    from_address: str = ""
    from_name: str = ""
    to_addresses: tuple[str, ...] = ()
    cc_addresses: tuple[str, ...] = ()
    subject: str = ""
    date: datetime | None = None
    body_text: str = ""
    body_html: str = ""
    snippet: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    attachments: tuple[ParsedAttachment, ...] = ()
    dropped_attachments: tuple[str, ...] = ()
    spam_score: float = 0.0
    spam_signals: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    codes: tuple[str, ...] = ()
    parse_ok: bool = True
    truncated: bool = False

    @classmethod
    def unparseable(cls) -> ParsedMessage:
        """The result for a message that could not be parsed at all; only its raw bytes count."""
        return cls(subject=UNPARSEABLE_SUBJECT, parse_ok=False)


def parse_message(raw: bytes, *, max_header_bytes: int = MAX_HEADER_BYTES) -> ParsedMessage:
    """Parse `raw` (a whole RFC 5322 message). Never raises; see the module docstring."""
    try:
        # memoryview() takes exactly the bytes-like objects; bytes(12) would be 12 zero bytes.
        return _parse(bytes(memoryview(raw)), max_header_bytes)
    except Exception:
        # The contract is "never raise": the raw message is stored either way and stays readable.
        logger.warning("message could not be parsed; keeping only the raw bytes", exc_info=True)
        return ParsedMessage.unparseable()


# --- MIME structure -------------------------------------------------------------------------


class _RawHeaderPolicy(Compat32):
    """compat32, but header values come back as the raw text the parser read.

    compat32 hands back 8-bit header values as Header objects whose text has the bytes replaced by
    U+FFFD, which would spoil UTF-8 filenames; we decode the bytes ourselves (`_clean`).
    """

    def header_fetch_parse(self, name: str, value: str) -> str:
        """The stored value, unchanged."""
        return value


# CRLF and no refolding when a message/rfc822 part is written back out as an .eml attachment.
_POLICY = _RawHeaderPolicy(linesep="\r\n", max_line_length=0)


class _BudgetExceeded(Exception):
    """The message has more MIME parts, nesting or header fields than we parse."""


@dataclass
class _Budget:
    """Shared state of one parse: the limits, what was spent, and the top-level message."""

    max_header_chars: int
    parts: int = 0
    truncated: bool = False
    root: _BoundedPart | None = None

    def new_part(self, policy: Compat32) -> _BoundedPart:
        """The feed parser's message factory; the first message created is the top level."""
        part = _BoundedPart(policy, self)
        if self.root is None:
            self.root = part
        return part


class _BoundedPart(Message):
    """A MIME part that enforces the parse budget while the feed parser builds it.

    The feed parser stores every header field with `set_raw` and links every child to its parent
    with `attach` before reading the child; those two hooks are where the budget is applied, so the
    parser never spends time on what we would throw away.
    """

    def __init__(self, policy: Compat32, budget: _Budget) -> None:
        super().__init__(policy)
        self._budget = budget
        self._depth = 0
        self._fields = 0
        self._header_chars = 0
        self._params: dict[str, list[tuple[str, Any]]] = {}

    def set_raw(self, name: str, value: str) -> None:
        """Store a header field cut to the field bounds; drop it once the part's budget is spent.
        Raise _BudgetExceeded at the part's MAX_FIELDS + 1st field: each one costs the parser
        microseconds, and a 25 MB message holds millions of "a:" lines."""
        self._fields += 1
        if self._fields > MAX_FIELDS:
            self._budget.truncated = True
            raise _BudgetExceeded
        kept = value[:MAX_FIELD_CHARS]
        if name.lower() in _PARAMETERISED:
            # The stdlib parameter parser is quadratic in the number of parameters.
            kept = ";".join(kept.split(";", MAX_PARAMS)[:MAX_PARAMS])
        size = len(name) + len(kept)
        if self._header_chars + size > self._budget.max_header_chars or kept != value:
            self._budget.truncated = True
        if self._header_chars + size > self._budget.max_header_chars:
            return
        self._header_chars += size
        super().set_raw(name, kept)

    def _get_params_preserve(self, failobj: Any, header: str) -> Any:
        """`Message`'s own, remembered for each value of the field: filing a body part reads
        its Content-Type's parameters twice (`get_filename` for "name", `get_content_charset`),
        and each read parsed them again. The answer depends on the value alone, so a field
        that is changed is parsed again."""
        value = self.get(header)
        if not isinstance(value, str):  # missing, or a `Header` object (not hashable)
            return super()._get_params_preserve(failobj, header)
        params = self._params.get(value)
        if params is None:
            params = self._params[value] = super()._get_params_preserve(
                failobj, header)
        return list(params)  # the caller's own list, as before

    def attach(self, payload: Message) -> None:
        """Add a child part; raise _BudgetExceeded past MAX_PARTS parts or MAX_DEPTH levels."""
        budget = self._budget
        budget.parts += 1
        if budget.parts > MAX_PARTS or self._depth >= MAX_DEPTH:
            budget.truncated = True
            raise _BudgetExceeded
        if isinstance(payload, _BoundedPart):
            payload._depth = self._depth + 1
        super().attach(payload)


def _read_structure(raw: bytes, max_header_bytes: int) -> tuple[_BoundedPart, bool]:
    """The parsed MIME tree and whether the budget cut it short.

    When the budget runs out the parse stops there: the parts read so far are kept (a part cut off
    mid-way has no payload) and the rest of the message is only in the raw bytes.
    """
    end = _line_limit(raw)
    if end == len(raw):
        # Most mail: the same tree without the feed parser's line-by-line reading.
        read = common_shape_structure(raw, max_header_bytes)
        if read is not None:
            return read
    return feed_parser_structure(raw, max_header_bytes, end)


def common_shape_structure(raw: bytes, max_header_bytes: int
                           ) -> tuple[_BoundedPart, bool] | None:
    """`_read_structure`'s answer from models/mail/ingest/common_shapes.py, None when the message is
    not of a common shape (the line bound is the caller's to check)."""
    budget = _Budget(max_header_chars=max_header_bytes)
    root = read_common_shape(raw.decode("ascii", "surrogateescape"), budget.new_part, _POLICY)
    return None if root is None else (root, budget.truncated)  # type: ignore[return-value]


def feed_parser_structure(raw: bytes, max_header_bytes: int, end: int
                          ) -> tuple[_BoundedPart, bool]:
    """`_read_structure`'s answer from the standard library's feed parser, reading raw[:end]
    (`_line_limit`)."""
    budget = _Budget(max_header_chars=max_header_bytes)
    parser = BytesFeedParser(budget.new_part, policy=_POLICY)
    budget.root = None  # the constructor calls the factory once to probe its signature
    budget.truncated = end < len(raw)
    try:
        for start in range(0, end, 65_536):
            parser.feed(raw[start:min(end, start + 65_536)])
        parser.close()
    except _BudgetExceeded:
        pass
    # The parser makes the top level first (even for empty input), before any budget can stop it.
    assert budget.root is not None
    return budget.root, budget.truncated


def _line_limit(raw: bytes) -> int:
    """Length of the start of `raw` that holds its first MAX_LINES lines."""
    if len(raw) <= MAX_LINES:  # every line ends with at least one byte
        return len(raw)
    lines = raw.count(b"\n") + raw.count(b"\r") - raw.count(b"\r\n")
    if lines <= MAX_LINES:
        return len(raw)
    return next(islice(_LINE_END.finditer(raw), MAX_LINES - 1, None)).end()


def _parts(root: Message) -> Iterator[Message]:
    """Leaf parts and message/* parts in reading order; multipart containers are opened."""
    stack = [root]
    while stack:
        part = stack.pop()
        if part.is_multipart() and part.get_content_maintype() != "message":
            stack.extend(reversed(part.get_payload()))
        else:
            yield part


def _content(part: Message) -> bytes:
    """The part's decoded content; a message/* part is written back out as a whole message."""
    try:
        payload = part.get_payload()
    except (UnicodeError, ValueError):
        # Asked for the undecoded payload, email decodes 8-bit content with the charset
        # parameter, and a name with a NUL or a raw byte fails there with these rather than
        # LookupError. The content is there all the same: decoded below, charset unused.
        payload = ""
    if payload is None:  # cut off by the parse budget
        return b""
    if isinstance(payload, list):
        buffer = BytesIO()
        for inner in payload:
            BytesGenerator(buffer, mangle_from_=False, policy=_POLICY).flatten(inner)
        return buffer.getvalue()
    data = part.get_payload(decode=True)
    return data if isinstance(data, bytes) else b""


# --- Text decoding --------------------------------------------------------------------------


def _codec(charset: str | None) -> str | None:
    """The Python codec of a MIME charset name, or None when unknown or not a text charset."""
    if not charset:
        return None
    try:
        name = codecs.lookup(charset.strip()).name
    except (LookupError, ValueError):
        return None
    return None if name in _NOT_CHARSETS else name


def _decode_bytes(data: bytes, charset: str | None) -> str:
    """Text of `data`: the declared charset; else UTF-8, with U+FFFD for the bytes it cannot
    read when the rest holds UTF-8 text; else Windows-1252 with U+FFFD for bytes it leaves
    undefined. Never raises; the result may contain NUL (see `_clean`)."""
    codec = _codec(charset)
    if codec and codec != "utf-8":
        try:
            return data.decode(codec)
        except (UnicodeError, LookupError):
            pass
    try:
        return data.decode("utf-8")
    except UnicodeError:
        text = data.decode("utf-8", "replace")
    # A part of UTF-8 text with a few invalid bytes was once read whole as Windows-1252, which
    # garbled every valid character ("Atención" became "AtenciÃ³n"): when some non-ASCII
    # character reads as UTF-8, only the bad bytes are replaced. When none does, the bytes are
    # in another 8-bit charset (Latin-1 headers, a mislabelled part) and Windows-1252 reads them.
    if _UTF8_TEXT.search(text):
        return text
    return data.decode("cp1252", "replace")


def _clean(text: str) -> str:
    """`text` as valid Unicode without NUL: undecoded 8-bit bytes (the parser keeps them as
    surrogate escapes) are read as UTF-8 or Windows-1252; other lone surrogates become U+FFFD."""
    # isascii() is a constant-time flag check on most strings; the search scans the whole text.
    if not text.isascii() and _SURROGATE.search(text):
        try:
            text = _decode_bytes(text.encode("utf-8", "surrogateescape"), "utf-8")
        except UnicodeEncodeError:  # surrogates that were never bytes
            text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text.replace("\x00", "")


def _unfolded(value: str) -> str:
    """A header value with its folding line breaks removed."""
    return _FOLD.sub("", value) if "\n" in value else value


def _decoded(value: str | None) -> str:
    """A header value unfolded, with RFC 2047 words decoded; the raw text when the decoder
    raises."""
    if not value:
        return ""
    text = _clean(_unfolded(value))
    if "=?" not in text:
        # Without an encoded word the unstructured parser only splits the text into tokens and
        # joins them back unchanged, and it is most of the cost of reading a header.
        return text
    try:
        return _clean(str(_UNSTRUCTURED("x-text", text)))
    except Exception:
        logger.debug("undecodable header text kept as written", exc_info=True)
        return text


def _header_text(value: str | None) -> str:
    """A header value as display text: decoded, control characters turned into spaces,
    stripped."""
    text = _decoded(value)
    if not text.isprintable():  # every control character is unprintable; most headers have none
        text = text.replace("\t", " ")  # the usual one, left by unfolding; translate is slower
        if not text.isprintable():
            text = text.translate(_CONTROLS_TO_SPACES)
    return text.strip()


# Mailboxes in their everyday forms, which getaddresses reads as the groups say: a bare addr-spec
# of atom characters, or one in angle brackets after an optional display name that is either a
# quoted string without escapes or plain words (joined with single spaces). One at a time,
# each followed by a comma or the end; anything else is left to getaddresses. No two
# repetitions can take the same white space, so a failing match backtracks in linear time.
_ADDR_SPEC = r"[A-Za-z0-9_+=.-]+@[A-Za-z0-9_.-]+"
_WORD = r'[^\s()<>@,:;"\[\]\\]+'
_SIMPLE_MAILBOX = re.compile(
    rf'[ \t]*(?:(?:"(?P<quoted>[^"\\\r\n]*)"[ \t]*|(?P<words>{_WORD}(?:[ \t]+{_WORD})*)[ \t]*)?'
    rf"<(?P<routed>{_ADDR_SPEC})>|(?P<bare>{_ADDR_SPEC}))[ \t]*(?:,|\Z)")


# An addr-spec with a local part and a domain and nothing else (what a stored address must be).
_WHOLE_ADDRESS = re.compile(r'[^\s@<>,;:"()\[\]\\]+@[^\s@<>,;:"()\[\]\\]+')
_ADDRESS_WORD_SEPARATORS = re.compile(r"[\s,;]+")


def _simple_addresses(text: str) -> list[tuple[str, str]] | None:
    """What `getaddresses([text])` returns when every mailbox in `text` has one of the forms
    _SIMPLE_MAILBOX reads; None when one does not. The stdlib parser is pure Python and walks
    the text character by character; this is one regex match per mailbox."""
    found: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _SIMPLE_MAILBOX.match(text, position)
        if match is None:
            return None
        if match["bare"]:
            found.append(("", match["bare"]))
        elif match["quoted"] is not None:
            found.append((match["quoted"], match["routed"]))
        else:
            found.append((" ".join((match["words"] or "").split()), match["routed"]))
        position = match.end()
    return found or None


def _addresses(value: str | None) -> list[tuple[str, str]]:
    """(display name, addr-spec) pairs of an address header; entries without an address skipped."""
    if not value:
        return []
    text = _clean(_unfolded(value))
    simple = _simple_addresses(text)
    if simple is not None:
        return [(_header_text(name), address[:MAX_ADDRESS_CHARS]) for name, address in simple]
    try:
        found = getaddresses([text])
    except RecursionError:  # its comment parser recurses once per nested "("
        return []
    # getaddresses reads mailboxes written without angle brackets as one address: "Big Bug
    # bb@bug.com" came back with its spaces (stored as "BigBugbb@bug.com"), and two bare
    # addresses without a comma as "@powerupdev.com". Such a header is read word by word.
    if any(address and not _WHOLE_ADDRESS.fullmatch(address) for _, address in found):
        pairs = _addresses_in_words(text)
        if pairs:
            return pairs
    pairs = []
    for name, address in found:
        if " " in address or not address.isprintable():  # isprintable: no other white space
            address = "".join(ch for ch in address if not ch.isspace() and ch.isprintable())
        if address:
            pairs.append((_header_text(name), address[:MAX_ADDRESS_CHARS]))
    return pairs


def _first_address(value: str | None) -> str:
    """The first address of a header field's value, "" when it holds none."""
    return next((address for _, address in _addresses(value)), "")


def _addresses_in_words(text: str) -> list[tuple[str, str]]:
    """(display name, addr-spec) pairs of a header whose mailboxes lack angle brackets or
    commas: every word that is a whole address (angle brackets allowed) is one, named by the
    words before it since the previous one ("Big Bug bb@bug.com"); [] when no word is one."""
    pairs: list[tuple[str, str]] = []
    name: list[str] = []
    for word in _ADDRESS_WORD_SEPARATORS.split(text):
        address = _WHOLE_ADDRESS.fullmatch(word.removeprefix("<").removesuffix(">"))
        if address is not None:
            display = " ".join(name).strip('"')
            pairs.append((_header_text(display), address.group()[:MAX_ADDRESS_CHARS]))
            name = []
        elif word:
            name.append(word)
    return pairs


def _date(text: str) -> datetime | None:
    """The Date header's display text (`_header_text`) as aware UTC; None when missing or
    unreadable. Naive dates count as UTC."""
    if not text:
        return None
    try:
        moment = parsedate_to_datetime(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)
    except (TypeError, ValueError, OverflowError):
        return None


# --- Attachments ----------------------------------------------------------------------------


def _safe_content_type(content_type: str) -> str:
    """A lower-case type/subtype safe to send in a header; application/octet-stream otherwise."""
    return content_type if _CONTENT_TYPE.fullmatch(content_type) else "application/octet-stream"


def _fallback_extension(content_type: str) -> str:
    """The usual extension of a content type ('.pdf'), or '' when there is none."""
    if content_type in _EXECUTABLE_TYPE_EXTENSIONS:
        return _EXECUTABLE_TYPE_EXTENSIONS[content_type]
    if content_type == "application/octet-stream":
        return ""
    return _MIME_TYPES.guess_extension(content_type) or ""


def safe_filename(name: str | None, content_type: str, index: int) -> str:
    """A filename safe to save anywhere: the last path component only, without control or
    formatting characters (bidi overrides included) or characters Windows reserves, without
    leading/trailing dots and spaces, at most MAX_FILENAME_CHARS characters with a short extension
    kept. An empty result becomes "attachment-<index><extension of content_type>"."""
    text = unicodedata.normalize("NFC", name or "")
    text = "".join(ch for ch in text if unicodedata.category(ch) not in _UNPRINTED)
    text = text.replace("\\", "/").rsplit("/", 1)[-1]
    text = _WHITESPACE.sub(" ", _FILENAME_RESERVED.sub("_", text)).strip(" .")
    if len(text) > MAX_FILENAME_CHARS:
        stem, dot, extension = text.rpartition(".")
        if dot and stem and len(extension) <= MAX_EXTENSION_CHARS:
            text = stem[:MAX_FILENAME_CHARS - len(extension) - 1].rstrip(" .") + "." + extension
        else:
            text = text[:MAX_FILENAME_CHARS].rstrip(" .")
    return text or f"attachment-{index}{_fallback_extension(content_type)}"


def is_executable(filename: str) -> bool:
    """True when the final extension of a (sanitised) filename is an executable one."""
    _, dot, extension = filename.rpartition(".")
    return bool(dot) and extension.lower() in EXECUTABLE_EXTENSIONS


def _content_id(part: Message) -> str | None:
    """The part's Content-ID without angle brackets, or None."""
    value = _header_text(part.get("Content-ID"))[:MAX_ID_CHARS].strip("<> ")
    return value or None


# --- Putting it together --------------------------------------------------------------------


@dataclass
class _Bodies:
    """Accumulates what the parts of one message yield."""

    texts: list[str] = field(default_factory=list)
    htmls: list[str] = field(default_factory=list)
    attachments: list[ParsedAttachment] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def add(self, part: Message) -> None:
        """File one leaf or message/* part as body text, body HTML or an attachment."""
        content_type = part.get_content_type()
        disposition = part.get_content_disposition()
        raw_name = part.get_filename() if _may_name_a_file(part) else None
        if not part.is_multipart() and (
            (content_type in _BODY_TYPES and disposition != "attachment" and not raw_name)
            # A multipart part whose boundary never shows up is read as text, as clients do.
            or part.get_content_maintype() == "multipart"
        ):
            text = _clean(_decode_bytes(_content(part), part.get_content_charset()))
            (self.htmls if content_type == "text/html" else self.texts).append(text)
            return
        index = len(self.attachments) + len(self.dropped) + 1
        content_type = _safe_content_type(content_type)
        filename = safe_filename(_decoded(raw_name), content_type, index)
        if is_executable(filename):
            self.dropped.append(filename)
            return
        content_id = _content_id(part)
        self.attachments.append(ParsedAttachment(
            filename=filename,
            content_type=content_type,
            content=_content(part),
            content_id=content_id,
            inline=content_id is not None and disposition != "attachment",
        ))


def _may_name_a_file(part: Message) -> bool:
    """False when `part.get_filename()` is sure to be None: neither its Content-Disposition
    nor its Content-Type holds "name" in any case, so neither can have a `filename` or `name`
    parameter (RFC 2231 continuations included). The parameter parse it saves was half the
    cost of filing a plain body part."""
    return any(not isinstance(value, str) or "name" in value.lower() for value in
               (part.get("content-disposition"), part.get("content-type"))
               if value is not None)


class _TopHeaders:
    """The top-level header fields of one message, each decoded at most once.

    Look-ups are by lower-case name and, like `Message.get`, find the first field of that name.
    """

    def __init__(self, root: Message) -> None:
        self.items = list(root.raw_items())
        self.texts = [_header_text(value) for _, value in self.items]
        self._first: dict[str, int] = {}
        for index, (name, _) in enumerate(self.items):
            self._first.setdefault(name.lower(), index)

    def raw(self, name: str) -> str | None:
        """The first field's value as written, or None."""
        index = self._first.get(name)
        return None if index is None else self.items[index][1]

    def text(self, name: str) -> str:
        """The first field's value as display text (see `_header_text`); "" when missing."""
        index = self._first.get(name)
        return "" if index is None else self.texts[index]

    def all_raw(self, name: str) -> list[str]:
        """Every field's value as written, in order."""
        return [value for field_name, value in self.items if field_name.lower() == name]


def _snippet(text: str) -> str:
    """The first SNIPPET_CHARS characters of `text` with whitespace runs collapsed to one space,
    stripped. Only as much of `text` as that needs is read: collapsing a prefix of the text
    gives a prefix of the collapsed text."""
    size = 4 * SNIPPET_CHARS
    while True:
        # str.split() splits on exactly the characters r"\s" matches (str.isspace).
        words = " ".join(text[:size].split())
        if len(words) >= SNIPPET_CHARS or size >= len(text):
            return words[:SNIPPET_CHARS].rstrip()
        size *= 4


def _bounded(text: str) -> tuple[str, bool]:
    """`text` cut to MAX_BODY_CHARS, and whether it was cut."""
    return text[:MAX_BODY_CHARS], len(text) > MAX_BODY_CHARS


def _parse(raw: bytes, max_header_bytes: int) -> ParsedMessage:
    root, truncated = _read_structure(raw, max_header_bytes)
    bodies = _Bodies()
    for part in _parts(root):
        bodies.add(part)
    body_text, cut_text = _bounded("\n".join(bodies.texts))
    body_html, cut_html = _bounded("\n".join(bodies.htmls))
    body_html = sanitise_html(body_html) if body_html.strip() else ""
    # Without a text part, the HTML's rendered text is what a reader reads (and where a URL
    # written as text is a link).
    html_text = "" if body_text.strip() else html_to_text(body_html)
    readable = body_text if body_text.strip() else html_text

    headers = _TopHeaders(root)
    senders = _addresses(headers.raw("from"))
    to = [address for _, address in _addresses(", ".join(headers.all_raw("to")))]
    cc = [address for _, address in _addresses(", ".join(headers.all_raw("cc")))]
    message_id = headers.text("message-id")[:MAX_ID_CHARS]
    from_address = senders[0][1] if senders else ""
    subject = headers.text("subject")[:MAX_SUBJECT_CHARS]
    date = _date(headers.text("date"))
    signals = spam_signals(
        upstream_flags=(headers.text("x-spam-flag"), headers.text("x-spam-status")),
        message_id=message_id, date=date, from_address=from_address,
        reply_to=_first_address(headers.raw("reply-to")),
        return_path=_first_address(headers.raw("return-path")),
        subject=subject, body_text=body_text, body_html=body_html,
        recipients=len(to) + len(cc), readable=readable)
    return ParsedMessage(
        message_id=message_id,
        from_address=from_address,
        from_name=senders[0][0] if senders else "",
        to_addresses=tuple(to[:MAX_ADDRESSES]),
        cc_addresses=tuple(cc[:MAX_ADDRESSES]),
        subject=subject,
        date=date,
        body_text=body_text,
        body_html=body_html,
        snippet=_snippet(readable),
        headers=tuple(zip((_clean(name) for name, _ in headers.items), headers.texts,
                          strict=True)),
        attachments=tuple(bodies.attachments),
        dropped_attachments=tuple(bodies.dropped),
        spam_score=spam_score(signals),
        spam_signals=signals,
        links=extract_links(body_text, body_html, html_text),
        codes=extract_codes(subject, readable),
        truncated=truncated or cut_text or cut_html or len(to) > MAX_ADDRESSES
        or len(cc) > MAX_ADDRESSES,
    )


def original_html(raw: bytes) -> str:
    """The HTML body of `raw` as the sender wrote it (decoded, NULs removed, cut to
    MAX_BODY_CHARS, NOT sanitised: style blocks and all), "" when it has none or cannot be
    read. For checks that judge what the sender sent (models.mail.checks.html_check), never for
    display."""
    try:
        root, _ = _read_structure(raw, MAX_HEADER_BYTES)
        bodies = _Bodies()
        for part in _parts(root):
            bodies.add(part)
    except Exception:  # the parser's own promise: unreadable mail is a result, not an error
        logger.warning("original HTML unreadable", exc_info=True)
        return ""
    return _bounded("\n".join(bodies.htmls))[0]
