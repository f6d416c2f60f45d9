"""Analytics: /api/v1/orgs/:id/analytics (totals), /emails-per-day, /insights, /domain-series,
and the team variants under /orgs/:id/teams/:tid/analytics (`team.analytics.view`, also an API
key scope).

Query parameters: `days` (1-365, default 30) and `tz`, the IANA time zone whose days and hours
the figures are cut in (when absent: the org's `timezone` setting, else UTC); anything else is a
400. The figures come from the
append-only counters (`models.analytics.figures`).
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, ValidationError, fields, validate

from burnbox.timeutil import utcnow
from models.analytics import figures
from models.analytics.window import DEFAULT_DAYS, MAX_DAYS, MIN_DAYS, Window, zone
from models.tenancy.access import OrgAccess
from models.tenancy.teams import TeamAccess
from web.api import Blueprint
from web.context import db
from web.fields import Line
from web.permissions import require_org, require_team

blp = Blueprint("analytics", __name__, url_prefix="/api/v1",
                description="Mail received and inboxes created, from append-only counters")

ORG = "/orgs/<uuid:org_id>/analytics"
TEAM = "/orgs/<uuid:org_id>/teams/<uuid:team_id>/analytics"


def _known_zone(name: str) -> None:
    try:
        zone(name)
    except ValueError as error:
        raise ValidationError(str(error)) from error


class WindowArgsSchema(Schema):
    """The days a question covers, and the time zone of their boundaries."""

    days = fields.Integer(load_default=DEFAULT_DAYS,
                          validate=validate.Range(min=MIN_DAYS, max=MAX_DAYS),
                          metadata={"description": "how many days, ending today (1-365)"})
    tz = Line(validate=_known_zone, metadata={
        "description": "IANA time zone of the day boundaries and hours (default: the org's "
                       "`timezone` setting, else UTC)"})


class CountSchema(Schema):
    count = fields.Integer(required=True)


class DomainCountSchema(CountSchema):
    domain = fields.String(required=True, metadata={"description": "a sender's domain"})


class DateCountSchema(CountSchema):
    date = fields.Date(required=True, metadata={"description": "a local date (YYYY-MM-DD)"})


class TeamStatsSchema(Schema):
    """A team's totals: `total_emails*`, `total_inboxes_created` and `total_storage_bytes` are
    counted (all time, never lowered by cleanup); the others are live counts."""

    total_emails = fields.Integer(required=True, metadata={
        "description": "e-mails ever received (same as total_emails_received)"})
    total_emails_received = fields.Integer(required=True)
    total_inboxes_created = fields.Integer(required=True)
    total_storage_bytes = fields.Integer(required=True, metadata={
        "description": "bytes of every e-mail ever received"})
    total_inboxes = fields.Integer(required=True, metadata={"description": "inboxes stored now"})
    active_inboxes = fields.Integer(required=True, metadata={"description": "not yet expired"})
    total_members = fields.Integer(required=True)
    top_sender_domains = fields.List(fields.Nested(DomainCountSchema), required=True, metadata={
        "description": "the 10 sender domains with the most e-mails, all time"})


class OrgStatsSchema(TeamStatsSchema):
    """An org's totals (the team totals plus the org's own live counts)."""

    total_domains = fields.Integer(required=True)
    total_teams = fields.Integer(required=True)
    storage_used_bytes = fields.Integer(required=True, metadata={
        "description": "bytes the org's stored e-mails hold in object storage now"})


class DayPointSchema(DateCountSchema):
    emails_received = fields.Integer(required=True, metadata={"description": "same as count"})
    inboxes_created = fields.Integer(required=True)
    storage_bytes = fields.Integer(required=True, metadata={
        "description": "bytes of the e-mails received that day"})


class EmailsPerDaySchema(Schema):
    data = fields.List(fields.Nested(DayPointSchema), required=True, metadata={
        "description": "one point per day, oldest first, zero-filled"})


class HourCountSchema(CountSchema):
    hour = fields.Integer(required=True, metadata={"description": "local hour of the day, 0-23"})


class ReceivingDomainNameSchema(Schema):
    domain_id = fields.UUID(required=True)
    domain = fields.String(required=True, allow_none=True, metadata={
        "description": "null once the domain is removed (its counts stay)"})


class ReceivingDomainSchema(ReceivingDomainNameSchema, CountSchema):
    pass


class InsightsSchema(Schema):
    inboxes_per_day = fields.List(fields.Nested(DateCountSchema), required=True)
    peak_hours = fields.List(fields.Nested(HourCountSchema), required=True, metadata={
        "description": "e-mails per local hour of the day, all 24"})
    domain_breakdown = fields.List(fields.Nested(ReceivingDomainSchema), required=True, metadata={
        "description": "the 10 receiving domains with the most e-mails"})
    top_senders = fields.List(fields.Nested(DomainCountSchema), required=True, metadata={
        "description": "the 10 sender domains with the most e-mails"})


class DomainSeriesItemSchema(ReceivingDomainNameSchema):
    total = fields.Integer(required=True)
    series = fields.List(fields.Nested(DateCountSchema), required=True)


class DomainSeriesSchema(Schema):
    data = fields.List(fields.Nested(DomainSeriesItemSchema), required=True, metadata={
        "description": "receiving domains with mail in the window, busiest first"})


def _window(args: dict[str, Any], scope: figures.Scope) -> Window:
    """The window of the query: `days` ending today in `tz`, else in the org's stored zone."""
    name = args.get("tz") or figures.org_zone(db(), scope.org_id)
    return Window.ending(utcnow(), args["days"], zone(name))


