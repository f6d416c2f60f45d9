"""Downloads of stored mail: an e-mail's attachments (`GET /emails/:id/attachments/:aid`) and
its raw source (`GET /inboxes/:id/emails/:emailId/raw`, a Burnbox extension), with the access
of reading the e-mail (`team.emails.view`). `download` and `attachment` serve the other stored
objects too (web.views.files, the audit exports).

Attachments download with their stored content type, always as an attachment (never rendered
inline) and with `X-Content-Type-Options: nosniff`, so a hostile attachment cannot run in the
API's origin. On the s3 storage backend the download is a redirect (302) to a signed URL of the
bucket valid for `storage.signed_url_ttl`, so the bytes never pass through the web process.

The raw source is served by the web process on every storage backend, as `message/rfc822`
named `<email id>.eml`.
"""

from __future__ import annotations

import uuid
from urllib.parse import quote

from flask import Response, redirect, send_file
from flask.views import MethodView

from models.errors import NotFound
from models.mail import emails
from models.mail.emails import EmailAccess
from models.mail.inboxes import EMAILS_VIEW
from web.api import Blueprint
from web.context import runtime
from web.permissions import require_email

blp = Blueprint("email_downloads", __name__, url_prefix="/api/v1",
                description="Attachments and raw messages")


@blp.route("/emails/<uuid:email_id>/attachments/<uuid:attachment_id>")
class EmailAttachment(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.response(200, description="the attachment's bytes, as a download",
                  content_type="application/octet-stream")
    @blp.alt_response(302, description="s3 backend: a redirect to a short-lived signed URL")
    def get(self, email: EmailAccess, attachment_id: uuid.UUID) -> Response:
        """Download an attachment"""
        attachment = emails.get_attachment(email.email, attachment_id)
        return download(attachment.storage_key, attachment.content_type, attachment.filename)


@blp.route("/inboxes/<uuid:inbox_id>/emails/<uuid:email_id>/raw")
class EmailRaw(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="message/rfc822",
                  description="the message exactly as received over SMTP, as a download named "
                  "`<email id>.eml`")
    @blp.alt_response(404, description="no such e-mail in this inbox, or none you may read")
    def get(self, email: EmailAccess, inbox_id: uuid.UUID) -> Response:
        """Download an email's raw source (a Burnbox extension)"""
        found = email.email
        # The e-mail is authorized through its own inbox; the inbox of the path must be that
        # one too, or any readable inbox id would open every e-mail id the caller can guess.
        if found.inbox_id != inbox_id:
            raise NotFound("email not found")
        # Always through the web process, even on s3: a redirect to the bucket would drop the
        # promised headers, and the UI's fetch may only reach its own origin (CSP connect-src).
        # Streamed in blocks (send_file wraps the stream): a 25 MiB message is never held whole.
        response = _safe_download(send_file(emails.open_object(runtime().storage, found.raw_key),
                                            mimetype="message/rfc822"))
        response.headers["Content-Disposition"] = attachment(f"{found.id}.eml")
        return response


def _safe_download(response: Response) -> Response:
    """`response` (stored mail bytes) made harmless in the API's origin: never sniffed, never
    framed, never scripted."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


def attachment(filename: str) -> str:
    """A `Content-Disposition` offering the body as a file named `filename` (RFC 6266): the
    name always quoted, every character but printable ASCII (and `"`, `\\` and `/`) as "_"
    there, plus `filename*` in UTF-8 when that changed the name."""
    plain = "".join(char if " " <= char <= "~" and char not in '"\\/' else "_"
                    for char in filename)
    value = f'attachment; filename="{plain}"'
    if plain != filename:
        value += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return value


def download(key: str, content_type: str, filename: str) -> Response:
    """The stored object `key` as a download: a redirect to a signed URL when the storage has
    them (s3), else the bytes with exactly `content_type`, `Content-Disposition` as
    `attachment` writes it, never sniffed, never framed or scripted."""
    storage = runtime().storage
    url = storage.signed_url(key, runtime().settings.storage.signed_url_ttl)
    if url is not None:
        return redirect(url, 302)
    response = _safe_download(send_file(emails.open_object(storage, key), mimetype=content_type))
    # Set here, not by send_file: it appends "; charset=utf-8" to every text/* type, even one
    # naming its charset (the audit export's file said it twice), and leaves a plain name
    # unquoted.
    response.headers["Content-Type"] = content_type
    response.headers["Content-Disposition"] = attachment(filename)
    return response
