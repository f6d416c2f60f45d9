"""Putting an e-mail into an inbox over HTTP: POST /api/v1/inboxes/:id/messages (a Burnbox
extension), so UI and component tests can seed mail without an SMTP client.

The JSON describes the message (from, to, cc, subject, text, HTML, attachments in base64,
inline by Content-ID, extra headers, tags); `models.mail.ingest.compose` builds it into MIME and
stores it through mail ingest, so it is parsed, sanitised, counted and announced
(`email.received`) as mail received over SMTP is. It needs `team.inboxes.manage` on the inbox
(the permission that gives an inbox SMTP capture credentials, through which the same people
can send it mail already); an API key needs that scope. The body may be as large as the SMTP
size limit in base64 plus `http.max_request_bytes`; the built message is held to
`smtp.max_message_bytes` (413 above it).
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import request
from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, post_load, validate, validates

from models.errors import NotFound
from models.mail import inboxes
from models.mail.entities import Email
from models.mail.inboxes import InboxAccess
from models.mail.ingest import compose
from models.mail.ingest.compose import Composition, Part, put_message
from web.api import Blueprint
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Text
from web.permissions import caller, require_inbox
from web.views.emails import EmailDetailSchema

F = TypeVar("F", bound=Callable[..., Any])

blp = Blueprint("messages", __name__, url_prefix="/api/v1",
                description="Put an e-mail into an inbox over HTTP (a Burnbox extension)")

# Whole values (validate.Regexp matches at the start only).
_CONTENT_TYPE = re.compile(
    r"[a-z0-9][a-z0-9!#$&^_.+-]{0,62}/[a-z0-9][a-z0-9!#$&^_.+-]{0,62}\Z")
_CONTENT_ID = re.compile(r"[!-;=?-~]{1,250}\Z")  # printable ASCII but spaces, < and >
_ASCII_SPACE = re.compile(r"[ \t\r\n]+")
_HEADER_VALUE = validate.Length(max=compose.MAX_HEADER_CHARS)
_ADDRESSES = {"validate": validate.Length(max=compose.MAX_RECIPIENTS)}


class AttachmentInSchema(Schema):
    """One attachment of a message to put: its bytes in base64."""

    filename = Line(required=True, validate=validate.Length(min=1, max=200),
                    metadata={"example": "invoice.pdf"})
    content_type = Line(validate=validate.Regexp(_CONTENT_TYPE), metadata={
        "description": "type/subtype in lower case; guessed from the filename when absent "
                       "(application/octet-stream when it cannot be)",
        "example": "application/pdf"})
    content = Text(required=True, metadata={
        "description": "the bytes in base64 (standard alphabet, padded; line breaks allowed)"})
    content_id = Line(validate=validate.Regexp(_CONTENT_ID), metadata={
        "description": "a Content-ID without angle brackets: the HTML body shows the part "
                       "with `<img src=\"cid:<content_id>\">`", "example": "logo"})
    inline = JsonBoolean(metadata={
        "description": "shown in place by the HTML body rather than offered as a file; "
                       "default true when content_id is given"})

    @post_load
    def to_part(self, data: dict[str, Any], **_: Any) -> Part:
        """The part, its content decoded (a 400 naming `content` when it is not base64)."""
        try:
            content = base64.b64decode(_ASCII_SPACE.sub("", data["content"]), validate=True)
        except (binascii.Error, ValueError):
            raise ValidationError("not valid base64", "content") from None
        content_type = (data.get("content_type")
                        or mimetypes.guess_type(data["filename"])[0]
                        or "application/octet-stream")
        content_id = data.get("content_id")
        return Part(filename=data["filename"], content_type=content_type, content=content,
                    content_id=content_id,
                    inline=data.get("inline", content_id is not None) and content_id is not None)


class MessageInSchema(Schema):
    """A message to put into the inbox, as mail ingest will store it."""

    sender = Line(data_key="from", required=True, validate=_HEADER_VALUE, metadata={
        "description": "an address, or `Name <address>`", "example": "Acme <noreply@acme.test>"})
    to = fields.List(Line(validate=_HEADER_VALUE), **_ADDRESSES, metadata={
        "description": f"the To header's addresses (at most {compose.MAX_RECIPIENTS}); the "
                       "inbox's own address when absent or empty; the e-mail is stored in "
                       "this inbox whatever they say"})
    cc = fields.List(Line(validate=_HEADER_VALUE), **_ADDRESSES)
    subject = Line(load_default="", validate=_HEADER_VALUE)
    text = Text(metadata={"description": "the text/plain body"})
    html = Text(metadata={"description": "the text/html body (sanitised on arrival, as "
                                         "received HTML is)"})
    attachments = fields.List(fields.Nested(AttachmentInSchema), load_default=list,
                              validate=validate.Length(max=compose.MAX_ATTACHMENTS))
    headers = fields.Dict(keys=Line(validate=validate.Length(min=1, max=76)),
                          values=Line(validate=_HEADER_VALUE), load_default=dict, metadata={
        "description": f"extra headers by name (at most {compose.MAX_HEADERS}), e.g. "
                       "Reply-To, Message-ID, Date, List-Unsubscribe; not the ones the other "
                       "fields write (From, To, Cc, Subject, X-Tags) nor the MIME ones"})
    tags = fields.List(Line(validate=validate.Length(min=1, max=compose.MAX_TAG_CHARS)),
                       load_default=list, validate=validate.Length(max=compose.MAX_TAGS),
                       metadata={"description": "tags for the e-mail, written as its `X-Tags` "
                                                "header (comma-separated): no commas in a tag"})

    @validates("headers")
    def few_headers(self, value: dict[str, str], **_: Any) -> None:
        """At most MAX_HEADERS extra headers."""
        if len(value) > compose.MAX_HEADERS:
            raise ValidationError(f"at most {compose.MAX_HEADERS} headers")

    @post_load
    def to_composition(self, data: dict[str, Any], **_: Any) -> Composition:
        """The composition the model builds the message from."""
        return Composition(sender=data["sender"], to=data.get("to", []),
                           cc=data.get("cc", []), subject=data["subject"],
                           text=data.get("text"), html=data.get("html"),
                           attachments=data["attachments"],
                           headers=list(data["headers"].items()), tags=data["tags"])


def message_sized(view: F) -> F:
    """Let the request's body be as large as a message at the SMTP size limit in base64
    (4 bytes for 3) plus the usual request limit, before anything reads it."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        settings = runtime().settings
        request.max_content_length = (settings.http.max_request_bytes
                                      + settings.smtp.max_message_bytes * 4 // 3 + 4)
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@blp.route("/inboxes/<uuid:inbox_id>/messages")
class InboxMessages(MethodView):
    @message_sized
    @require_inbox(inboxes.MANAGE)
    @blp.arguments(MessageInSchema)
    @blp.response(201, EmailDetailSchema)
    @blp.alt_response(409, description="the inbox has expired")
    @blp.alt_response(413, description="the message is over the SMTP size limit")
    def post(self, composition: Composition, inbox: InboxAccess) -> Email:
        """Put an e-mail into an inbox, as though it had arrived over SMTP (a Burnbox extension)

        The answer is the stored e-mail's detail (its authentication results pending, as for
        any new mail); webhooks, the live stream and notifications hear of it as of any other."""
        rt, session = runtime(), db()
        email_id = put_message(rt.db, rt.storage, rt.settings, session, caller(), inbox.inbox,
                               composition)
        email = session.get(Email, email_id)
        if email is None:  # deleted in the moment since it was stored
            raise NotFound("email not found")
        return email
