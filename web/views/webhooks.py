"""A team's webhooks: /api/v1/orgs/:id/teams/:tid/webhooks...

The secret is the creator's (1 to 128 printable characters) or generated, and is in the creation
response only. URLs follow the rules of `models.delivery.webhooks` on create and update (400
`validation_error` naming the rule); archived teams take no new webhooks (409). The on/off flag
is `is_active`, also read and written as `active` (the reference system's name). Deliveries are
the log of every attempt, newest first; stats aggregate it. A finished delivery can be sent
again (`.../deliveries/:did/redeliver`) and a webhook pinged with a signed test event
(`.../ping`): one attempt each, made by the worker, answered 202 at once and logged like the
others (`models.delivery.redelivery`).
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, post_load, validate

from models.delivery import redelivery, webhooks
from models.delivery.webhooks import MAX_SECRET, MAX_URL, MIN_SECRET, DeliveryLogEntry, Webhook
from models.events import WEBHOOK_EVENTS
from models.pagination import Page
from models.tenancy.teams import TeamAccess
from tasks.webhook_manual import send_requested_attempt
from web.api import Blueprint, MessageSchema
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Timestamp, merge_aliases
from web.pagination import PageArgsSchema, page_schema
from web.permissions import require_team

blp = Blueprint("webhooks", __name__,
                url_prefix="/api/v1/orgs/<uuid:org_id>/teams/<uuid:team_id>/webhooks",
                description="Signed deliveries of a team's events to its URLs")



def _events(**options: Any) -> fields.List:
    """The events list of a request (the names are checked by the model, naming the rule)."""
    return fields.List(Line(metadata={"enum": list(WEBHOOK_EVENTS)}), metadata={
        "description": "the events to deliver, among " + ", ".join(WEBHOOK_EVENTS)}, **options)


class WebhookSchema(Schema):
    """A webhook (its secret is shown only when it is created)."""

    id = fields.UUID(required=True)
    team_id = fields.UUID(required=True)
    url = fields.String(required=True)
    events = fields.List(fields.String(), required=True)
    is_active = fields.Boolean(required=True)
    active = fields.Boolean(required=True, attribute="is_active", dump_only=True,
                            metadata={"description": "the same as is_active"})
    failure_count = fields.Integer(required=True, metadata={
        "description": "events whose every delivery attempt failed (cleared by webhook_retry "
                       "while it is 1 or 2); bookkeeping only, never disables the webhook"})
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class CreatedWebhookSchema(WebhookSchema):
    """A new webhook, with the secret that signs its deliveries (shown this once)."""

    secret = fields.String(required=True, metadata={
        "description": "HMAC-SHA256 key of X-Service-Signature (the one given, or a new "
                       "one); store it now"})


class _WebhookFlagSchema(Schema):
    """The on/off flag of a request, under either name."""

    is_active = JsonBoolean(metadata={"description": "deliver events (default true)"})
    active = JsonBoolean(metadata={"description": "the same as is_active"})

    @post_load
    def one_flag(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        """`active` read as `is_active`."""
        return merge_aliases(data, {"active": "is_active"})


class WebhookCreateSchema(_WebhookFlagSchema):
    url = Line(required=True, validate=validate.Length(min=1, max=MAX_URL))
    events = _events(required=True)
    secret = Line(metadata={
        "description": f"the signing secret, {MIN_SECRET} to {MAX_SECRET} printable characters "
                       "(32 or more random ones recommended); a new one when absent",
        "minLength": MIN_SECRET, "maxLength": MAX_SECRET})


class WebhookUpdateSchema(_WebhookFlagSchema):
    url = Line(validate=validate.Length(min=1, max=MAX_URL))
    events = _events()


class DeliveryLogSchema(Schema):
    """One delivery attempt."""

    id = fields.UUID(required=True)
    delivery_id = fields.UUID(required=True, metadata={
        "description": "the X-Service-Delivery-ID, the same on every attempt of one event"})
    webhook_id = fields.UUID(required=True)
    event = fields.String(required=True)
    attempt = fields.Integer(required=True, metadata={"description": "1, 2, 3..."})
    success = fields.Boolean(required=True, metadata={"description": "a 2xx within the timeout"})
    response_status = fields.Integer(required=True, allow_none=True)
    response_time_ms = fields.Integer(required=True, allow_none=True)
    error = fields.String(required=True, allow_none=True, metadata={
        "description": "why it failed: HTTP status, redirect, timeout, refused address..."})
    created_at = Timestamp(required=True, metadata={"description": "when the attempt began"})


class RequestedAttemptSchema(Schema):
    """An attempt the worker is to make: its outcome shows in the delivery log."""

    delivery_id = fields.UUID(required=True, metadata={
        "description": "the X-Service-Delivery-ID it is sent with"})
    webhook_id = fields.UUID(required=True)
    event = fields.String(required=True, metadata={
        "description": "the delivery's event; webhook.ping for a ping"})
    attempt = fields.Integer(required=True, metadata={
        "description": "the attempt number the log will show (1 for a ping)"})


class WebhookStatsSchema(Schema):
    """Delivery health over every logged attempt."""

    total_deliveries = fields.Integer(required=True, metadata={"description": "attempts"})
    success_count = fields.Integer(required=True)
    failure_count = fields.Integer(required=True)
    success_rate = fields.Float(required=True, metadata={"description": "percent, 0-100"})
    avg_response_time_ms = fields.Float(required=True, allow_none=True)
    last_delivery_at = Timestamp(required=True, allow_none=True)


def _allow_private() -> bool:
    return runtime().settings.webhooks.allow_private_targets


@blp.route("")
class Webhooks(MethodView):
    @require_team("team.webhooks.manage")
    @blp.arguments(WebhookCreateSchema)
    @blp.response(201, CreatedWebhookSchema)
    @blp.alt_response(409, description="the team is archived")
    def post(self, body: dict[str, Any], team: TeamAccess) -> Webhook:
        """Create a webhook; the response carries its signing secret, this once"""
        webhook = webhooks.create_webhook(db(), team, allow_private=_allow_private(), **body)
        return webhook

    @require_team("team.webhooks.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(WebhookSchema))
    def get(self, args: dict[str, Any], team: TeamAccess) -> Page[Webhook]:
        """List the team's webhooks"""
        return webhooks.list_webhooks(db(), team.team.id, args["page"], args["per_page"])


