"""Schemas shared by the tenancy resource groups (members, invites, teams)."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from models.identity.users import MAX_EMAIL_LENGTH
from models.tenancy.invites import AUTH_METHODS
from web.fields import Line, Timestamp

ROLE = validate.Length(min=1, max=32)


class MemberSchema(Schema):
    """An org or team member."""

    user_id = fields.UUID(required=True)
    email = fields.String(required=True)
    display_name = fields.String(required=True)
    role = fields.String(required=True)
    created_at = Timestamp(required=True, metadata={"description": "when they joined"})


class MemberAddSchema(Schema):
    user_id = fields.UUID(metadata={"description": "the user to add; or give email"})
    email = Line(validate=validate.Length(min=1, max=MAX_EMAIL_LENGTH))
    role = Line(required=True, validate=ROLE)

    @validates_schema
    def user_named(self, data: dict[str, Any], **_kwargs: Any) -> None:
        """Exactly one of user_id and email names the user."""
        if ("user_id" in data) == ("email" in data):
            raise ValidationError("give exactly one of user_id and email", "user_id")


class RoleChangeSchema(Schema):
    role = Line(required=True, validate=ROLE)


class TeamAssignmentSchema(Schema):
    """A team the invitee joins on acceptance, with their team role."""

    team_id = fields.UUID(required=True)
    role = Line(required=True, validate=ROLE)


class InviteSchema(Schema):
    """A pending invitation."""

    id = fields.UUID(required=True)
    org_id = fields.UUID(required=True)
    email = fields.String(required=True)
    role = fields.String(required=True, metadata={"description": "the org role on acceptance"})
    team_assignments = fields.List(fields.Nested(TeamAssignmentSchema), required=True)
    auth_method = fields.String(required=True, metadata={"enum": list(AUTH_METHODS)})
    invited_by = fields.UUID(required=True, allow_none=True)
    created_at = Timestamp(required=True)
    expires_at = Timestamp(required=True)


class BulkItemSchema(Schema):
    """The outcome for one item, `input` as given."""

    input = fields.String(required=True)
    status = fields.String(required=True, metadata={
        "description": "the success status of the endpoint, skipped or failed"})
    id = fields.UUID(allow_none=True, metadata={"description": "the id created or affected"})
    message = fields.String(allow_none=True, metadata={"description": "why skipped or failed"})


class BulkResultSchema(Schema):
    """Per-item outcomes, in request order, and how many ended in each status."""

    results = fields.List(fields.Nested(BulkItemSchema), required=True)
    counts = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
