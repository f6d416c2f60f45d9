"""Files: /api/v1/files?key=<storage key>, a passthrough for mail objects (raw messages and
attachments) kept in object storage (on s3, a redirect to a signed URL).

A key is served only to a caller who may read an inbox holding it (`team.emails.view` there, or
its creator); anything else, an unknown key included, is 404, so keys cannot be probed.
"""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.views import MethodView
from marshmallow import Schema, validate

from models.errors import DomainError, NotFound
from models.mail import emails
from models.mail.entities import MAX_KEY
from models.mail.inboxes import EMAILS_VIEW
from web.api import Blueprint
from web.context import db
from web.fields import Line
from web.permissions import authorize_inbox, declares
from web.views.email_downloads import download

blp = Blueprint("files", __name__, url_prefix="/api/v1/files",
                description="Stored mail objects (raw messages, attachments)")


class FileArgsSchema(Schema):
    key = Line(required=True, validate=validate.Length(min=1, max=MAX_KEY),
                        metadata={"description": "the object's storage key"})


@blp.route("")
class Files(MethodView):
    @declares(EMAILS_VIEW)
    @blp.arguments(FileArgsSchema, location="query")
    @blp.response(200, description="the object's bytes, as a download",
                  content_type="application/octet-stream")
    @blp.alt_response(302, description="s3 backend: a redirect to a short-lived signed URL")
    @blp.alt_response(404, description="no such object, or none you may read")
    def get(self, args: dict[str, Any]) -> Response:
        """Download a stored mail object"""
        stored = emails.find_object(db(), args["key"])
        for inbox_id in stored.inbox_ids if stored else ():
            try:
                authorize_inbox(inbox_id, EMAILS_VIEW)
            except DomainError:
                continue  # another recipient's copy may be one the caller can read
            return download(stored.key, stored.content_type, stored.filename)
        raise NotFound("file not found")