@blp.route("/<uuid:webhook_id>")
class WebhookById(MethodView):
    @require_team("team.webhooks.manage")
    @blp.arguments(WebhookUpdateSchema)
    @blp.response(200, WebhookSchema)
    @blp.alt_response(404, description="no such webhook in this team")
    def patch(self, body: dict[str, Any], team: TeamAccess, webhook_id: uuid.UUID) -> Webhook:
        """Change a webhook's URL, events or is_active"""
        webhook = webhooks.get_webhook(db(), team.team.id, webhook_id)
        updated = webhooks.update_webhook(db(), team, webhook, allow_private=_allow_private(),
                                          **body)
        return updated

    @require_team("team.webhooks.manage")
    @blp.response(200, MessageSchema)
    @blp.alt_response(404, description="no such webhook in this team")
    def delete(self, team: TeamAccess, webhook_id: uuid.UUID) -> dict[str, str]:
        """Delete a webhook with its deliveries and their log"""
        webhooks.delete_webhook(db(), team, webhooks.get_webhook(db(), team.team.id, webhook_id))
        return {"message": "Webhook deleted"}


@blp.route("/<uuid:webhook_id>/deliveries")
class WebhookDeliveries(MethodView):
    @require_team("team.webhooks.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(DeliveryLogSchema))
    @blp.alt_response(404, description="no such webhook in this team")
    def get(self, args: dict[str, Any], team: TeamAccess, webhook_id: uuid.UUID
            ) -> Page[DeliveryLogEntry]:
        """The webhook's delivery log: every attempt, newest first"""
        webhook = webhooks.get_webhook(db(), team.team.id, webhook_id)
        return webhooks.list_log(db(), webhook.id, args["page"], args["per_page"])


@blp.route("/<uuid:webhook_id>/stats")
class WebhookStats(MethodView):
    @require_team("team.webhooks.view")
    @blp.response(200, WebhookStatsSchema)
    @blp.alt_response(404, description="no such webhook in this team")
    def get(self, team: TeamAccess, webhook_id: uuid.UUID) -> dict[str, Any]:
        """Aggregate delivery health of a webhook"""
        webhook = webhooks.get_webhook(db(), team.team.id, webhook_id)
        return webhooks.webhook_stats(db(), webhook.id)


def _send(requested: redelivery.Requested) -> redelivery.Requested:
    """Have the worker make the attempt (the message goes once the request's writes commit)."""
    send_requested_attempt.send(str(requested.delivery_id), requested.attempt)
    return requested


@blp.route("/<uuid:webhook_id>/deliveries/<uuid:delivery_id>/redeliver")
class WebhookRedeliver(MethodView):
    @require_team("team.webhooks.manage")
    @blp.response(202, RequestedAttemptSchema)
    @blp.alt_response(404, description="no such webhook in this team, or delivery of it")
    @blp.alt_response(409, description="the delivery is still being attempted, the webhook is "
                                       "disabled, or the team archived")
    def post(self, team: TeamAccess, webhook_id: uuid.UUID, delivery_id: uuid.UUID
             ) -> redelivery.Requested:
        """Send a finished delivery again: same delivery id and payload, the next attempt number

        One attempt, made by the worker; its outcome appears in the delivery log. It is not
        retried and does not count in failure_count.
        """
        webhook = webhooks.get_webhook(db(), team.team.id, webhook_id)
        return _send(redelivery.redeliver(db(), team, webhook, delivery_id))


@blp.route("/<uuid:webhook_id>/ping")
class WebhookPing(MethodView):
    @require_team("team.webhooks.manage")
    @blp.response(202, RequestedAttemptSchema)
    @blp.alt_response(404, description="no such webhook in this team")
    @blp.alt_response(409, description="the webhook is disabled, or the team archived")
    def post(self, team: TeamAccess, webhook_id: uuid.UUID) -> redelivery.Requested:
        """Send the webhook a signed test event, webhook.ping, with {"webhook_id"} as its data

        One attempt, made by the worker; its outcome appears in the delivery log. It is not
        retried and does not count in failure_count.
        """
        webhook = webhooks.get_webhook(db(), team.team.id, webhook_id)
        return _send(redelivery.ping(db(), team, webhook))
