"""MailHog's message, built from a stored e-mail and its raw MIME exactly as MailHog's own code
builds it, since MailHog's clients decode that JSON themselves.

The contract is MailHog's parser (its `data` package: `SMTPMessage.Parse`,
`ContentFromString`, `ParseMIMEBody`, `PathFromString`), quirks included, because a client
that worked against MailHog must find the same values here:

- `Content` is the whole message: `Headers` maps each name, as written, to a list of one value
  (a name that occurs twice keeps its last value; a folded line is joined to the one before
  with its leading white space kept and the line break dropped), `Body` is everything after the
  first blank line *still transfer-encoded* (clients decode base64 and quoted-printable
  themselves), `Size` the message's length in bytes, `MIME` always null.
- `MIME` is null unless the `Content-Type` header (that spelling) starts with `multipart/`;
  then `Parts` are the pieces of the body between `--boundary` lines, each with its line
  breaks trimmed at both ends and parsed again the same way (so the preamble and the closing
  `--` are parts too, as MailHog makes them), nested multiparts with a `MIME` of their own.
  A multipart without a readable boundary has `Parts` null.
- `From` and `To` are the SMTP envelope's paths (`{Relays, Mailbox, Domain, Params}`), `Raw`
  the envelope and the message (`{From, To, Data, Helo}`).
- As MailHog does on receipt, `Content.Headers` gets a `Received` line naming the HELO and
  this server, a `Return-Path` of the envelope sender, and a `Message-ID` when the message had
  none (MailHog's test of that header is the only case-insensitive one).

Where Burnbox differs, on purpose: `ID` is the e-mail's own id (a UUID, the one the native API,
UI and clients use), not MailHog's random `<base64>@<hostname>`; `Created` is when Burnbox
stored the message, in UTC. Bytes that are not UTF-8 become U+FFFD, as Go's JSON encoder
writes them; sizes count the bytes before that.
"""

from __future__ import annotations

import binascii
import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import Message
from email.utils import format_datetime
from typing import Any

CRLF = b"\r\n"
BLANK_LINE = b"\r\n\r\n"
# What MailHog's part splitter trims from both ends of each piece (Go's strings.Trim cut set).
LINE_BREAKS = b"\r\n"


@dataclass(frozen=True)
class Envelope:
    """What the SMTP session said of one stored message."""

    helo: str
    sender: str
    recipients: Sequence[str]
    received_at: datetime


def text(raw: bytes) -> str:
    """Bytes as Go's JSON encoder writes a string of them: UTF-8, bad bytes as U+FFFD."""
    return raw.decode("utf-8", errors="replace")


