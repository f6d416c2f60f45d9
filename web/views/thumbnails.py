"""Thumbnails of image attachments: GET /api/v1/emails/:id/attachments/:aid/thumbnail (a
Burnbox extension).

A WebP of at most 240 pixels on its longer side, made by the worker after the message is
stored (models.mail.ingest.thumbnails); 404 until it is made, and for attachments that are no image
it can read (the attachment's `has_thumbnail` says which). Access is the attachment's:
`team.emails.view` on the e-mail's inbox, other orgs' ids 404. Served by the web process on
every storage backend, never sniffed, framed or scripted, and cached privately (a thumbnail
never changes).
"""

from __future__ import annotations

import uuid

from flask import Response, send_file
from flask.views import MethodView

from models.errors import NotFound
from models.mail import emails
from models.mail.emails import EmailAccess
from models.mail.inboxes import EMAILS_VIEW
from models.mail.ingest.thumbnails import THUMBNAIL_TYPE
from web.api import Blueprint
from web.context import reads_only, runtime
from web.permissions import require_email

blp = Blueprint("thumbnails", __name__, url_prefix="/api/v1",
                description="Thumbnails of image attachments (a Burnbox extension)")


@blp.route("/emails/<uuid:email_id>/attachments/<uuid:attachment_id>/thumbnail")
class AttachmentThumbnail(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.response(200, {"type": "string", "format": "binary"}, content_type=THUMBNAIL_TYPE,
                  description="the thumbnail (WebP, at most 240 px on its longer side)")
    @blp.alt_response(404, description="no such attachment, or no thumbnail (yet)")
    def get(self, email: EmailAccess, attachment_id: uuid.UUID) -> Response:
        """Get an image attachment's thumbnail (a Burnbox extension)"""
        attachment = emails.get_attachment(email.email, attachment_id)
        if attachment.thumbnail_key is None:
            raise NotFound("this attachment has no thumbnail")
        response = send_file(emails.open_object(runtime().storage, attachment.thumbnail_key),
                             mimetype=THUMBNAIL_TYPE, max_age=86_400)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response.cache_control.private = True
        return response
