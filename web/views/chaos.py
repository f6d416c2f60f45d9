"""Chaos rules: /api/v1/inboxes/:id/chaos, and the template rules of a domain assignment at
/api/v1/orgs/:id/teams/:tid/domains/:did/chaos (copied to the inboxes a catch-all
assignment creates).

A client sets the whole list at once (PUT), reads it (GET, with each rule's `fired` counter)
and clears it (DELETE). Setting or clearing needs `team.inboxes.manage` on the inbox, or
`team.domains.manage` on the team for an assignment; reading, the matching view permission.
The rules themselves (bounds, defaults, what a firing does) live in `models.mail.chaos`.
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields

from models.domains import assignments
from models.mail import chaos, inboxes
from models.mail.inboxes import InboxAccess
from models.tenancy.teams import TeamAccess
from web.api import Blueprint, MessageSchema
from web.context import db, reads_only
from web.fields import Line, Timestamp, WholeNumber
from web.permissions import caller, require_inbox, require_team

blp = Blueprint("chaos", __name__, url_prefix="/api/v1",
                description="Chaos rules: make the SMTP server fail on purpose")


class ChaosRuleInSchema(Schema):
    """One rule as a client writes it; the bounds are checked by the rules' module, and a
    broken one is a 400 whose details name it: `{"rules": {"<n>": {"<field>": [...]}}}`.
    What cannot be kept as written is refused, never rounded: a fraction where a whole number
    goes (`WholeNumber`), a delay finer than a millisecond."""

    stage = Line(required=True, metadata={
        "description": "rcpt (answers the inbox's RCPT TO only) or data (answers the message "
                       "as a whole, for every recipient)", "example": "rcpt"})
    action = Line(required=True, metadata={
        "description": "reply (with code), delay (the reply by delay_seconds, then carry on), "
                       "or close (the connection, after a 421)", "example": "reply"})
    code = WholeNumber(metadata={"description": "reply: 400-599", "example": 451})
    status = Line(metadata={"description": "reply: the enhanced status code, of the code's "
                                           "class (default 4.3.0 / 5.3.0)", "example": "4.7.1"})
    text = Line(metadata={"description": "reply: the text after the codes, printable ASCII "
                                         "(default \"Chaos rule\")"})
    delay_seconds = fields.Float(metadata={
        "description": f"delay: from {chaos.MIN_DELAY:g} to {chaos.MAX_DELAY:g} seconds, in "
                       "whole milliseconds", "example": 5})
    times = WholeNumber(metadata={
        "description": "fire for the next N messages (then the rule is spent); or give percent",
        "example": 2})
    percent = WholeNumber(metadata={
        "description": "fire for this share (0-100) of the messages; or give times"})


class ChaosRuleSchema(ChaosRuleInSchema):
    """A rule with what it did: how often it fired, when last, whether it is spent."""

    id = fields.UUID(required=True)
    fired = fields.Integer(required=True, metadata={"description": "times it fired"})
    spent = fields.Boolean(required=True, metadata={
        "description": "a times rule that fired as often as it may (it stays listed)"})
    last_fired_at = Timestamp(required=True, allow_none=True)


class ChaosRulesInSchema(Schema):
    rules = fields.List(fields.Nested(ChaosRuleInSchema), required=True, metadata={
        "description": f"the whole list, tried in order (at most {chaos.MAX_RULES}); empty "
                       "clears it"})


class ChaosRulesSchema(Schema):
    rules = fields.List(fields.Nested(ChaosRuleSchema), required=True)


def rules_view(rules: list[chaos.ChaosRule]) -> dict[str, Any]:
    """The answer of GET (and PUT) on a list of chaos rules."""
    return {"rules": [chaos.rule_view(rule) for rule in rules]}


@blp.route("/inboxes/<uuid:inbox_id>/chaos")
class InboxChaos(MethodView):
    @reads_only
    @require_inbox(inboxes.VIEW)
    @blp.response(200, ChaosRulesSchema)
    def get(self, inbox: InboxAccess) -> dict[str, Any]:
        """Get an inbox's chaos rules, with their counters"""
        return rules_view(chaos.list_rules(db(), inbox_id=inbox.inbox.id))

    @require_inbox(inboxes.MANAGE)
    @blp.arguments(ChaosRulesInSchema)
    @blp.response(200, ChaosRulesSchema)
    def put(self, body: dict[str, Any], inbox: InboxAccess) -> dict[str, Any]:
        """Set an inbox's chaos rules (the whole list; counters start again at 0)"""
        return rules_view(chaos.set_inbox_rules(db(), caller(), inbox.inbox, body["rules"]))

    @require_inbox(inboxes.MANAGE)
    @blp.response(200, MessageSchema)
    def delete(self, inbox: InboxAccess) -> dict[str, str]:
        """Clear an inbox's chaos rules"""
        chaos.set_inbox_rules(db(), caller(), inbox.inbox, [])
        return {"message": "Chaos rules cleared"}


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/domains/<uuid:domain_id>/chaos")
class AssignmentChaos(MethodView):
    @reads_only
    @require_team(assignments.VIEW_ASSIGNMENTS)
    @blp.response(200, ChaosRulesSchema)
    def get(self, team: TeamAccess, domain_id: uuid.UUID) -> dict[str, Any]:
        """Get the chaos rules a domain assignment gives the inboxes it creates as catch-all"""
        assignment = assignments.get_assignment(db(), team.team, domain_id)
        return rules_view(chaos.list_rules(db(), assignment_id=assignment.id))

    @require_team("team.domains.manage")
    @blp.arguments(ChaosRulesInSchema)
    @blp.response(200, ChaosRulesSchema)
    def put(self, body: dict[str, Any], team: TeamAccess, domain_id: uuid.UUID
            ) -> dict[str, Any]:
        """Set the chaos rules a catch-all domain assignment copies to each inbox it creates"""
        assignment = assignments.get_assignment(db(), team.team, domain_id)
        return rules_view(chaos.set_assignment_rules(db(), caller(), assignment, body["rules"]))

    @require_team("team.domains.manage")
    @blp.response(200, MessageSchema)
    def delete(self, team: TeamAccess, domain_id: uuid.UUID) -> dict[str, str]:
        """Clear a domain assignment's chaos rules"""
        assignment = assignments.get_assignment(db(), team.team, domain_id)
        chaos.set_assignment_rules(db(), caller(), assignment, [])
        return {"message": "Chaos rules cleared"}
