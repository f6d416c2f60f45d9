"""Release: /api/v1/emails/:id/release (send a captured e-mail on to real mailboxes), its
results at /api/v1/emails/:id/releases, the recipient allow-lists of orgs and teams at
/api/v1/orgs/:id/release-recipients and /api/v1/orgs/:id/teams/:tid/release-recipients, and
the auto-release rules of an inbox at /api/v1/inboxes/:id/release-rules and of a team's
domain assignment at /api/v1/orgs/:id/teams/:tid/domains/:did/release-rules.

Releasing needs `team.emails.release` (held by team leads, org owners and admins; in no key
scope unless ticked); reading the results `team.emails.view`. An org's list is read with
`org.settings.view` and set with `org.settings.manage`, a team's with `team.view` and
`team.settings.manage`. Auto-release rules are read with what reading the mail they cover
needs (`team.emails.view` on the inbox, `team.domains.view` for an assignment: people see
where their mail may go) and made, changed or deleted with `team.emails.release`
(`models.mail.release_rules`). Every guard (relay, recipients, allow-lists, the team's budget) lives
in `models.mail.release`; the delivery is the worker's (`tasks.release`).
"""

from __future__ import annotations

import uuid
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from models.domains.assignments import VIEW_ASSIGNMENTS, get_assignment
from models.mail import release as releases
from models.mail import release_rules as rules
from models.mail.emails import EmailAccess
from models.mail.entities import MAX_ADDRESS
from models.mail.inboxes import EMAILS_VIEW, InboxAccess
from models.mail.release_patterns import MAX_PATTERNS
from models.mail.tag_entities import MAX_RULE_QUERY
from models.tenancy.access import OrgAccess
from models.tenancy.teams import TeamAccess
from tasks.release import deliver_release
from web.api import Blueprint, MessageSchema
from web.context import db, reads_only, runtime
from web.fields import Line, Timestamp
from web.permissions import caller, require_email, require_inbox, require_org, require_team

blp = Blueprint("release", __name__, url_prefix="/api/v1",
                description="Release: send a captured e-mail on to real mailboxes, within "
                            "the recipients the operator, the org and the team allow")


class ReleaseSchema(Schema):
    """One release and how its delivery went."""

    id = fields.UUID(required=True)
    email_id = fields.UUID(required=True)
    recipients = fields.List(fields.String(), required=True)
    state = fields.String(required=True, metadata={
        "description": "queued (waiting for the relay, or for a next attempt), sent (the "
                       "relay accepted it) or failed (refused for good, or after the last "
                       "attempt)", "enum": list(releases.STATES)})
    attempts = fields.Integer(required=True, metadata={
        "description": f"attempts made (at most {releases.MAX_ATTEMPTS})"})
    relay_reply = fields.String(required=True, metadata={
        "description": "the relay's last reply, or why there was none; empty before the "
                       "first attempt; for a release a rule made that a guard refused, "
                       "`not released: ` and the refusal",
        "example": "250 2.0.0 Ok: queued as 4F2A1"})
    rule_id = fields.UUID(required=True, allow_none=True, metadata={
        "description": "the auto-release rule that made it; null when a person asked (or "
                       "the rule is gone)"})
    created_at = Timestamp(required=True)
    finished_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "when it was sent or failed; null while queued"})


class ReleasesSchema(Schema):
    releases = fields.List(fields.Nested(ReleaseSchema), required=True, metadata={
        "description": "the e-mail's releases, newest first"})


def _recipients(required: bool) -> fields.List:
    return fields.List(
        Line(validate=validate.Length(min=1, max=MAX_ADDRESS)), required=required,
        validate=validate.Length(min=1, max=releases.MAX_RECIPIENTS), metadata={
            "description": f"1 to {releases.MAX_RECIPIENTS} bare addresses, each allowed by "
                           "the operator's, the org's and the team's recipient patterns",
            "example": ["qa@company.example"]})


class ReleaseInSchema(Schema):
    """Where to send the e-mail."""

    recipients = _recipients(True)


_RULE_QUERY = dict(validate=validate.Length(min=1, max=MAX_RULE_QUERY), metadata={
    "description": "a search expression (the e-mail list's `q` syntax, `tag:` included): new "
                   "mail matching it is released", "example": "subject:invoice tag:billing"})


class ReleaseRuleInSchema(Schema):
    query = Line(required=True, **_RULE_QUERY)
    recipients = _recipients(True)


class ReleaseRuleUpdateSchema(Schema):
    query = Line(**_RULE_QUERY)
    recipients = _recipients(False)


class ReleaseRuleSchema(Schema):
    """An auto-release rule: new mail of its inbox (or of the inboxes made through its domain
    assignment) matching `query` is released to `recipients`."""

    id = fields.UUID(required=True)
    inbox_id = fields.UUID(required=True, allow_none=True, metadata={
        "description": "the inbox it belongs to; null for an assignment's rule"})
    assignment_id = fields.UUID(required=True, allow_none=True, metadata={
        "description": "the domain assignment it belongs to; null for an inbox's rule"})
    query = fields.String(required=True)
    recipients = fields.List(fields.String(), required=True)
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class ReleaseRuleListSchema(Schema):
    rules = fields.List(fields.Nested(ReleaseRuleSchema), required=True, metadata={
        "description": f"the rules, oldest first (at most {rules.MAX_RULES})"})


