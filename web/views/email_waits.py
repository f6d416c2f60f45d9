"""Waiting for e-mails: `GET /inboxes/:id/emails/wait`, `GET /orgs/:id/teams/:tid/emails/wait`
and `GET /inboxes/by-address/:address/emails/wait` (Burnbox extensions), with the access of
reading the e-mails (`team.emails.view`).

A wait answers 200 with `{"emails": [...detail...], "timed_out": false}` as soon as `count`
matching e-mails are stored, or `timed_out: true` with those found so far (possibly none) when
`timeout` passes: running out of time is an expected outcome for a test client, not an error.
See `web.waits`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate
from sqlalchemy import ColumnElement, and_

from models.delivery.realtime import inbox_channel, team_channel
from models.mail.emails import (
    MAX_WAIT_COUNT,
    WaitCriteria,
    inbox_scope,
    resolve_after,
    team_scope,
    waited_emails,
)
from models.mail.entities import MAX_ADDRESS, Email
from models.mail.inboxes import EMAILS_VIEW, InboxAccess, normalise_address, parse_ttl
from models.mail.ingest.catchall import receiving_team
from models.mail.tag_entities import MAX_TAG_LENGTH
from models.tenancy.teams import TeamAccess
from web import waits
from web.api import Blueprint
from web.context import db, reads_only, runtime
from web.fields import Line
from web.permissions import authorize_hidden_team, declares, require_inbox, require_team
from web.views.emails import EmailDetailSchema

blp = Blueprint("email_waits", __name__, url_prefix="/api/v1",
                description="Waiting for emails to arrive")


DEFAULT_WAIT = timedelta(seconds=30)


class WaitArgsSchema(Schema):
    from_address = Line(data_key="from", validate=validate.Length(max=MAX_ADDRESS), metadata={
        "description": "only e-mails whose From address contains this (case-blind)"})
    subject = Line(validate=validate.Length(max=500), metadata={
        "description": "only e-mails whose subject contains this (case-blind)"})
    q = Line(validate=validate.Length(max=500), metadata={
        "description": "only e-mails matching this full-text search (as the list's `q`)"})
    tag = Line(validate=validate.Length(max=MAX_TAG_LENGTH), metadata={
        "description": "only e-mails carrying this tag (case-blind)"})
    after = Line(validate=validate.Length(max=64), metadata={
        "description": "only e-mails received after this one (an e-mail id among those waited "
                       "for) or this ISO 8601 timestamp; without it, mail already there counts"})
    count = fields.Integer(load_default=1, validate=validate.Range(1, MAX_WAIT_COUNT), metadata={
        "description": "how many matching e-mails to wait for"})
    timeout = Line(validate=validate.Length(max=32), metadata={
        "description": "how long to wait, a Go duration (`30s` by default, at most the "
                       "`wait.max_timeout` setting, 5m by default)"})


class WaitResultSchema(Schema):
    emails = fields.List(fields.Nested(EmailDetailSchema), required=True, metadata={
        "description": "the first `count` matching e-mails, oldest first (fewer on a timeout)"})
    timed_out = fields.Boolean(required=True, metadata={
        "description": "true when `timeout` passed before `count` e-mails matched"})


def _wait(scope: ColumnElement[bool], channels: list[str], args: dict[str, Any]
          ) -> dict[str, Any]:
    """Wait for the e-mails `args` describe among `scope`, woken by `channels`, where mailin
    publishes new mail right after its commit (or the worker's fan-out, when mailin could
    not)."""
    ceiling = runtime().settings.wait.max_timeout
    timeout = parse_ttl(args.get("timeout"), "timeout", min(DEFAULT_WAIT, ceiling), ceiling)
    after = args.get("after")
    criteria = WaitCriteria(
        count=args["count"], from_address=args.get("from_address"), subject=args.get("subject"),
        q=args.get("q"), tag=args.get("tag"),
        after=resolve_after(db(), scope, after) if after else None)
    found, timed_out = waits.wait_for(channels, lambda: waited_emails(db(), scope, criteria),
                                      criteria.count, timeout)
    return {"emails": found, "timed_out": timed_out}


@blp.route("/inboxes/<uuid:inbox_id>/emails/wait")
class InboxEmailWait(MethodView):
    @reads_only
    @require_inbox(EMAILS_VIEW)
    @blp.arguments(WaitArgsSchema, location="query")
    @blp.response(200, WaitResultSchema)
    def get(self, args: dict[str, Any], inbox: InboxAccess) -> dict[str, Any]:
        """Wait until matching emails arrive in an inbox (or the timeout passes)"""
        inbox_id = inbox.inbox.id
        return _wait(inbox_scope(inbox_id), [inbox_channel(inbox_id)], args)


@blp.route("/orgs/<uuid:org_id>/teams/<uuid:team_id>/emails/wait")
class TeamEmailWait(MethodView):
    @reads_only
    @require_team(EMAILS_VIEW)
    @blp.arguments(WaitArgsSchema, location="query")
    @blp.response(200, WaitResultSchema)
    def get(self, args: dict[str, Any], team: TeamAccess) -> dict[str, Any]:
        """Wait until matching emails arrive in any inbox of a team (or the timeout passes)"""
        team_id = team.team.id
        return _wait(team_scope(team_id), [team_channel(team_id)], args)


# The one answer for an address nobody receives mail at and for one the caller may not wait at
# (another org's inbox or catch-all domain): no answer tells the two apart.
NO_RECEIVER = "no inbox or catch-all domain of yours receives mail at this address"


@blp.route("/inboxes/by-address/<string:address>/emails/wait")
class AddressEmailWait(MethodView):
    @reads_only
    @declares(EMAILS_VIEW)
    @blp.arguments(WaitArgsSchema, location="query")
    @blp.response(200, WaitResultSchema)
    @blp.alt_response(404, description="no live inbox of a team of yours has the address "
                                       "and no catch-all assignment of one catches its domain "
                                       "(the same answer whether another org's does or none)")
    def get(self, args: dict[str, Any], address: str) -> dict[str, Any]:
        """Wait until matching emails arrive at an address, also one whose inbox does not exist
        yet and is created by its first message at a catch-all domain (a Burnbox extension)"""
        normalised = normalise_address(address)
        team = authorize_hidden_team(receiving_team(db(), normalised) if normalised else None,
                                     EMAILS_VIEW, NO_RECEIVER)
        team_id = team.team.id
        return _wait(and_(team_scope(team_id), Email.to_address == normalised),
                     [team_channel(team_id)], args)
