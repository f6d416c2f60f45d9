"""Putting an e-mail into an inbox over HTTP: a message described in JSON, built into MIME and
stored through the very path SMTP mail takes.

`compose_message` turns a `Composition` (from, to, cc, subject, text, HTML, attachments inline
or not, extra headers, tags) into the bytes of one RFC 5322 message with
`email.message.EmailMessage`; `put_message` hands those bytes to
`models.mail.ingest.accept_message` and `store_messages`, the functions mailin's DATA reaches,
so the e-mail is parsed, sanitised, counted, its codes and links found, and its
`email.received` event recorded (webhooks, live push, notifications, authentication results,
thumbnails) exactly as for mail received over SMTP. The same limits apply: the SMTP size limit
(`smtp.max_message_bytes`, on the built message) and the platform's attachment limits.

Why the headers are built as plain text: the standard library's structured header parsers
(addresses, dates) are super-linear on hostile input (see models/mail/parse.py), so every
header but the MIME ones is written as unstructured text here, and the addresses are checked
and formatted by this module (`email.utils`, linear) before they become header text.

Tags go into an `X-Tags` header (comma-separated), which is where mail received over SMTP
carries them too; whatever reads tags on arrival reads them there.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.headerregistry import HeaderRegistry, UnstructuredHeader
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, formataddr, make_msgid, parseaddr

from sqlalchemy.orm import Session

from burnbox.dns import to_ascii_hostname
from burnbox.settings import Settings
from burnbox.storage import ObjectStorage
from burnbox.timeutil import utcnow
from models.db import Database, end_read_only_transaction
from models.errors import Conflict, DomainError, ValidationFailed
from models.mail.entities import MAX_ADDRESS, may_be_address
from models.mail.inboxes import Inbox
from models.mail.ingest.store import AttachmentPolicy, accept_message, store_messages
from models.platform.settings import live_settings
from models.tenancy.access import Caller, audit

# Bounds of one composition (the request schema says the same to callers).
MAX_RECIPIENTS = 100  # per list (to, cc), as SMTP's `smtp.max_recipients` default
MAX_ATTACHMENTS = 100
MAX_HEADERS = 50
MAX_TAGS = 50
MAX_TAG_CHARS = 64
MAX_HEADER_CHARS = 998  # RFC 5322's line length: a subject or an extra header's value
# Headers this module writes from the composition's own fields, or that describe the MIME
# structure it builds: an extra header may not name them.
RESERVED_HEADERS = frozenset({
    "from", "to", "cc", "subject", "x-tags", "mime-version", "content-type",
    "content-transfer-encoding", "content-disposition", "content-id"})
_MIME_HEADERS = ("content-type", "content-disposition", "content-transfer-encoding",
                 "mime-version")
# RFC 5322 field names: printable ASCII but the colon.
_FIELD_NAME_CHARS = frozenset(chr(code) for code in range(33, 127)) - {":"}


class MessageTooLarge(DomainError):
    """The built message is over the SMTP size limit."""

    status, code = 413, "payload_too_large"


@dataclass(frozen=True)
class Part:
    """An attachment: its bytes, name and type; with `content_id` and `inline` the HTML body
    shows it in place (`cid:<content_id>`)."""

    filename: str
    content_type: str
    content: bytes
    content_id: str | None = None
    inline: bool = False


@dataclass(frozen=True)
class Composition:
    """An e-mail as the caller describes it. `sender` and each recipient are an address or
    `Name <address>`; `to` empty means the inbox's own address."""

    sender: str
    to: Sequence[str] = ()
    cc: Sequence[str] = ()
    subject: str = ""
    text: str | None = None
    html: str | None = None
    attachments: Sequence[Part] = ()
    headers: Sequence[tuple[str, str]] = ()
    tags: Sequence[str] = field(default=())


def _unstructured_policy() -> object:
    """SMTP's policy (CRLF) with every header but the MIME ones read as unstructured text,
    so nothing the caller wrote meets a structured parser, folded at RFC 5322's 998
    characters: folding at 78 loses the space between two encoded words and writes empty
    continuation lines (the standard library's folder, Python 3.11), which a subject of a
    hundred non-ASCII characters met."""
    registry = HeaderRegistry()
    for name in list(registry.registry):
        if name not in _MIME_HEADERS:
            registry.map_to_type(name, UnstructuredHeader)
    return SMTP.clone(header_factory=registry, max_line_length=MAX_HEADER_CHARS)


_POLICY = _unstructured_policy()


def _address(value: str, where: str) -> tuple[str, str]:
    """The (header text, bare address) of `Name <address>` or `address`; the domain in IDNA.
    ValidationFailed naming `where` when it is not one address."""
    name, address = parseaddr(value)
    local, at, domain = address.rpartition("@")
    problem = None
    if not at or not local or not domain or not may_be_address(address):
        problem = "not an e-mail address (address, or Name <address>)"
    elif not local.isascii():
        problem = "the part before @ must be ASCII"
    else:
        try:
            domain = to_ascii_hostname(domain)
        except ValueError:
            problem = "the domain is not a valid host name"
    if problem is not None:
        raise ValidationFailed(f"invalid {where}", details={where: [problem]})
    bare = f"{local}@{domain}"
    return formataddr((name, bare)), bare