class PatternsInSchema(Schema):
    """The whole list of one level (an empty one removes it: the level above then decides)."""

    patterns = fields.List(
        Line(validate=validate.Length(min=1, max=MAX_ADDRESS)), required=True,
        validate=validate.Length(max=MAX_PATTERNS), metadata={
            "description": "`local@domain`, the local part may be `*` and the domain may start "
                           "with `*.` (names below it); each within the level above",
            "example": ["*@company.example"]})


class AllowedRecipientsSchema(Schema):
    """The recipient patterns of each level over an org or a team; null where a level set
    none (it follows the level above)."""

    operator = fields.List(fields.String(), required=True, metadata={
        "description": "the operator's (`release.allowed_recipients`): nothing escapes them"})
    org = fields.List(fields.String(), required=True, allow_none=True)
    team = fields.List(fields.String(), allow_none=True, metadata={
        "description": "on a team's list only"})


@blp.route("/emails/<uuid:email_id>/release")
class EmailRelease(MethodView):
    @require_email(releases.RELEASE)
    @blp.arguments(ReleaseInSchema)
    @blp.response(202, ReleaseSchema)
    def post(self, body: dict[str, Any], email: EmailAccess) -> dict[str, Any]:
        """Send an email on to real mailboxes through the release relay (a Burnbox extension)

        The stored message goes unchanged below Resent-* fields; its To stays as it was, the
        envelope goes to the recipients alone. 409 without a release relay, 403 for a
        recipient no allow-list allows, 429 once the team's recipients per window are spent;
        nothing is queued then. The answer is the queued release: poll the e-mail's releases
        for the relay's reply."""
        inbox = email.inbox.inbox
        queued = releases.request_release(db(), runtime().store, runtime().settings, caller(),
                                          email.email, inbox, body["recipients"])
        deliver_release.send(str(queued.id))
        return releases.release_view(queued)


