"""The audit trail: /api/v1/orgs/:id/audit (list), /audit/export (a streamed file) and
/api/v1/admin/audit (the platform's own events, for system administrators).

Filters are query parameters; an unknown severity or category, a malformed id or date is a 400.
The export streams through the request's database session, kept open until the body ends: a
server-side cursor feeds a chunked response, so memory stays flat whatever the row count. It
is not capped: see docs/audit.md.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from datetime import UTC
from typing import Any

from flask import Response, stream_with_context
from flask.views import MethodView
from marshmallow import Schema, fields, validate

from burnbox.timeutil import utcnow
from models.pagination import Page
from models.platform import audit_exports, audit_formats
from models.platform.audit import CATEGORIES, SEVERITIES
from models.platform.audit_log import AuditFilter, list_entries, stream_entries
from models.tenancy.access import OrgAccess
from tasks.exports import export_audit
from web.api import Blueprint
from web.auth import protected
from web.context import db, runtime
from web.fields import Line, Timestamp
from web.pagination import PageArgsSchema, page_schema
from web.permissions import require_org
from web.views.email_downloads import attachment, download

blp = Blueprint("audit", __name__, url_prefix="/api/v1",
                description="Who did what to which resource, from where")

_FILTERS = ("actor_id", "actor_email", "action", "resource_type", "resource_name", "severity",
            "category", "date_from", "date_to")


class AuditFilterSchema(Schema):
    """The filters of the audit list and export."""

    actor_id = fields.UUID(metadata={"description": "entries of this actor"})
    actor_email = Line(validate=validate.Length(min=1, max=254), metadata={
        "description": "entries of the actor with this e-mail (case-insensitive)"})
    action = Line(validate=validate.Length(min=1, max=64), metadata={
        "description": "an action name, e.g. inbox.delete"})
    resource_type = Line(validate=validate.Length(min=1, max=32))
    resource_name = Line(validate=validate.Length(min=1, max=255), metadata={
        "description": "a case-insensitive substring of the resource's name"})
    severity = Line(validate=validate.OneOf(SEVERITIES))
    category = Line(validate=validate.OneOf(CATEGORIES))
    date_from = fields.AwareDateTime(default_timezone=UTC, metadata={
        "description": "RFC 3339; entries at or after it"})
    date_to = fields.AwareDateTime(default_timezone=UTC, metadata={
        "description": "RFC 3339; entries before it"})


class AuditListArgsSchema(AuditFilterSchema, PageArgsSchema):
    """Filters and page of the audit list."""


class AuditExportArgsSchema(AuditFilterSchema):
    """Filters and format of an export."""

    format = Line(required=True, validate=validate.OneOf(audit_formats.FORMATS))


class AuditExportJobSchema(Schema):
    """An export job: `download_url` is set once it is done, until it expires."""

    id = fields.UUID(required=True)
    org_id = fields.UUID(required=True)
    status = fields.String(required=True, metadata={
        "enum": [audit_exports.PENDING, audit_exports.RUNNING, audit_exports.DONE,
                 audit_exports.FAILED]})
    format = fields.String(required=True, metadata={"enum": list(audit_formats.FORMATS)})
    filters = fields.Dict(required=True, metadata={"description": "the filters that were set"})
    entries = fields.Integer(required=True, allow_none=True, metadata={
        "description": "entries in the file, once done"})
    size_bytes = fields.Integer(required=True, allow_none=True)
    error = fields.String(required=True, allow_none=True, metadata={
        "description": "why it failed (status failed)"})
    created_at = Timestamp(required=True)
    finished_at = Timestamp(required=True, allow_none=True)
    expires_at = Timestamp(required=True, metadata={
        "description": "when the file is deleted and the download stops working"})
    download_url = fields.String(required=True, allow_none=True, metadata={
        "description": "the API path that downloads the file (same permission); null until "
                       "done and after expires_at"})


class AuditMetadataSchema(Schema):
    before = fields.Dict(allow_none=True, metadata={"description": "what changed, before"})
    after = fields.Dict(allow_none=True, metadata={"description": "what changed, after"})
    channel = fields.String(metadata={"description": "api or cli: the face of the change"})


class AuditEntrySchema(Schema):
    """One audited action."""

    id = fields.UUID(required=True)
    created_at = fields.String(required=True, metadata={
        "format": "date-time", "description": "ISO 8601 UTC with Z"})
    org_id = fields.UUID(required=True, allow_none=True, metadata={
        "description": "null for a platform event"})
    actor_id = fields.UUID(required=True, allow_none=True)
    actor_email = fields.String(required=True, allow_none=True)
    actor_display_name = fields.String(required=True, allow_none=True)
    action = fields.String(required=True)
    severity = fields.String(required=True, metadata={"enum": list(SEVERITIES)})
    category = fields.String(required=True, metadata={"enum": list(CATEGORIES)})
    resource_type = fields.String(required=True)
    resource_id = fields.String(required=True, allow_none=True)
    resource_name = fields.String(required=True, allow_none=True)
    ip_address = fields.String(required=True, allow_none=True, metadata={
        "description": "the request's resolved client address"})
    user_agent = fields.String(required=True, allow_none=True)
    metadata = fields.Nested(AuditMetadataSchema, required=True)


def _filter(args: dict[str, Any]) -> AuditFilter:
    return AuditFilter(**{name: args.get(name) for name in _FILTERS})


def _page(org_id: Any, args: dict[str, Any]) -> Page[dict[str, Any]]:
    page = list_entries(db(), org_id, _filter(args), args["page"], args["per_page"])
    return Page(data=[audit_formats.entry_record(entry) for entry in page.data],
                total=page.total, page=page.page, per_page=page.per_page,
                total_capped=page.total_capped)


AuditPageSchema = page_schema(AuditEntrySchema, capped=True)


@blp.route("/orgs/<uuid:org_id>/audit")
class OrgAudit(MethodView):
    @require_org("org.audit.view")
    @blp.arguments(AuditListArgsSchema, location="query")
    @blp.response(200, AuditPageSchema)
    def get(self, args: dict[str, Any], org: OrgAccess) -> Page[dict[str, Any]]:
        """The org's audit trail, newest first, filtered"""
        return _page(org.org.id, args)


