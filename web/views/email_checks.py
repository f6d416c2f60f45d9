"""The checks of an e-mail: its authentication results (SPF, DKIM, DMARC, ARC, computed after
it is stored; part of the e-mail's detail), the HTML compatibility check
(`GET /emails/:id/html-check`) and the link check (`GET`/`POST /emails/:id/link-check`), Burnbox
extensions with the access of reading the e-mail (`team.emails.view`). The rules live in
`models.mail.checks`; docs/mail-checks.md explains them.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields

from models.mail import emails
from models.mail.checks.authentication import auth_results_of
from models.mail.checks.html_check import check_html
from models.mail.checks.link_check import Outbound, last_link_check, run_link_check
from models.mail.emails import EmailAccess
from models.mail.entities import RESULTS as AUTH_RESULTS
from models.mail.inboxes import EMAILS_VIEW
from models.mail.ingest.parse import original_html
from web.api import Blueprint
from web.context import db, reads_only, runtime
from web.permissions import require_email

blp = Blueprint("email_checks", __name__, url_prefix="/api/v1",
                description="Checks of an email: HTML compatibility and links")

RESULT = {"description": "pass, fail, softfail, neutral, none, temperror or permerror",
          "enum": list(AUTH_RESULTS)}


class CheckResultSchema(Schema):
    result = fields.String(required=True, metadata=RESULT)
    domain = fields.String(required=True, metadata={"description": "the domain it is about"})
    reason = fields.String(required=True, metadata={
        "description": "why, in words (empty when there is nothing to add)"})


class SpfResultSchema(CheckResultSchema):
    """SPF of the connecting IP (RFC 7208) for the MAIL FROM domain, or the HELO name for an
    empty MAIL FROM."""

    identity = fields.String(required=True, metadata={
        "description": "which domain was checked: mailfrom or helo", "enum": ["mailfrom", "helo"]})
    ip = fields.String(required=True, metadata={"description": "the connecting IP address"})


class DkimResultSchema(CheckResultSchema):
    """One DKIM-Signature (RFC 6376); `domain` is its d=."""

    selector = fields.String(required=True, metadata={"description": "its s="})


class AlignmentSchema(Schema):
    spf = fields.String(required=True, metadata={"enum": ["relaxed", "strict"]})
    dkim = fields.String(required=True, metadata={"enum": ["relaxed", "strict"]})


class DmarcResultSchema(CheckResultSchema):
    """DMARC (RFC 7489); `domain` is the From domain."""

    record_domain = fields.String(required=True, metadata={
        "description": "where the policy record was found (the From domain or its "
                       "organisational domain); empty without one"})
    policy = fields.String(required=True, metadata={
        "description": "the published policy that applies (none, quarantine, reject); empty "
                       "without a record"})
    alignment = fields.Nested(AlignmentSchema, required=True, metadata={
        "description": "the record's alignment modes (relaxed without a record)"})
    spf_aligned = fields.Boolean(required=True)
    dkim_aligned = fields.Boolean(required=True)


class ArcResultSchema(CheckResultSchema):
    """The ARC chain (RFC 8617); `domain` is its latest sealer, `none` when there is no chain."""

    instances = fields.Integer(required=True, metadata={"description": "ARC sets in the chain"})


class AuthResultsSchema(Schema):
    """The authentication results, computed after the e-mail is stored."""

    status = fields.String(required=True, metadata={
        "enum": ["pending", "done", "unavailable"],
        "description": "pending until computed (usually within a second); unavailable for "
                       "e-mails stored before they existed"})
    spf = fields.Nested(SpfResultSchema, required=True, allow_none=True)
    dkim = fields.List(fields.Nested(DkimResultSchema), required=True, metadata={
        "description": "one per DKIM-Signature, top first; empty for an unsigned message"})
    dmarc = fields.Nested(DmarcResultSchema, required=True, allow_none=True)
    arc = fields.Nested(ArcResultSchema, required=True, allow_none=True)


class AuthResultsField(fields.Nested):
    """The e-mail's `auth_results`, or their pending shape while not computed."""

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return auth_results_of(obj)


class FamilyScoreSchema(Schema):
    family = fields.String(required=True, metadata={
        "description": "a caniemail.com client family: apple-mail, gmail, outlook, yahoo..."})
    score = fields.Float(required=True, metadata={
        "description": "0-100: the share of the features used that the family supports, "
                       "partial support counting half (100 when it has data on none)"})
    supported = fields.Integer(required=True)
    partial = fields.Integer(required=True)
    unsupported = fields.Integer(required=True)


