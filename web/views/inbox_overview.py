"""An inbox's page in one call: /api/v1/inboxes/:id/overview (a Burnbox extension).

The web UI's inbox page needs the inbox, the first page of its e-mails, its chaos rules, its
SMTP credentials and a place to follow its stream from; asked one by one that was five calls
(and a second list read once the socket opened) on every load, so about 30 reloads in a minute
spent a user's whole per-user rate limit. This answer brings them together, each part authorized
as its own endpoint is: `team.emails.view` (the list, the stream) and `team.inboxes.view` (the
inbox, its chaos rules, its credentials) on the inbox.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields

from burnbox.kv import StoreUnavailable
from models.delivery import realtime as rt
from models.mail import chaos, emails, inboxes
from models.mail.inboxes import EMAILS_VIEW, InboxAccess
from models.mail.smtp_credentials import credential_of
from web.api import Blueprint
from web.context import db, inbox_caches, reads_only, runtime
from web.pagination import page_schema
from web.permissions import authorize_also, require_inbox
from web.views import chaos as chaos_views
from web.views import smtp_credentials as smtp_credentials_views
from web.views.emails import EmailListArgsSchema, EmailSummarySchema
from web.views.inboxes import InboxSchema

blp = Blueprint("inbox_overview", __name__, url_prefix="/api/v1",
                description="An inbox's page in one call (a Burnbox extension)")


class InboxOverviewSchema(Schema):
    """What an inbox's page shows, as the endpoints of each part answer it."""

    inbox = fields.Nested(InboxSchema, required=True, metadata={
        "description": "as GET /inboxes/:id"})
    emails = fields.Nested(page_schema(EmailSummarySchema), required=True, metadata={
        "description": "as GET /inboxes/:id/emails with the same page, per_page and q"})
    chaos = fields.Nested(chaos_views.ChaosRulesSchema, required=True, metadata={
        "description": "as GET /inboxes/:id/chaos"})
    smtp_credentials = fields.Nested(smtp_credentials_views.SmtpCredentialsSchema,
                                     required=True, metadata={
                                         "description": "as GET /inboxes/:id/smtp-credentials"})
    stream_since = fields.Integer(required=True, allow_none=True, metadata={
        "description": "where the inbox's stream stood before the e-mails were read: open "
                       "/ws/inboxes/:id with ?since= this number and every e-mail stored "
                       "after this answer arrives on the socket (one already listed may come "
                       "again: tell it by its id). Null when the stream's store did not "
                       "answer: then read the list again once the socket is open"})


@blp.route("/inboxes/<uuid:inbox_id>/overview")
class InboxOverview(MethodView):
    @reads_only
    @require_inbox(EMAILS_VIEW)
    @blp.arguments(EmailListArgsSchema, location="query")
    @blp.response(200, InboxOverviewSchema)
    def get(self, args: dict[str, Any], inbox: InboxAccess) -> dict[str, Any]:
        """Get an inbox's page in one call: the inbox, a page of its e-mails, its chaos rules,
        its SMTP credentials and where its stream stands (a Burnbox extension)

        Needs `team.emails.view` and `team.inboxes.view` on the inbox (an API key: both
        scopes); a caller lacking either gets the 403 its part's own endpoint gives."""
        authorize_also(inbox, inboxes.VIEW)
        # The stream's place first, the list after: an e-mail published after this read is
        # replayed to a socket opened with it, and one published before it was committed
        # before it, so the list below has it. The other order loses what lands in between.
        try:
            since: int | None = rt.KeptStream(runtime().store,
                                              rt.inbox_channel(inbox.inbox.id)).position()
        except StoreUnavailable:
            since = None
        found = emails.list_emails(db(), inbox.inbox.id, q=args.get("q"), page=args["page"],
                                   per_page=args["per_page"], cache=inbox_caches())
        return {
            "inbox": inbox.inbox,
            "emails": found,
            "chaos": chaos_views.rules_view(chaos.list_rules(db(), inbox_id=inbox.inbox.id)),
            "smtp_credentials": smtp_credentials_views.credentials_view(
                inbox, credential_of(db(), inbox.inbox), runtime().settings),
            "stream_since": since,
        }
