"""The signed-in user's sessions: /api/v1/auth/sessions. Revoking one stops its access tokens at
the next request."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import fields

from models.identity import sessions
from models.pagination import Page, paginate
from web.api import Blueprint, MessageSchema
from web.auth import current_session_id, current_user, origin, protected
from web.context import db
from web.pagination import PageArgsSchema, page_schema
from web.views.auth import SessionSchema

blp = Blueprint("sessions", __name__, url_prefix="/api/v1/auth/sessions",
                description="The signed-in user's sessions")


class MySessionSchema(SessionSchema):
    is_current = fields.Boolean(required=True,
                                metadata={"description": "the session making this request"})


class RevokedSchema(MessageSchema):
    revoked = fields.Integer(required=True, metadata={"description": "sessions revoked"})


@blp.route("")
class Sessions(MethodView):
    @protected(blp)
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(MySessionSchema))
    def get(self, args: dict[str, Any]) -> Page[Any]:
        """The active sessions, oldest first, the current one marked"""
        current = current_session_id()
        page = paginate(db(), sessions.active_sessions_query(current_user().id), args["page"],
                        args["per_page"])
        return dataclasses.replace(page, data=[
            {**sessions.session_summary(s), "is_current": s.id == current} for s in page.data])

    @protected(blp)
    @blp.response(200, RevokedSchema)
    def delete(self) -> dict[str, Any]:
        """Revoke every session except the current one"""
        count = sessions.revoke_other_sessions(db(), current_user(), current_session_id(),
                                               origin())
        return {"message": "Other sessions deleted", "revoked": count}


@blp.route("/<uuid:session_id>")
class SessionById(MethodView):
    @protected(blp)
    @blp.response(200, MessageSchema)
    @blp.alt_response(404, description="not an active session of this user")
    def delete(self, session_id: uuid.UUID) -> dict[str, str]:
        """Revoke one session (the current one too: that is a logout)"""
        sessions.revoke_session(db(), current_user(), session_id, origin())
        return {"message": "Session deleted"}