class HtmlIssueSchema(Schema):
    slug = fields.String(required=True, metadata={"description": "the caniemail feature"})
    title = fields.String(required=True)
    category = fields.String(required=True, metadata={"enum": ["html", "css", "image",
                                                               "others"]})
    url = fields.String(required=True, metadata={"description": "its caniemail.com page"})
    unsupported = fields.List(fields.String(), required=True, metadata={
        "description": "families that do not support it"})
    partial = fields.List(fields.String(), required=True, metadata={
        "description": "families that support it partly or on some platforms only"})
    notes = fields.Dict(keys=fields.String(), values=fields.List(fields.String()),
                        required=True, metadata={"description": "caniemail's notes by family"})


class HtmlCheckSchema(Schema):
    html = fields.Boolean(required=True, metadata={
        "description": "false for an e-mail without an HTML body (nothing else is then given)"})
    features_used = fields.Integer(metadata={
        "description": "distinct caniemail features the HTML uses"})
    scores = fields.List(fields.Nested(FamilyScoreSchema))
    issues = fields.List(fields.Nested(HtmlIssueSchema), metadata={
        "description": "features used that some family does not fully support, the most "
                       "unsupported first"})


class LinkResultSchema(Schema):
    href = fields.String(required=True)
    ok = fields.Boolean(required=True, metadata={
        "description": "answered below 400 at the end of its redirects"})
    status = fields.Integer(required=True, allow_none=True, metadata={
        "description": "the first answer's status; null when there was none (see error)"})
    method = fields.String(required=True, allow_none=True, metadata={
        "description": "HEAD, or GET when the server refused HEAD (405, 501)"})
    redirect_to = fields.String(required=True, allow_none=True, metadata={
        "description": "the first answer's redirect target, absolute"})
    final_url = fields.String(required=True, metadata={
        "description": "the URL asked last, after following at most 5 redirects"})
    final_status = fields.Integer(required=True, allow_none=True)
    redirects = fields.Integer(required=True, metadata={"description": "redirects followed"})
    elapsed_ms = fields.Integer(required=True)
    error = fields.String(required=True, allow_none=True, metadata={
        "description": "why there was no answer: `address refused: ...` (the webhooks' SSRF "
                       "rules), `timeout`, a connection failure"})


class LinkCheckSchema(Schema):
    checked_at = fields.String(required=True, allow_none=True, metadata={
        "format": "date-time", "description": "when the last check ran; null when none did"})
    elapsed_ms = fields.Integer(required=True)
    skipped = fields.Integer(required=True, metadata={
        "description": "links beyond the first 50, not asked"})
    links = fields.List(fields.Nested(LinkResultSchema), required=True, metadata={
        "description": "one per link of the e-mail, in its order; empty when it has none"})


@blp.route("/emails/<uuid:email_id>/html-check")
class EmailHtmlCheck(MethodView):
    @reads_only
    @require_email(EMAILS_VIEW)
    @blp.response(200, HtmlCheckSchema)
    def get(self, email: EmailAccess) -> dict[str, Any]:
        """Check an email's HTML against caniemail.com's client support data (a Burnbox
        extension)

        The HTML as sent (style blocks included) is read from the raw message each time: the
        check is deterministic and takes milliseconds, so nothing is stored. An e-mail
        without HTML answers `{"html": false}`."""
        with emails.open_object(runtime().storage, email.email.raw_key) as raw:
            markup = original_html(raw.read())
        return check_html(markup)


@blp.route("/emails/<uuid:email_id>/link-check")
class EmailLinkCheck(MethodView):
    @require_email(EMAILS_VIEW)
    @blp.response(200, LinkCheckSchema)
    def get(self, email: EmailAccess) -> dict[str, Any]:
        """Read the result of an email's last link check (a Burnbox extension)"""
        return last_link_check(db(), email.email)

    @require_email(EMAILS_VIEW)
    @blp.arguments(Schema, required=False)
    @blp.response(200, LinkCheckSchema)
    def post(self, _body: dict[str, Any], email: EmailAccess) -> dict[str, Any]:
        """Check every link of an email now and keep the result (a Burnbox extension)

        HEAD, then GET where HEAD is refused; redirects followed (at most 5); at most 4 links
        at once, 5 s per link and 10 s in all; the first 50 links. Targets follow the SSRF
        rules of webhooks (internal addresses refused unless
        `webhooks.allow_private_targets`). Counted as one request of the caller's rate
        limit."""
        return run_link_check(db(), email.email, Outbound.of(runtime().settings))
