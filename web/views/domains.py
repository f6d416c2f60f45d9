"""Domains of an org: /api/v1/orgs/:id/domains...

Registration, listing (`?q=` on name and description, `?status=`), edits, deletion with its
impact, verification requests and history, bulk verify/delete, and the system administrators'
transfer to another org. `POST .../verify` checks DNS in the request (each look-up bounded by
`dns.timeout`) and answers 200 with the domain and the check it recorded; bulk verify and the
periodic re-checks run in the worker. `mx_target` is the `smtp.hostname` setting, as DNS writes
it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, post_dump, validate

from models.domains import domains
from models.domains.domains import (
    MAX_BULK,
    MAX_DESCRIPTION,
    STATUSES,
    TRIGGERS,
    BulkResult,
    Domain,
    DomainCheck,
)
from models.domains.verification import check_domain_now, list_checks, mx_target
from models.lifecycle import domains as domain_lifecycle
from models.pagination import Page
from models.tenancy.access import OrgAccess
from web.api import Blueprint, MessageSchema
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Text, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import require_org
from web.views.teams import TransferSchema

blp = Blueprint("domains", __name__, url_prefix="/api/v1/orgs/<uuid:org_id>/domains",
                description="Domains of an org: registration, DNS verification, deletion")

SETTINGS_HELP = ("inbox_default_ttl, inbox_max_ttl (Go durations), max_inboxes_per_domain "
                 "(0: no limit); merged into the stored ones, null clears one")


class DomainSchema(Schema):
    """A domain with its verification state."""

    id = fields.UUID(required=True)
    org_id = fields.UUID(required=True)
    domain_name = fields.String(required=True, metadata={
        "description": "lower case, IDNA A-labels, no final dot"})
    description = fields.String(required=True)
    status = fields.String(required=True, metadata={"enum": list(STATUSES)})
    mx_verified = fields.Boolean(required=True)
    txt_verified = fields.Boolean(required=True)
    spf_verified = fields.Boolean(required=True)
    verification_record = fields.String(required=True, metadata={
        "description": "the TXT record to publish on the domain"})
    trusted = fields.Function(
        lambda domain: domains.is_trusted(runtime().settings, domain.domain_name),
        required=True, metadata={"type": "boolean", "description": (
            "the operator trusts this name (domains.trusted): verified without DNS, and DNS "
            "checks never change its status")})
    mx_target = fields.Function(lambda _domain: mx_target(runtime().settings), required=True,
                                metadata={"type": "string",
                                          "description": "the host every MX record must name"})
    dns_last_checked_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "the last time DNS answered a check"})
    settings = fields.Dict(required=True, metadata={
        "description": "the domain's overrides of the settings cascade"})
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class DomainCreateSchema(Schema):
    domain_name = Line(required=True, validate=validate.Length(min=1, max=300))
    description = Text(load_default="", validate=validate.Length(max=MAX_DESCRIPTION))


class DomainUpdateSchema(Schema):
    description = Text(validate=validate.Length(max=MAX_DESCRIPTION))
    settings = fields.Dict(keys=Line(), metadata={"description": SETTINGS_HELP})


class DomainListArgsSchema(PageArgsSchema):
    q = Line(validate=validate.Length(max=253), metadata={
        "description": "part of the name or description, any case"})
    status = Line(validate=validate.OneOf(STATUSES))


class ForceArgsSchema(Schema):
    force = fields.Boolean(load_default=False, metadata={
        "description": "delete even when the domain has active inboxes"})


class DomainImpactSchema(Schema):
    """What deleting the domain would remove (inbox and e-mail counts are 0 until inboxes
    exist)."""

    assignments = fields.Integer(required=True)
    inboxes = fields.Integer(required=True)
    active_inboxes = fields.Integer(required=True)
    emails = fields.Integer(required=True)


class DomainCheckSchema(Schema):
    """One verification check and the state it left the domain in."""

    id = fields.UUID(required=True)
    domain_id = fields.UUID(required=True)
    trigger = fields.String(required=True, metadata={"enum": list(TRIGGERS)})
    status = fields.String(required=True, metadata={"enum": list(STATUSES)})
    mx_verified = fields.Boolean(required=True)
    txt_verified = fields.Boolean(required=True)
    spf_verified = fields.Boolean(required=True)
    details = fields.Dict(required=True, metadata={
        "description": "expected and found records; errors and kept_previous after lookup "
                       "errors; for an operator check of a trusted domain, trusted and "
                       "requested_by (what asked for the check) instead"})
    checked_at = Timestamp(required=True)


@dataclass(frozen=True)
class CheckedDomain:
    """A domain and the check just run on it: reads as the domain, plus `check`."""

    domain: Domain
    check: DomainCheck

    def __getattr__(self, name: str) -> Any:
        return getattr(self.domain, name)


class DomainVerifiedSchema(DomainSchema):
    """The domain as a check left it, and that check (its history row)."""

    check = fields.Nested(DomainCheckSchema, required=True, metadata={
        "description": "the check this request ran, as the verification history lists it"})


class BulkIdsSchema(Schema):
    domain_ids = fields.List(fields.UUID(), required=True,
                             validate=validate.Length(min=1, max=MAX_BULK))


class BulkDeleteSchema(BulkIdsSchema):
    force = JsonBoolean(load_default=False, metadata={
        "description": "delete domains that have active inboxes too"})


class DomainBulkItemSchema(Schema):
    """The outcome for one id."""

    id = fields.UUID(required=True)
    status = fields.String(required=True, metadata={"enum": ["ok", "not_found", "failed"]})
    error = fields.String(metadata={"description": "why it failed (only when failed)"})

    @post_dump
    def drop_empty_error(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        """`error` appears only on failed items."""
        if data.get("error") is None:
            data.pop("error", None)
        return data


class DomainBulkResultSchema(Schema):
    """Every id once, in request order, and how many ended in each status."""

    results = fields.List(fields.Nested(DomainBulkItemSchema), required=True)
    counts = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)


def _bulk(results: list[BulkResult]) -> dict[str, Any]:
    return {"results": results, "counts": dict(Counter(result.status for result in results))}


@blp.route("")
class Domains(MethodView):
    @require_org("org.domains.manage")
    @blp.arguments(DomainCreateSchema)
    @blp.response(201, DomainSchema)
    @blp.alt_response(409, description="the name is registered (by any org), or the org's "
                                       "max_domains is reached")
    def post(self, body: dict[str, Any], org: OrgAccess) -> Domain:
        """Register a domain (its first check runs in the background)"""
        domain = domains.register_domain(db(), runtime().settings, org.caller, org.org.id,
                                         body["domain_name"], body["description"])
        return domain

    @require_org("org.domains.view")
    @blp.arguments(DomainListArgsSchema, location="query")
    @blp.response(200, page_schema(DomainSchema))
    def get(self, args: dict[str, Any], org: OrgAccess) -> Page[Domain]:
        """List the org's domains"""
        return domains.list_domains(db(), org.org.id, args["page"], args["per_page"],
                                    q=args.get("q"), status=args.get("status"))