def go_time(moment: datetime) -> str:
    """A time as Go's JSON encoder writes a time.Time (RFC 3339 with nanoseconds, trailing
    zeros dropped), in UTC."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    whole = utc.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{utc.microsecond:06d}".rstrip("0")
    return f"{whole}.{fraction}Z" if fraction else f"{whole}Z"


def path(address: str) -> dict[str, Any]:
    """An SMTP path as MailHog's `PathFromString` reads it: source-route relays before a `:`,
    then mailbox and domain around the first `@`."""
    relays: list[str] | None = None
    mailbox = address
    if ":" in address:
        route, mailbox = address.split(":", 1)
        relays = route.split(",")
    local, _, domain = mailbox.partition("@")
    return {"Relays": relays, "Mailbox": local, "Domain": domain, "Params": ""}


def _boundary(content_type: str) -> str:
    """The `boundary` parameter of a Content-Type value, "" when it has none or is malformed
    (Go's mime.ParseMediaType then fails, and MailHog finds no parts)."""
    holder = Message()
    holder["Content-Type"] = content_type
    boundary = holder.get_param("boundary")
    return boundary if isinstance(boundary, str) else ""


@dataclass
class Content:
    """One parsed piece (the message, or a MIME part) as MailHog's `Content` holds it: header
    values and the body still as bytes, decoded only when shown."""

    headers: dict[bytes, list[bytes]]
    body: bytes
    size: int
    parts: list[Content] | None = None
    is_multipart: bool = False

    @classmethod
    def parse(cls, data: bytes) -> Content:
        """`data` split at its first blank line into headers and body (MailHog's
        `ContentFromString`); a multipart's parts parsed too."""
        head, blank, body = data.partition(BLANK_LINE)
        if not blank:
            # No blank line: MailHog keeps the whole of it as the body, with no headers.
            return cls({}, data, len(data))
        headers: dict[bytes, list[bytes]] = {}
        last = b""
        for line in head.split(CRLF):
            if last and line[:1] in (b" ", b"\t"):
                headers[last][-1] += line
            elif b": " in line:
                name, value = line.split(b": ", 1)
                headers[name] = [value]
                last = name
        content = cls(headers, body, len(data))
        content_type = headers.get(b"Content-Type")
        if content_type and content_type[0].startswith(b"multipart/"):
            content.is_multipart = True
            content.parts = content._split(text(content_type[0]))
        return content

    def _split(self, content_type: str) -> list[Content] | None:
        """The parts of a multipart body (MailHog's `ParseMIMEBody`): None without a
        boundary, as Go's nil slice."""
        boundary = _boundary(content_type)
        if not boundary:
            return None
        pieces = self.body.split(b"--" + boundary.encode("utf-8", errors="surrogateescape"))
        return [Content.parse(piece.strip(LINE_BREAKS)) for piece in pieces if piece] or None

    def header(self, name: str) -> str | None:
        """The first value of header `name` (exact spelling), as text; None without one."""
        values = self.headers.get(name.encode())
        return text(values[0]) if values else None

    def mime(self) -> dict[str, Any] | None:
        """The JSON of this piece's `MIME`: null unless it is a multipart."""
        if not self.is_multipart:
            return None
        return {"Parts": None if self.parts is None else [part.shape() for part in self.parts]}

    def shape(self, *, mime: bool = True) -> dict[str, Any]:
        """The JSON of this piece: `{Headers, Body, Size, MIME}`, header names sorted as Go
        writes a map; `MIME` null when `mime` is false (the message's own Content)."""
        return {"Headers": {text(name): [text(value) for value in values]
                            for name, values in sorted(self.headers.items())},
                "Body": text(self.body), "Size": self.size,
                "MIME": self.mime() if mime else None}


def received_headers(content: Content, message_id: str, envelope: Envelope,
                     hostname: str) -> None:
    """Add to the message's headers what MailHog adds on receipt (`SMTPMessage.Parse`): a
    `Received` line, a `Return-Path`, and a `Message-ID` when the message has none."""
    names = {name.lower(): name for name in content.headers}
    if b"message-id" not in names:
        content.headers[b"Message-ID"] = [message_id.encode()]
    received = (f"from {envelope.helo} by {hostname} (Burnbox)\r\n          id {message_id}; "
                f"{format_datetime(envelope.received_at.astimezone(UTC))}").encode()
    content.headers.setdefault(names.get(b"received", b"Received"), []).append(received)
    return_path = f"<{envelope.sender}>".encode()
    content.headers.setdefault(names.get(b"return-path", b"Return-Path"), []).append(return_path)


def message_shape(email_id: uuid.UUID, envelope: Envelope, raw: bytes,
                  hostname: str) -> dict[str, Any]:
    """One stored message as MailHog's API answers it: `{ID, From, To, Content, Created, MIME,
    Raw}` (see the module's docstring for each field)."""
    content = Content.parse(raw)
    received_headers(content, f"{email_id}@{hostname}", envelope, hostname)
    # MailHog keeps the parts on the message, never on its Content.
    return {"ID": str(email_id), "From": path(envelope.sender),
            "To": [path(address) for address in envelope.recipients] or None,
            "Content": content.shape(mime=False), "Created": go_time(envelope.received_at),
            "MIME": content.mime(),
            "Raw": {"From": envelope.sender, "To": list(envelope.recipients),
                    "Data": text(raw), "Helo": envelope.helo}}


@dataclass(frozen=True)
class PartDownload:
    """A top-level MIME part as MailHog's part download serves it."""

    content_type: str | None
    body: bytes


def top_level_part(raw: bytes, index: int) -> PartDownload | None:
    """Part `index` of the message's top-level `MIME.Parts` (the numbering MailHog's
    `/mime/part/{index}/download` uses), its body base64-decoded when its
    Content-Transfer-Encoding says base64 and left as it is otherwise (as MailHog does); None
    when there is no such part."""
    parts = Content.parse(raw).parts
    if parts is None or not 0 <= index < len(parts):
        return None
    part = parts[index]
    encoding = next((values[0] for name, values in part.headers.items()
                     if name.lower() == b"content-transfer-encoding"), b"")
    body = part.body
    if encoding.strip().lower() == b"base64":
        # MailHog logs a failure and serves what it decoded before it; here the body is then
        # served as it is stored, which loses nothing.
        with contextlib.suppress(binascii.Error):
            body = binascii.a2b_base64(body)
    return PartDownload(part.header("Content-Type"), body)