def _org_scope(org: OrgAccess) -> figures.Scope:
    return figures.Scope(org.org.id)


def _team_scope(team: TeamAccess) -> figures.Scope:
    return figures.Scope(team.org.org.id, team.team.id)


# The windowed figures: `schema` in `alt_response` documents the answer but does not dump it.
# The figures are already plain dicts of the schema's fields, and dumping a year of daily
# points cost more than computing them (see `web.encoding`).
ORG_VIEW = "org.analytics.view"
TEAM_VIEW = "team.analytics.view"


@blp.route(f"{ORG}/emails-per-day")
class OrgEmailsPerDay(MethodView):
    @require_org(ORG_VIEW)
    @blp.arguments(WindowArgsSchema, location="query")
    @blp.alt_response(200, schema=EmailsPerDaySchema, success=True)
    def get(self, args: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """The org's e-mails received and inboxes created per day"""
        scope = _org_scope(org)
        return {"data": figures.emails_per_day(db(), scope, _window(args, scope))}


@blp.route(f"{TEAM}/emails-per-day")
class TeamEmailsPerDay(MethodView):
    @require_team(TEAM_VIEW)
    @blp.arguments(WindowArgsSchema, location="query")
    @blp.alt_response(200, schema=EmailsPerDaySchema, success=True)
    def get(self, args: dict[str, Any], team: TeamAccess) -> dict[str, Any]:
        """The team's e-mails received and inboxes created per day"""
        scope = _team_scope(team)
        return {"data": figures.emails_per_day(db(), scope, _window(args, scope))}


@blp.route(f"{ORG}/insights")
class OrgInsights(MethodView):
    @require_org(ORG_VIEW)
    @blp.arguments(WindowArgsSchema, location="query")
    @blp.alt_response(200, schema=InsightsSchema, success=True)
    def get(self, args: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """The org's inboxes per day, peak hours, busiest domains and senders"""
        scope = _org_scope(org)
        return figures.insights(db(), scope, _window(args, scope))


@blp.route(f"{TEAM}/insights")
class TeamInsights(MethodView):
    @require_team(TEAM_VIEW)
    @blp.arguments(WindowArgsSchema, location="query")
    @blp.alt_response(200, schema=InsightsSchema, success=True)
    def get(self, args: dict[str, Any], team: TeamAccess) -> dict[str, Any]:
        """The team's inboxes per day, peak hours, busiest domains and senders"""
        scope = _team_scope(team)
        return figures.insights(db(), scope, _window(args, scope))


@blp.route(f"{ORG}/domain-series")
class OrgDomainSeries(MethodView):
    @require_org(ORG_VIEW)
    @blp.arguments(WindowArgsSchema, location="query")
    @blp.alt_response(200, schema=DomainSeriesSchema, success=True)
    def get(self, args: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """The org's e-mails per receiving domain per day"""
        scope = _org_scope(org)
        return {"data": figures.domain_series(db(), scope, _window(args, scope))}


@blp.route(ORG)
class OrgAnalytics(MethodView):
    @require_org(ORG_VIEW)
    @blp.response(200, OrgStatsSchema)
    def get(self, org: OrgAccess) -> dict[str, Any]:
        """The org's totals"""
        return figures.org_summary(db(), org.org.id)


@blp.route(TEAM)
class TeamAnalytics(MethodView):
    @require_team(TEAM_VIEW)
    @blp.response(200, TeamStatsSchema)
    def get(self, team: TeamAccess) -> dict[str, Any]:
        """The team's totals"""
        return figures.team_summary(db(), team.org.org.id, team.team.id)