@blp.route("/<uuid:domain_id>")
class DomainById(MethodView):
    @require_org("org.domains.view")
    @blp.response(200, DomainSchema)
    def get(self, org: OrgAccess, domain_id: uuid.UUID) -> Domain:
        """Get a domain"""
        return domains.get_domain(db(), org.org.id, domain_id)

    @require_org("org.domains.manage")
    @blp.arguments(DomainUpdateSchema)
    @blp.response(200, DomainSchema)
    def patch(self, body: dict[str, Any], org: OrgAccess, domain_id: uuid.UUID) -> Domain:
        """Change a domain's description or settings"""
        domain = domains.update_domain(
            db(), runtime().settings, org.caller, domains.get_domain(db(), org.org.id, domain_id),
            description=body.get("description"), domain_settings=body.get("settings"))
        return domain

    @require_org("org.domains.manage")
    @blp.arguments(ForceArgsSchema, location="query")
    @blp.response(200, MessageSchema)
    @blp.alt_response(409, description="the domain has active inboxes (the body adds `impact`); "
                                       "retry with force=true")
    def delete(self, args: dict[str, Any], org: OrgAccess, domain_id: uuid.UUID) -> dict[str, str]:
        """Delete a domain with its assignments, history, inboxes and e-mails"""
        domain_lifecycle.delete_domain(db(), org.caller,
                                       domains.get_domain(db(), org.org.id, domain_id),
                                       force=args["force"])
        return {"message": "Domain deleted"}


@blp.route("/<uuid:domain_id>/verify")
class DomainVerify(MethodView):
    @require_org("org.domains.manage")
    @blp.response(200, DomainVerifiedSchema)
    def post(self, org: OrgAccess, domain_id: uuid.UUID) -> CheckedDomain:
        """Check the domain's DNS now; answers with the domain and the check's result"""
        domain = domains.get_domain(db(), org.org.id, domain_id)
        check = check_domain_now(db(), runtime().settings, org.caller, domain.id)
        return CheckedDomain(domain, check)


@blp.route("/<uuid:domain_id>/verification-history")
class DomainHistory(MethodView):
    @require_org("org.domains.view")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(DomainCheckSchema))
    def get(self, args: dict[str, Any], org: OrgAccess, domain_id: uuid.UUID
            ) -> Page[DomainCheck]:
        """List a domain's verification checks, newest first"""
        return list_checks(db(), domains.get_domain(db(), org.org.id, domain_id), args["page"],
                           args["per_page"])


@blp.route("/<uuid:domain_id>/impact")
class DomainImpact(MethodView):
    @require_org("org.domains.view")
    @blp.response(200, DomainImpactSchema)
    def get(self, org: OrgAccess, domain_id: uuid.UUID) -> dict[str, int]:
        """Count what deleting the domain would remove"""
        return domain_lifecycle.domain_impact(
            db(), domains.get_domain(db(), org.org.id, domain_id))


@blp.route("/<uuid:domain_id>/transfer")
class DomainTransfer(MethodView):
    @require_org(None, system_admin=True)
    @blp.arguments(TransferSchema)
    @blp.response(200, DomainSchema)
    def post(self, body: dict[str, Any], org: OrgAccess, domain_id: uuid.UUID) -> Domain:
        """Move a domain to another org, dropping its team assignments (system administrators)"""
        domain = domain_lifecycle.transfer_domain(db(), org.caller,
                                                  domains.get_domain(db(), org.org.id, domain_id),
                                                  body["target_org_id"])
        return domain


@blp.route("/bulk-verify")
class DomainBulkVerify(MethodView):
    @require_org("org.domains.manage")
    @blp.arguments(BulkIdsSchema)
    @blp.response(200, DomainBulkResultSchema)
    def post(self, body: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """Request a DNS check of many domains (each ok or not_found)"""
        results = domains.bulk_verify(db(), org.caller, org.org.id, body["domain_ids"])
        return _bulk(results)


@blp.route("/bulk-delete")
class DomainBulkDelete(MethodView):
    @require_org("org.domains.manage")
    @blp.arguments(BulkDeleteSchema)
    @blp.response(200, DomainBulkResultSchema)
    def post(self, body: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """Delete many domains (each ok, not_found or failed)"""
        results = domain_lifecycle.bulk_delete(db(), org.caller, org.org.id, body["domain_ids"],
                                      force=body["force"])
        return _bulk(results)

