"""Capture credentials: /api/v1/inboxes/:id/smtp-credentials.

An inbox's SMTP username and secret, for an application to send its mail to Burnbox as to any
submission server: read (GET: the username and the server's settings, never the secret),
create or rotate (POST: the secret shown this once) and revoke (DELETE). Reading needs
`team.inboxes.view` on the inbox, changing `team.inboxes.manage`. The rules (the username,
the secret, rotation) live in `models.mail.smtp_credentials`, the SMTP side in mailin/logins.py.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields

from burnbox.settings import Settings
from models.mail import inboxes
from models.mail.inboxes import InboxAccess
from models.mail.smtp_credentials import (
    SmtpCredential,
    credential_of,
    issue_credential,
    revoke_credential,
)
from web.api import Blueprint, MessageSchema
from web.context import db, reads_only, runtime
from web.fields import Timestamp
from web.permissions import caller, require_inbox

blp = Blueprint("smtp_credentials", __name__, url_prefix="/api/v1",
                description="Capture credentials: an inbox's SMTP login, to capture an "
                            "application's mail whoever it is addressed to")


class SmtpCredentialsSchema(Schema):
    """An inbox's credentials as an application's mail settings ask for them."""

    host = fields.String(required=True, metadata={
        "description": "the SMTP server's name (`smtp.hostname`)", "example": "localhost"})
    port = fields.Integer(required=True, metadata={"description": "its port (`smtp.port`)",
                                                   "example": 2525})
    starttls = fields.Boolean(required=True, metadata={
        "description": "the server offers STARTTLS (AUTH is offered after it)"})
    auth_without_tls = fields.Boolean(required=True, metadata={
        "description": "AUTH is offered on a plain connection too (`smtp.auth_without_tls`)"})
    active = fields.Boolean(required=True, metadata={
        "description": "the inbox has credentials (false: none yet, or revoked)"})
    username = fields.String(required=True, metadata={
        "description": "the inbox's address (the username it has, or would have once created)",
        "example": "signup@acme.example"})
    created_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "when the current secret was made; null without credentials"})
    last_used_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "the last login with it (to the minute); null before the first"})


class IssuedSmtpCredentialsSchema(SmtpCredentialsSchema):
    """Credentials just created or rotated, with the secret: shown this once."""

    secret = fields.String(required=True, metadata={
        "description": "the SMTP password; only its hash is kept, so it is never shown again"})


def credentials_view(inbox: InboxAccess, credential: SmtpCredential | None,
                     settings: Settings) -> dict[str, Any]:
    """The answer of GET on an inbox's credentials (POST adds the secret)."""
    return {"host": settings.smtp.hostname, "port": settings.smtp.port,
            "starttls": bool(settings.smtp.tls_cert and settings.smtp.tls_key),
            "auth_without_tls": settings.smtp_auth_without_tls,
            "active": credential is not None,
            "username": credential.username if credential else inbox.inbox.full_address,
            "created_at": credential.created_at if credential else None,
            "last_used_at": credential.last_used_at if credential else None}


@blp.route("/inboxes/<uuid:inbox_id>/smtp-credentials")
class InboxSmtpCredentials(MethodView):
    @reads_only
    @require_inbox(inboxes.VIEW)
    @blp.response(200, SmtpCredentialsSchema)
    def get(self, inbox: InboxAccess) -> dict[str, Any]:
        """Get an inbox's SMTP credentials (never the secret); `active` false when it has none

        Answered without credentials too (an inbox's page asks on every load; a 404 there
        was an error in every browser console): the server's settings and the username the
        inbox would have."""
        return credentials_view(inbox, credential_of(db(), inbox.inbox), runtime().settings)

    @require_inbox(inboxes.MANAGE)
    @blp.response(201, IssuedSmtpCredentialsSchema)
    def post(self, inbox: InboxAccess) -> dict[str, Any]:
        """Create an inbox's SMTP credentials, or rotate them

        The answer holds the secret, shown this once; a rotation's old secret stops working at
        once, in every SMTP process."""
        issued = issue_credential(db(), caller(), inbox.inbox)
        return {**credentials_view(inbox, issued.credential, runtime().settings),
                "secret": issued.secret}

    @require_inbox(inboxes.MANAGE)
    @blp.response(200, MessageSchema)
    def delete(self, inbox: InboxAccess) -> dict[str, str]:
        """Revoke an inbox's SMTP credentials (they stop working at once)"""
        revoke_credential(db(), caller(), inbox.inbox)
        return {"message": "SMTP credentials revoked"}