@blp.route("/emails/<uuid:email_id>/releases")
class EmailReleases(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.response(200, ReleasesSchema)
    def get(self, email: EmailAccess) -> dict[str, Any]:
        """List an email's releases with their results (a Burnbox extension)"""
        return {"releases": [releases.release_view(one)
                             for one in releases.list_releases(db(), email.email)]}


@blp.route("/orgs/<uuid:org_id>/release-recipients")
class OrgReleaseRecipients(MethodView):
    @reads_only
    @require_org("org.settings.view")
    @blp.response(200, AllowedRecipientsSchema)
    def get(self, org: OrgAccess) -> dict[str, Any]:
        """Get the recipient patterns releases from an org's teams may reach"""
        return releases.allowed_view(db(), runtime().settings, org.org.id, None)

    @require_org("org.settings.manage")
    @blp.arguments(PatternsInSchema)
    @blp.response(200, AllowedRecipientsSchema)
    def put(self, body: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """Set an org's release recipient patterns (each within the operator's)"""
        releases.set_allowed_recipients(db(), caller(), runtime().settings, org_id=org.org.id,
                                        team_id=None, patterns=body["patterns"])
        return releases.allowed_view(db(), runtime().settings, org.org.id, None)


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/release-recipients")
class TeamReleaseRecipients(MethodView):
    @reads_only
    @require_team("team.view")
    @blp.response(200, AllowedRecipientsSchema)
    def get(self, team: TeamAccess) -> dict[str, Any]:
        """Get the recipient patterns releases from a team may reach"""
        return releases.allowed_view(db(), runtime().settings, team.team.org_id, team.team.id)

    @require_team("team.settings.manage")
    @blp.arguments(PatternsInSchema)
    @blp.response(200, AllowedRecipientsSchema)
    def put(self, body: dict[str, Any], team: TeamAccess) -> dict[str, Any]:
        """Set a team's release recipient patterns (each within its org's, or the operator's)"""
        releases.set_allowed_recipients(db(), caller(), runtime().settings,
                                        org_id=team.team.org_id, team_id=team.team.id,
                                        patterns=body["patterns"])
        return releases.allowed_view(db(), runtime().settings, team.team.org_id, team.team.id)


def _inbox_owner(inbox: InboxAccess) -> rules.RuleOwner:
    found = inbox.inbox
    return rules.RuleOwner(found.org_id, found.team_id, inbox_id=found.id)


def _assignment_owner(team: TeamAccess, domain_id: uuid.UUID) -> rules.RuleOwner:
    assignment = get_assignment(db(), team.team, domain_id)
    return rules.RuleOwner(team.team.org_id, team.team.id, assignment_id=assignment.id)


def _created(owner: rules.RuleOwner, body: dict[str, Any]) -> dict[str, Any]:
    return rules.rule_view(rules.create_release_rule(db(), caller(), runtime().settings, owner,
                                                     body["query"], body["recipients"]))


def _updated(owner: rules.RuleOwner, rule_id: uuid.UUID, body: dict[str, Any]
             ) -> dict[str, Any]:
    return rules.rule_view(rules.update_release_rule(
        db(), caller(), runtime().settings, owner, rules.owner_rule(db(), owner, rule_id), body))


def _deleted(owner: rules.RuleOwner, rule_id: uuid.UUID) -> dict[str, str]:
    rules.delete_release_rule(db(), caller(), owner, rules.owner_rule(db(), owner, rule_id))
    return {"message": "Release rule deleted"}


def _listed(owner: rules.RuleOwner) -> dict[str, Any]:
    return {"rules": [rules.rule_view(rule) for rule in rules.owner_rules(db(), owner)]}


_TOO_MANY = ("no release relay, or the inbox or assignment has as many rules as it may "
             "have")


@blp.route("/inboxes/<uuid:inbox_id>/release-rules")
class InboxReleaseRules(MethodView):
    @reads_only
    @require_inbox(EMAILS_VIEW)
    @blp.response(200, ReleaseRuleListSchema)
    def get(self, inbox: InboxAccess) -> dict[str, Any]:
        """List an inbox's auto-release rules (a Burnbox extension)"""
        return _listed(_inbox_owner(inbox))

    @require_inbox(releases.RELEASE)
    @blp.arguments(ReleaseRuleInSchema)
    @blp.response(201, ReleaseRuleSchema)
    @blp.alt_response(409, description=_TOO_MANY)
    def post(self, body: dict[str, Any], inbox: InboxAccess) -> dict[str, Any]:
        """Create an auto-release rule: the inbox's new mail matching its search is released
        to its recipients (a Burnbox extension)

        409 without a release relay, 403 for a recipient no allow-list allows. Each release
        it makes passes the guards of a
        manual one and shows in the e-mail's releases."""
        return _created(_inbox_owner(inbox), body)


@blp.route("/inboxes/<uuid:inbox_id>/release-rules/<uuid:rule_id>")
class InboxReleaseRule(MethodView):
    @require_inbox(releases.RELEASE)
    @blp.arguments(ReleaseRuleUpdateSchema)
    @blp.response(200, ReleaseRuleSchema)
    def patch(self, body: dict[str, Any], inbox: InboxAccess, rule_id: uuid.UUID
              ) -> dict[str, Any]:
        """Change an inbox's auto-release rule (a Burnbox extension)"""
        return _updated(_inbox_owner(inbox), rule_id, body)

    @require_inbox(releases.RELEASE)
    @blp.response(200, MessageSchema)
    def delete(self, inbox: InboxAccess, rule_id: uuid.UUID) -> dict[str, str]:
        """Delete an inbox's auto-release rule; its releases stay (a Burnbox extension)"""
        return _deleted(_inbox_owner(inbox), rule_id)


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/domains/<uuid:domain_id>/release-rules")
class AssignmentReleaseRules(MethodView):
    @reads_only
    @require_team(VIEW_ASSIGNMENTS)
    @blp.response(200, ReleaseRuleListSchema)
    def get(self, team: TeamAccess, domain_id: uuid.UUID) -> dict[str, Any]:
        """List the auto-release rules of a team's domain assignment (a Burnbox extension)"""
        return _listed(_assignment_owner(team, domain_id))

    @require_team(releases.RELEASE)
    @blp.arguments(ReleaseRuleInSchema)
    @blp.response(201, ReleaseRuleSchema)
    @blp.alt_response(409, description=_TOO_MANY)
    def post(self, body: dict[str, Any], team: TeamAccess, domain_id: uuid.UUID
             ) -> dict[str, Any]:
        """Create an auto-release rule for every inbox made through a team's domain
        assignment (a catch-all's among them; a Burnbox extension)

        409 without a release relay, 403 for a recipient no allow-list allows."""
        return _created(_assignment_owner(team, domain_id), body)


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/domains/<uuid:domain_id>/release-rules/"
           "<uuid:rule_id>")
class AssignmentReleaseRule(MethodView):
    @require_team(releases.RELEASE)
    @blp.arguments(ReleaseRuleUpdateSchema)
    @blp.response(200, ReleaseRuleSchema)
    def patch(self, body: dict[str, Any], team: TeamAccess, domain_id: uuid.UUID,
              rule_id: uuid.UUID) -> dict[str, Any]:
        """Change an auto-release rule of a team's domain assignment (a Burnbox extension)"""
        return _updated(_assignment_owner(team, domain_id), rule_id, body)

    @require_team(releases.RELEASE)
    @blp.response(200, MessageSchema)
    def delete(self, team: TeamAccess, domain_id: uuid.UUID, rule_id: uuid.UUID
               ) -> dict[str, str]:
        """Delete an auto-release rule of a team's domain assignment; its releases stay (a
        Burnbox extension)"""
        return _deleted(_assignment_owner(team, domain_id), rule_id)
