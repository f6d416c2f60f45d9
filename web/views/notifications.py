"""The signed-in user's notifications: /api/v1/notifications.

They are created by the event fan-out (`models.delivery.notifications`) for the events the
user's preferences turn on (`/notifications/preferences`,
`models.delivery.notification_preferences`) and pushed live to `/ws/notifications`. Only a
signed-in user (JWT) reads them: an API key acts for a team, and a user's notifications span
every team they belong to, so keys get 403 here.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields

from models.delivery import notification_preferences, notifications
from models.delivery.notification_preferences import DEFAULTS
from models.delivery.notifications import Notification
from models.identity.users import User
from models.pagination import Page
from web.api import Blueprint, MessageSchema
from web.auth import current_session_id, current_user, protected
from web.context import db, reads_only
from web.fields import JsonBoolean, Timestamp
from web.pagination import PageArgsSchema, page_schema

blp = Blueprint("notifications", __name__, url_prefix="/api/v1/notifications",
                description="The signed-in user's notifications")


class NotificationSchema(Schema):
    """One event told to the user."""

    id = fields.UUID(required=True)
    type = fields.String(required=True, metadata={
        "description": "the event: email.received, inbox.created, inbox.expired or "
                       "audit.export_ready"})
    title = fields.String(required=True)
    data = fields.Dict(required=True, metadata={"description": "the event's data, as webhooks "
                                                               "receive it"})
    is_read = fields.Boolean(required=True)
    read_at = Timestamp(required=True, allow_none=True)
    created_at = Timestamp(required=True)


class NotificationListArgsSchema(PageArgsSchema):
    unread_only = fields.Boolean(load_default=False)


class UpdatedSchema(Schema):
    updated = fields.Integer(required=True, metadata={"description": "notifications marked read"})


class DeletedSchema(MessageSchema):
    deleted = fields.Integer(required=True, metadata={"description": "notifications deleted"})


# What each event that can notify is about, for the OpenAPI document.
ABOUT = {
    "email.received": "new mail in an inbox you created",
    "inbox.created": "an inbox you created",
    "inbox.expired": "an inbox you created expired",
    "audit.export_ready": "an audit export you asked for is ready",
}
# Event names hold dots, which marshmallow reads as a path: each is a field of its own name
# with underscores, under its event's name in JSON.
_FIELDS = {event: event.replace(".", "_") for event in DEFAULTS}


def _preference_fields(required: bool) -> dict[str, JsonBoolean]:
    return {field: JsonBoolean(required=required, data_key=event, metadata={
        "description": f"{ABOUT[event]} (default: {'on' if DEFAULTS[event] else 'off'})"})
        for event, field in _FIELDS.items()}


PreferencesSchema = Schema.from_dict(_preference_fields(required=True),
                                     name="NotificationPreferences")
PreferencesSchema.__doc__ = "Whether each event notifies you: your choice, else its default."
PreferencesChangeSchema = Schema.from_dict(_preference_fields(required=False),
                                           name="NotificationPreferencesChange")
PreferencesChangeSchema.__doc__ = ("The events whose choice you change (true: notify); the "
                                   "others keep theirs.")


def _as_fields(preferences: dict[str, bool]) -> dict[str, bool]:
    return {_FIELDS[event]: enabled for event, enabled in preferences.items()}


def signed_in_user() -> User:
    """The caller, who must be signed in with a JWT (403 for API keys)."""
    current_session_id()
    return current_user()


@blp.route("")
class Notifications(MethodView):
    @protected(blp)
    @blp.arguments(NotificationListArgsSchema, location="query")
    @blp.response(200, page_schema(NotificationSchema))
    @blp.alt_response(403, description="API keys cannot read notifications")
    def get(self, args: dict[str, Any]) -> Page[Notification]:
        """List your notifications, newest first"""
        return notifications.list_notifications(db(), signed_in_user().id, args["page"],
                                                args["per_page"],
                                                unread_only=args["unread_only"])

    @protected(blp)
    @blp.response(200, DeletedSchema)
    @blp.alt_response(403, description="API keys cannot read notifications")
    def delete(self) -> dict[str, Any]:
        """Delete all your notifications"""
        deleted = notifications.delete_all(db(), signed_in_user().id)
        return {"message": "Notifications deleted", "deleted": deleted}


@blp.route("/preferences")
class NotificationPreferences(MethodView):
    @reads_only
    @protected(blp)
    @blp.response(200, PreferencesSchema)
    @blp.alt_response(403, description="API keys cannot read notifications")
    def get(self) -> dict[str, bool]:
        """Which events notify you

        An inbox you created expiring and an audit export you asked for notify you by
        default; new mail and new inboxes do not (the inbox's page shows new mail live)."""
        return _as_fields(notification_preferences.preferences(db(), signed_in_user().id))

    @protected(blp)
    @blp.arguments(PreferencesChangeSchema)
    @blp.response(200, PreferencesSchema)
    @blp.alt_response(403, description="API keys cannot read notifications")
    def patch(self, body: dict[str, bool]) -> dict[str, bool]:
        """Choose which events notify you (the events left out keep their choice)

        Applies to notifications made from now on, on the list and on /ws/notifications
        alike; the ones you have stay."""
        events = {event: body[field] for event, field in _FIELDS.items() if field in body}
        return _as_fields(notification_preferences.set_preferences(db(), signed_in_user().id,
                                                                   events))


@blp.route("/mark-all-read")
class MarkAllRead(MethodView):
    @protected(blp)
    @blp.response(200, UpdatedSchema)
    @blp.alt_response(403, description="API keys cannot read notifications")
    def post(self) -> dict[str, int]:
        """Mark all your notifications read"""
        updated = notifications.mark_all_read(db(), signed_in_user().id)
        return {"updated": updated}


@blp.route("/<uuid:notification_id>/read")
class MarkRead(MethodView):
    @protected(blp)
    @blp.response(200, NotificationSchema)
    @blp.alt_response(403, description="API keys cannot read notifications")
    @blp.alt_response(404, description="not one of your notifications")
    def patch(self, notification_id: uuid.UUID) -> Notification:
        """Mark one notification read"""
        notification = notifications.mark_read(db(), signed_in_user().id, notification_id)
        return notification


@blp.route("/<uuid:notification_id>")
class NotificationById(MethodView):
    @protected(blp)
    @blp.response(200, MessageSchema)
    @blp.alt_response(403, description="API keys cannot read notifications")
    @blp.alt_response(404, description="not one of your notifications")
    def delete(self, notification_id: uuid.UUID) -> dict[str, str]:
        """Delete one notification"""
        notifications.delete_notification(db(), signed_in_user().id, notification_id)
        return {"message": "Notification deleted"}
