"""Tags: an e-mail's tags at /api/v1/emails/:id/tags, a team's tags (the tag cloud, rename,
delete) at /api/v1/orgs/:id/teams/:tid/tags, and the team's tag rules at .../tag-rules.

Tagging an e-mail needs what reading it needs (`team.emails.view`): a tag is a note on what
the caller can already see, like its read state. Renaming or deleting a tag changes every
e-mail of the team that carries it, and rules tag the team's new mail: those need
`team.settings.manage` (the team's lead). The rules themselves live in `models.mail.tags`.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from models.mail import tags
from models.mail.emails import EmailAccess
from models.mail.inboxes import EMAILS_VIEW
from models.mail.tag_entities import (
    MAX_RULE_QUERY,
    MAX_TAG_LENGTH,
    MAX_TAGS_PER_EMAIL,
    Tag,
    TagRule,
)
from models.tenancy.teams import TeamAccess
from web.api import Blueprint, MessageSchema
from web.context import db, reads_only
from web.fields import Line, Timestamp
from web.permissions import caller, require_email, require_team

blp = Blueprint("tags", __name__, url_prefix="/api/v1",
                description="Tags: labels on e-mails, set by hand, by X-Tags headers, "
                            "plus-addresses and the team's tag rules")

MANAGE_TAGS = "team.settings.manage"
_TAG = Line(validate=validate.Length(min=1, max=MAX_TAG_LENGTH))


def _tag_list(description: str, **kwargs: Any) -> fields.List:
    return fields.List(_TAG, validate=validate.Length(max=MAX_TAGS_PER_EMAIL),
                       metadata={"description": description}, **kwargs)


class EmailTagsInSchema(Schema):
    tags = _tag_list(f"tag names (at most {MAX_TAGS_PER_EMAIL}), case-blind: `Checkout` and "
                     "`checkout` are one tag", required=True)


class EmailTagsSchema(Schema):
    """An e-mail's tags after a change."""

    email_id = fields.UUID(required=True)
    tags = fields.List(fields.String(), required=True, metadata={
        "description": "its tags' names, in alphabetical order"})


class EmailTagRemovedSchema(MessageSchema, EmailTagsSchema):
    """An e-mail's tags after one was taken off, with the words every DELETE answers."""


class TagSchema(Schema):
    """A tag of a team, with how many of the team's e-mails carry it."""

    id = fields.UUID(required=True)
    name = fields.String(required=True, metadata={"example": "checkout"})
    count = fields.Integer(required=True, metadata={"description": "e-mails carrying it"})
    created_at = Timestamp(required=True)


class TagListSchema(Schema):
    tags = fields.List(fields.Nested(TagSchema), required=True, metadata={
        "description": "the team's tags in alphabetical order"})


class TagRenameSchema(Schema):
    name = Line(required=True, validate=validate.Length(min=1, max=MAX_TAG_LENGTH))


class TagDeletedSchema(MessageSchema):
    untagged = fields.Integer(required=True, metadata={"description": "e-mails that carried it"})


class TagRuleInSchema(Schema):
    query = Line(required=True, validate=validate.Length(min=1, max=MAX_RULE_QUERY), metadata={
        "description": "a search expression (the e-mail list's `q` syntax, without `tag:`)",
        "example": "from:shop.example subject:receipt"})
    tags = _tag_list("the tags new mail matching it gets", required=True)


class TagRuleUpdateSchema(Schema):
    query = Line(validate=validate.Length(min=1, max=MAX_RULE_QUERY))
    tags = _tag_list("the tags new mail matching it gets")


class TagRuleSchema(Schema):
    """A tag rule of a team: its new mail matching `query` gets `tags`."""

    id = fields.UUID(required=True)
    query = fields.String(required=True)
    tags = fields.List(fields.String(), required=True)
    created_at = Timestamp(required=True)


class TagRuleListSchema(Schema):
    rules = fields.List(fields.Nested(TagRuleSchema), required=True, metadata={
        "description": "the team's rules, oldest first"})


def _email_tags(email: EmailAccess, names: list[str], mode: str) -> dict[str, Any]:
    changed = tags.change_email_tags(db(), email.email, email.inbox.inbox.team_id, names, mode)
    return {"email_id": changed.id, "tags": changed.tags}


