"""Seeing an e-mail as its reader would, Burnbox extensions: plain pages for test frameworks,
`/view/:id.html` (the sanitised HTML body as its reader's browser would show it) and
`/view/:id.txt` (the text body); and `GET /api/v1/emails/:id/html-source`, the HTML as the
sender wrote it, for the reading pane's source tab to show as text.

A Playwright or Selenium test opens them like any page, with the API's authentication sent as
a header (`Authorization: Bearer <bb_ key or access token>`, Playwright's `extraHTTPHeaders`),
and screenshots or reads them. They need what reading the e-mail through the API needs
(`team.emails.view` on its inbox, an API key of its team); any other e-mail id is a 404, as on
the API.

The HTML page is the very document the web UI's reading pane puts in its frame
(`web.mail_pages.frame_document`, the twin of `frameDocument` in web/ui/static/js/email.js), and
it is served under the same walls:
the frame's policy both as the response's `Content-Security-Policy` and as the document's first
element, plus the `sandbox` directive, which gives the page what the frame's empty `sandbox`
attribute gives it (no script, no form, no navigation of another window, no popup, an opaque
origin). Remote images stay blocked unless `?remote_images=true`, the pane's "Show remote
images". Both pages are UTF-8, never sniffed (`nosniff`), never framed, never cached.
"""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.views import MethodView
from marshmallow import Schema, fields

from models.errors import NotFound
from models.mail import emails
from models.mail.emails import EmailAccess
from models.mail.inboxes import EMAILS_VIEW
from models.mail.ingest.parse import original_html
from web.api import Blueprint
from web.context import reads_only, runtime
from web.mail_pages import FRAME_POLICY, FRAME_POLICY_IMAGES, frame_document, mail_page
from web.permissions import require_email

blp = Blueprint("viewing", __name__, description="Seeing an e-mail as its reader would: plain "
                "pages of its HTML and text for browser tests, and its HTML as sent")

class HtmlSourceSchema(Schema):
    """An e-mail's HTML as the sender wrote it."""

    html = fields.String(required=True, metadata={
        "description": "the HTML body as sent, decoded and NOT sanitised (style blocks, "
                       "scripts and all): data to show as text, never to render; empty when "
                       "the e-mail has no HTML part"})


class HtmlPageArgsSchema(Schema):
    """How to show the HTML page."""

    remote_images = fields.Boolean(load_default=False, metadata={
        "description": "load http(s) images (the reading pane's \"Show remote images\"); "
                       "blocked by default, as tracking pixels are"})


@blp.route("/view/<uuid:email_id>.html")
class EmailHtmlPage(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.arguments(HtmlPageArgsSchema, location="query")
    @blp.response(200, {"type": "string"}, content_type="text/html",
                  description="the sanitised HTML body as a page, under the reading pane "
                              "frame's policy and sandbox")
    @blp.alt_response(404, description="no such e-mail, none you may read, or no HTML part")
    def get(self, args: dict[str, Any], email: EmailAccess) -> Response:
        """An email's HTML body as a plain page, for browser tests (a Burnbox extension)"""
        html = email.email.body_html
        if not html:
            raise NotFound("email has no HTML part")
        policy = FRAME_POLICY_IMAGES if args["remote_images"] else FRAME_POLICY
        return mail_page(frame_document(html, policy), "text/html", policy)


@blp.route("/view/<uuid:email_id>.txt")
class EmailTextPage(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.response(200, {"type": "string"}, content_type="text/plain",
                  description="the text body, as UTF-8 text")
    @blp.alt_response(404, description="no such e-mail, none you may read, or no text part")
    def get(self, email: EmailAccess) -> Response:
        """An email's text body as a plain page, for browser tests (a Burnbox extension)"""
        text = email.email.body_text
        if not text:
            raise NotFound("email has no text part")
        return mail_page(text, "text/plain", "default-src 'none'")


@blp.route("/api/v1/emails/<uuid:email_id>/html-source")
class EmailHtmlSource(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.response(200, HtmlSourceSchema)
    @blp.alt_response(404, description="no such e-mail, or none you may read")
    def get(self, email: EmailAccess) -> dict[str, str]:
        """An email's HTML as the sender wrote it, unsanitised, to show as text (a Burnbox
        extension)

        Read from the raw message each time, as the HTML check reads it, so nothing more is
        stored per e-mail; cut as the stored bodies are
        (`models.mail.ingest.parse.MAX_BODY_CHARS`)."""
        with emails.open_object(runtime().storage, email.email.raw_key) as raw:
            return {"html": original_html(raw.read())}
