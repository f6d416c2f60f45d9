"""Burnbox's e-mails in Mailpit's JSON shapes (its `MessageSummary`, `Message`, `Attachment`,
headers map and times), built from the stored rows and, for a message's headers, its raw bytes.

Field names, casing and types are Mailpit's: Go encodes its structs with their field names as
keys, `null` for a missing address, `[]` for empty lists, times as RFC 3339 with the fraction
of a second trimmed of trailing zeros (`time.RFC3339Nano`) and `Z` for UTC.

Where Burnbox holds something other than Mailpit (see docs/compat.md): `ID` is the native
e-mail id; `HTML` is the body as sent (`models.mail.ingest.parse.original_html`), the view page
shows the sanitised one; a `PartID` is the attachment's position among the e-mail's kept
attachments (executables are dropped on arrival, so they have none); `Username` is the SMTP
login of mail delivered with capture credentials, else "".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from sqlalchemy import func, select

from models.mail.checks.unsubscribe import check_unsubscribe
from models.mail.entities import Attachment, Email

# The columns a list's items are made from: no bodies, and the count of attachments that are
# not shown inline (Mailpit's `Attachments`) in the same statement.
ATTACHED = (select(func.count()).where(Attachment.email_id == Email.id,
                                       Attachment.inline.is_(False))
            .correlate(Email).scalar_subquery().label("attached"))
SUMMARY_COLUMNS = (Email.id, Email.message_id, Email.is_read, Email.from_address,
                   Email.subject, Email.received_at, Email.tags, Email.size_bytes,
                   Email.snippet, Email.headers, Email.envelope_to, Email.inbox_id, ATTACHED)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def go_time(moment: datetime) -> str:
    """`moment` as Go's `time.RFC3339Nano` writes it: `Z` for UTC, else the offset, and the
    fraction without trailing zeros (none at all for a whole second). Naive is UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    offset = moment.utcoffset()
    text = moment.replace(microsecond=0, tzinfo=None).isoformat()
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def canonical_key(name: str) -> str:
    """A header name as Go's `textproto.CanonicalMIMEHeaderKey` writes it ("message-id" ->
    "Message-Id"); a name that is not a token stays as it is."""
    if not _TOKEN.fullmatch(name):
        return name
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def _header_values(headers: Sequence[Sequence[str]], name: str) -> list[str]:
    wanted = name.lower()
    return [value for key, value in headers if key.lower() == wanted]


@functools.lru_cache(maxsize=4096)
def _parsed(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    # Cached: a list repeats its senders and recipients, and the parse is most of a summary's
    # cost (bench/compat.py).
    return tuple((display, address) for display, address in getaddresses(list(values))
                 if address or display)


def _username(envelope_to: list[str] | None, inbox_address: Callable[[], str]) -> str:
    """Mailpit's `Username` (the SMTP login): the capture login is the inbox's address, asked
    for only then (a message's inbox is loaded only for mail a capture login sent)."""
    return inbox_address() if envelope_to is not None else ""


_ADDRESS_HEADERS = ("from", "to", "cc", "bcc", "reply-to")


def _address_fields(headers: Sequence[Sequence[str]], from_address: str) -> dict[str, Any]:
    """`From`, `To`, `Cc`, `Bcc` and `ReplyTo` of a message, its headers read in one pass."""
    found: dict[str, list[str]] = {name: [] for name in _ADDRESS_HEADERS}
    for key, value in headers:
        values = found.get(key.lower())
        if values is not None:
            values.append(value)

    def listed(name: str) -> list[dict[str, str]]:
        values = found[name]
        return [{"Name": display, "Address": address}
                for display, address in _parsed(tuple(values))] if values else []

    senders = listed("from")
    sender = senders[0] if senders else (
        {"Name": "", "Address": from_address} if from_address else None)
    return {"From": sender, "To": listed("to"), "Cc": listed("cc"), "Bcc": listed("bcc"),
            "ReplyTo": listed("reply-to")}


def summary(row: Any, inbox_address: str) -> dict[str, Any]:
    """One `MessageSummary` from a row of SUMMARY_COLUMNS, with the address of its inbox."""
    return {"ID": str(row.id), "MessageID": row.message_id.strip("<>"), "Read": row.is_read,
            **_address_fields(row.headers or [], row.from_address), "Subject": row.subject,
            "Created": go_time(row.received_at),
            "Username": _username(row.envelope_to, lambda: inbox_address),
            "Tags": list(row.tags or []), "Size": row.size_bytes, "Attachments": row.attached,
            "Snippet": row.snippet}


def attachment(part: Attachment, checksums: dict[str, str]) -> dict[str, Any]:
    """One `Attachment` (also an inline part), with its {md5, sha1, sha256}."""
    return {"PartID": part_id(part), "FileName": part.filename,
            "ContentType": part.content_type, "ContentID": part.content_id or "",
            "Size": part.size_bytes,
            "Checksums": {"MD5": checksums.get("md5", ""), "SHA1": checksums.get("sha1", ""),
                          "SHA256": checksums.get("sha256", "")}}


def part_id(part: Attachment) -> str:
    """The attachment's `PartID`: its position among the e-mail's kept attachments."""
    return str(part.position + 1)


def _date(headers: Sequence[Sequence[str]], received: datetime) -> str:
    for value in _header_values(headers, "Date"):
        try:
            return go_time(parsedate_to_datetime(value))
        except (TypeError, ValueError, IndexError):
            break
    return go_time(received)


def _unsubscribe(headers: Sequence[Sequence[str]]) -> dict[str, Any]:
    offer = check_unsubscribe(headers)
    if offer is None or not _header_values(headers, "List-Unsubscribe"):
        return {"Header": "", "Links": [], "Errors": "", "HeaderPost": ""}
    invalid = [link["uri"] for link in offer["links"] if not link["valid"]]
    return {"Header": offer["header"], "Links": [link["uri"] for link in offer["links"]],
            "Errors": "; ".join(f"invalid URI {uri}" for uri in invalid),
            "HeaderPost": offer["post"] or ""}


def message(email: Email, html: str, checksums: dict[Any, dict[str, str]]) -> dict[str, Any]:
    """The `Message` of `email`: `html` is its HTML body as sent, `checksums` each
    attachment's digests by attachment id."""
    headers = email.headers or []
    fields = _address_fields(headers, email.from_address)
    sender = fields["From"]
    return_path = next(iter(_header_values(headers, "Return-Path")), "").strip().strip("<>")
    parts = [(part, attachment(part, checksums.get(part.id, {})))
             for part in email.attachments]
    return {"ID": str(email.id), "MessageID": email.message_id.strip("<>"), **fields,
            "ReturnPath": return_path or (sender["Address"] if sender else ""),
            "Subject": email.subject, "ListUnsubscribe": _unsubscribe(headers),
            "Date": _date(headers, email.received_at), "Tags": list(email.tags or []),
            "Username": _username(email.envelope_to, lambda: email.inbox.full_address),
            "Text": email.body_text, "HTML": html, "Size": email.size_bytes,
            "Inline": [shape for part, shape in parts if part.inline],
            "Attachments": [shape for part, shape in parts if not part.inline]}


def header_map(raw_headers: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """The headers as Go's `mail.Header` encodes them: canonical names, each with its values in
    message order, continuation lines joined by a space."""
    found: dict[str, list[str]] = {}
    for name, value in raw_headers:
        unfolded = re.sub(r"\r?\n[ \t]+", " ", str(value)).strip()
        found.setdefault(canonical_key(name), []).append(unfolded)
    return found