@blp.route("/orgs/<uuid:org_id>/audit/export")
class OrgAuditExport(MethodView):
    @require_org("org.audit.export")
    @blp.arguments(AuditExportArgsSchema, location="query")
    @blp.response(200, description="the matching entries, newest first, as a CSV file or a "
                  "JSON array (streamed)",
                  content_type="text/csv",
                  headers={"Content-Disposition": {
                      "description": 'attachment; filename="audit_export_<UTC stamp>.<format>"',
                      "schema": {"type": "string"}}})
    def get(self, args: dict[str, Any], org: OrgAccess) -> Response:
        """Export the org's audit trail (same filters as the list) as CSV or JSON"""
        format_, where, org_id = args["format"], _filter(args), org.org.id

        def body() -> Iterator[str]:
            # stream_with_context keeps the request, and so its session, open until the last
            # chunk is sent; the session closes at teardown as for any request.
            yield from audit_formats.chunks(format_, stream_entries(db(), org_id, where))

        name = audit_formats.filename(format_, utcnow())
        return Response(stream_with_context(body()), mimetype=None,
                        content_type=audit_formats.MEDIA_TYPES[format_],
                        headers={"Content-Disposition": attachment(name)})


def _job(export: audit_exports.AuditExport) -> dict[str, Any]:
    ready = export.status == audit_exports.DONE and export.expires_at > utcnow()
    return {"id": export.id, "org_id": export.org_id, "status": export.status,
            "format": export.format, "filters": export.filters, "entries": export.entries,
            "size_bytes": export.size_bytes, "error": export.error,
            "created_at": export.created_at, "finished_at": export.finished_at,
            "expires_at": export.expires_at,
            "download_url": audit_exports.download_path(export) if ready else None}


@blp.route("/orgs/<uuid:org_id>/audit/exports")
class OrgAuditExportJobs(MethodView):
    @require_org("org.audit.export")
    @blp.arguments(AuditExportArgsSchema)
    @blp.response(202, AuditExportJobSchema)
    def post(self, args: dict[str, Any], org: OrgAccess) -> dict[str, Any]:
        """Ask for an export of the org's audit trail written by a worker (same filters and
        formats as the streamed export); the caller is notified when it can be downloaded"""
        rt = runtime()
        export = audit_exports.request_export(
            db(), org.org.id, org.caller.user_id, org.caller.origin, args["format"],
            _filter(args), utcnow(), rt.settings.audit.export_ttl)
        export_audit.send(str(export.id))  # sent once the job's row commits
        return _job(export)

    @require_org("org.audit.export")
    @blp.arguments(PageArgsSchema, location="query")
    @blp.response(200, page_schema(AuditExportJobSchema))
    def get(self, args: dict[str, Any], org: OrgAccess) -> Page[dict[str, Any]]:
        """List the org's audit export jobs, newest first, until each expires"""
        found = audit_exports.list_exports(db(), org.org.id, args["page"], args["per_page"])
        return dataclasses.replace(found, data=[_job(export) for export in found.data])


@blp.route("/orgs/<uuid:org_id>/audit/exports/<uuid:export_id>")
class OrgAuditExportJob(MethodView):
    @require_org("org.audit.export")
    @blp.response(200, AuditExportJobSchema)
    @blp.alt_response(404, description="no such export in this org")
    def get(self, org: OrgAccess, export_id: uuid.UUID) -> dict[str, Any]:
        """An audit export job: its status, and its download link once done"""
        return _job(audit_exports.get_export(db(), org.org.id, export_id))


@blp.route("/orgs/<uuid:org_id>/audit/exports/<uuid:export_id>/download")
class OrgAuditExportDownload(MethodView):
    @require_org("org.audit.export")
    @blp.response(200, description="the export's file", content_type="text/csv")
    @blp.alt_response(302, description="s3 backend: a redirect to a short-lived signed URL")
    @blp.alt_response(404, description="no such export, not done yet, failed or expired")
    def get(self, org: OrgAccess, export_id: uuid.UUID) -> Response:
        """Download the file of a finished audit export job, until it expires"""
        export = audit_exports.get_export(db(), org.org.id, export_id)
        key = audit_exports.downloadable(export, utcnow())
        return download(key, audit_formats.MEDIA_TYPES[export.format],
                        audit_formats.filename(export.format, export.created_at))


@blp.route("/admin/audit")
class PlatformAudit(MethodView):
    @protected(blp, system_admin=True)
    @blp.arguments(AuditListArgsSchema, location="query")
    @blp.response(200, AuditPageSchema)
    def get(self, args: dict[str, Any]) -> Page[dict[str, Any]]:
        """The platform's events (registration, sign-in, password reset, account deletion,
        setup...): entries of no org, newest first, filtered"""
        return _page(None, args)