@blp.route("/emails/<uuid:email_id>/tags")
class EmailTags(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.arguments(EmailTagsInSchema)
    @blp.response(200, EmailTagsSchema)
    @blp.alt_response(409, description="the team has as many tags as it may have")
    def put(self, body: dict[str, Any], email: EmailAccess) -> dict[str, Any]:
        """Set an e-mail's tags (exactly these; an empty list takes them all off)"""
        return _email_tags(email, body["tags"], tags.REPLACE)

    @require_email(EMAILS_VIEW)
    @blp.arguments(EmailTagsInSchema)
    @blp.response(200, EmailTagsSchema)
    @blp.alt_response(409, description="the team has as many tags as it may have")
    def post(self, body: dict[str, Any], email: EmailAccess) -> dict[str, Any]:
        """Add tags to an e-mail (those it carries already stay)"""
        return _email_tags(email, body["tags"], tags.ADD)


@blp.route("/emails/<uuid:email_id>/tags/<path:name>")
class EmailTagByName(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.response(200, EmailTagRemovedSchema)
    def delete(self, email: EmailAccess, name: str) -> dict[str, Any]:
        """Take a tag off an e-mail (case-blind; a tag it does not carry changes nothing)"""
        return {"message": "Tag removed", **_email_tags(email, [name], tags.REMOVE)}


def _tag_view(tag: Tag, count: int) -> dict[str, Any]:
    return {"id": tag.id, "name": tag.name, "count": count, "created_at": tag.created_at}


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/tags")
class TeamTags(MethodView):
    @reads_only
    @require_team(EMAILS_VIEW)
    @blp.response(200, TagListSchema)
    def get(self, team: TeamAccess) -> dict[str, Any]:
        """List a team's tags with how many e-mails carry each (the tag cloud)"""
        return {"tags": [_tag_view(found.tag, found.count)
                         for found in tags.team_tags(db(), team.team.id)]}


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/tags/<uuid:tag_id>")
class TeamTagById(MethodView):
    @require_team(MANAGE_TAGS)
    @blp.arguments(TagRenameSchema)
    @blp.response(200, TagSchema)
    @blp.alt_response(409, description="another tag of the team has that name")
    def patch(self, body: dict[str, Any], team: TeamAccess, tag_id: uuid.UUID
              ) -> dict[str, Any]:
        """Rename a team's tag (every e-mail carrying it shows the new name)"""
        tag = tags.rename_tag(db(), caller(), team.team, tags.team_tag(db(), team.team.id,
                                                                       tag_id), body["name"])
        return _tag_view(tag, tags.tag_count(db(), tag.id))

    @require_team(MANAGE_TAGS)
    @blp.response(200, TagDeletedSchema)
    def delete(self, team: TeamAccess, tag_id: uuid.UUID) -> dict[str, Any]:
        """Delete a team's tag, taking it off every e-mail"""
        untagged = tags.delete_tag(db(), caller(), team.team,
                                   tags.team_tag(db(), team.team.id, tag_id))
        return {"message": "Tag deleted", "untagged": untagged}


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/tag-rules")
class TeamTagRules(MethodView):
    @reads_only
    @require_team(EMAILS_VIEW)
    @blp.response(200, TagRuleListSchema)
    def get(self, team: TeamAccess) -> dict[str, Any]:
        """List a team's tag rules"""
        return {"rules": tags.team_rules(db(), team.team.id)}

    @require_team(MANAGE_TAGS)
    @blp.arguments(TagRuleInSchema)
    @blp.response(201, TagRuleSchema)
    @blp.alt_response(409, description="the team has as many rules as it may have")
    def post(self, body: dict[str, Any], team: TeamAccess) -> TagRule:
        """Create a tag rule: the team's new mail matching its search gets its tags"""
        return tags.create_rule(db(), caller(), team.team, body["query"], body["tags"])


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/tag-rules/<uuid:rule_id>")
class TeamTagRuleById(MethodView):
    @require_team(MANAGE_TAGS)
    @blp.arguments(TagRuleUpdateSchema)
    @blp.response(200, TagRuleSchema)
    def patch(self, body: dict[str, Any], team: TeamAccess, rule_id: uuid.UUID) -> TagRule:
        """Change a tag rule's search or tags"""
        return tags.update_rule(db(), caller(), team.team,
                                tags.team_rule(db(), team.team.id, rule_id), body)

    @require_team(MANAGE_TAGS)
    @blp.response(200, MessageSchema)
    def delete(self, team: TeamAccess, rule_id: uuid.UUID) -> dict[str, str]:
        """Delete a tag rule (the tags it gave stay)"""
        tags.delete_rule(db(), caller(), team.team, tags.team_rule(db(), team.team.id, rule_id))
        return {"message": "Tag rule deleted"}