def _tag_header(tags: Sequence[str]) -> str:
    """The `X-Tags` value of `tags`: each once, in order, comma-separated."""
    for tag in tags:
        if "," in tag or not tag.strip():
            raise ValidationFailed("invalid tags", details={"tags": [
                "a tag is a non-empty text without commas"]})
    return ", ".join(dict.fromkeys(tag.strip() for tag in tags))


def compose_message(composition: Composition, *, inbox_address: str) -> tuple[bytes, str]:
    """The message's bytes (CRLF line ends) and its envelope sender. Raise ValidationFailed for
    an address, header or tag that cannot be written. A `Date` and a `Message-ID` are added
    unless the extra headers give them."""
    header_from, envelope_from = _address(composition.sender, "from")
    to = [_address(value, "to")[0] for value in composition.to] or [inbox_address]
    cc = [_address(value, "cc")[0] for value in composition.cc]
    message = EmailMessage(policy=_POLICY)  # type: ignore[arg-type]
    message["From"] = header_from
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Subject"] = composition.subject
    given = {name.lower() for name, _ in composition.headers}
    if "date" not in given:
        message["Date"] = format_datetime(utcnow())
    if "message-id" not in given:
        message["Message-ID"] = make_msgid(domain=inbox_address.rpartition("@")[2])
    for name, value in composition.headers:
        if not name or not set(name) <= _FIELD_NAME_CHARS or name.lower() in RESERVED_HEADERS:
            raise ValidationFailed("invalid headers", details={"headers": [
                f"{name!r} cannot be given: a header name is printable ASCII without ':', and "
                f"{', '.join(sorted(RESERVED_HEADERS))} come from the other fields"]})
        message[name] = value
    if composition.tags:
        message["X-Tags"] = _tag_header(composition.tags)
    if any(part.content_type.startswith("multipart/") for part in composition.attachments):
        # A multipart part is a structure of parts, not bytes: written as bytes it would be
        # read back as an empty container, the attachment lost.
        raise ValidationFailed("invalid attachments", details={"attachments": [
            "an attachment cannot be multipart/*"]})
    _set_bodies(message, composition)
    try:
        return message.as_bytes(), envelope_from
    except (ValueError, TypeError, UnicodeError, IndexError) as error:
        # A value the generator cannot write (the standard library's own refusals).
        raise ValidationFailed("the message cannot be written",
                               details={"json": [str(error)[:200]]}) from None


def _set_bodies(message: EmailMessage, composition: Composition) -> None:
    """The text and HTML bodies (multipart/alternative when both), the inline parts related
    to the HTML body, and the other attachments (inline ones too when there is no HTML body
    to show them: they keep their Content-ID)."""
    if composition.text is not None or composition.html is None:
        message.set_content(composition.text or "")
        if composition.html is not None:
            message.add_alternative(composition.html, subtype="html")
    else:
        message.set_content(composition.html, subtype="html")
    files = list(composition.attachments)
    if composition.html is not None:
        inline = [part for part in files if part.inline and part.content_id]
        files = [part for part in files if not (part.inline and part.content_id)]
        html_part = message.get_payload()[-1] if message.is_multipart() else message
        assert isinstance(html_part, EmailMessage)
        for part in inline:
            maintype, _, subtype = part.content_type.partition("/")
            html_part.add_related(part.content, maintype, subtype, cid=f"<{part.content_id}>",
                                  filename=part.filename, disposition="inline")
    for part in files:
        maintype, _, subtype = part.content_type.partition("/")
        message.add_attachment(part.content, maintype, subtype, filename=part.filename,
                               cid=f"<{part.content_id}>" if part.content_id else None)


def put_message(db: Database, storage: ObjectStorage, settings: Settings, session: Session,
                caller: Caller, inbox: Inbox, composition: Composition) -> uuid.UUID:
    """Store `composition` in `inbox` as mail received over SMTP is stored, and return the new
    e-mail's id; audited as `inbox.message_put` in `session` (the face commits it).

    Raise Conflict when the inbox has lapsed (or lapses before the message is stored),
    MessageTooLarge above `smtp.max_message_bytes`, ValidationFailed for what cannot be
    written. Like mail ingest, this commits the e-mail itself (`store_messages`: the objects
    written first, deleted again when the rows fail); `session`'s transaction, which must not
    have written, is ended first, so no lock is held while the objects are written and the
    ingest transaction commits."""
    if inbox.expires_at <= utcnow():
        raise Conflict("the inbox has expired")
    # Read before the transaction ends: the rollback expires the inbox, and reading it again
    # would begin a transaction that holds SQLite's write lock while ingest waits for it.
    inbox_id, org_id, address = inbox.id, inbox.org_id, inbox.full_address
    policy = AttachmentPolicy.of(live_settings(session, settings))
    raw, envelope_from = compose_message(composition, inbox_address=address)
    limit = settings.smtp.max_message_bytes
    if len(raw) > limit:
        raise MessageTooLarge(f"the message is {len(raw)} bytes, over the limit of {limit} "
                              "bytes (smtp.max_message_bytes)", extra={"limit": limit})
    end_read_only_transaction(session)
    accepted = accept_message(raw, mail_from=envelope_from[:MAX_ADDRESS], recipients=[address],
                              policy=policy)
    [email_ids] = store_messages(db, storage, [accepted])
    if not email_ids:
        raise Conflict("the inbox has expired")
    audit(session, caller, "inbox.message_put", org_id=org_id, resource_type="inbox",
          resource_id=inbox_id, after={"address": address, "email_id": str(email_ids[0]),
                                       "size_bytes": len(raw)})
    return email_ids[0]
