"""First-run setup: /api/v1/setup/... Public until setup completes; afterwards the status stays
public (without the datastores), completing again is a 409, and the connectivity checks need a
system administrator.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from burnbox.mailer import Relay
from models.admin import setup
from models.db import end_read_only_transaction
from models.errors import Forbidden, ValidationFailed
from web.api import Blueprint
from web.auth import current_principal, origin, token_body
from web.context import db, runtime
from web.fields import Email, JsonBoolean, Line, Timestamp
from web.ratelimit import rate_limited
from web.views.auth import PASSWORD, TokensSchema, UserSchema

blp = Blueprint("setup", __name__, url_prefix="/api/v1/setup", description="First-run setup")

# Public before setup, a system administrator's bearer token after it.
SETUP_SECURITY: list[dict[str, list[str]]] = [{}, {"bearer": []}]
# Not taken during setup: the settings, or PUT /admin/config/* once the administrator exists.
SETTINGS_ONLY = ("mailer", "storage")


class DatastoreSchema(Schema):
    type = fields.String(required=True, metadata={"example": "postgresql"})
    target = fields.String(required=True, allow_none=True,
                           metadata={"description": "host:port/database or file, no credentials"})


class DatastoresSchema(Schema):
    database = fields.Nested(DatastoreSchema, required=True)
    redis = fields.Nested(DatastoreSchema, required=True)


class SetupStatusSchema(Schema):
    completed = fields.Boolean(required=True)
    datastores = fields.Nested(DatastoresSchema,
                               metadata={"description": "only while setup is incomplete"})


class SetupAdminSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=254))
    password = Line(required=True, validate=PASSWORD)
    display_name = Line(required=True, validate=validate.Length(min=1, max=200))


class SetupOrgSchema(Schema):
    name = Line(required=True, validate=validate.Length(min=1, max=200))


class SetupDomainSchema(Schema):
    domain_name = Line(required=True, validate=validate.Length(min=1, max=253))


class SetupTeamSchema(Schema):
    name = Line(required=True, validate=validate.Length(min=1, max=200))


class SetupSchema(Schema):
    admin = fields.Nested(SetupAdminSchema, required=True)
    org = fields.Nested(SetupOrgSchema, required=True)
    mailer = fields.Dict(metadata={"description": "refused (400): configure the mailer.* "
                                                  "settings (config file or environment)"})
    storage = fields.Dict(metadata={"description": "refused (400): configure the storage.* "
                                                   "settings (config file or environment)"})
    domain = fields.Nested(SetupDomainSchema,
                           metadata={"description": "the org's first domain (its first DNS "
                                                    "check is requested)"})
    team = fields.Nested(SetupTeamSchema,
                         metadata={"description": "the org's first team, the admin its lead"})


class OrgSchema(Schema):
    """An organization."""

    id = fields.UUID(required=True)
    name = fields.String(required=True)
    slug = fields.String(required=True)
    settings = fields.Dict(required=True)
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)


class SetupDoneSchema(Schema):
    user = fields.Nested(UserSchema, required=True)
    org = fields.Nested(OrgSchema, required=True)
    tokens = fields.Nested(TokensSchema, required=True)


class SmtpCheckSchema(Schema):
    host = Line(required=True, validate=validate.Length(min=1, max=253))
    port = fields.Integer(load_default=587, validate=validate.Range(min=1, max=65535))
    username = Line(load_default="", validate=validate.Length(max=320))
    password = Line(load_default="", validate=validate.Length(max=1024))
    starttls = JsonBoolean(load_default=True)


class StorageCheckSchema(Schema):
    backend = Line(load_default="fs", validate=validate.OneOf(["fs"]))
    path = Line(required=True, validate=validate.Length(min=1, max=4096),
                         metadata={"description": "absolute folder of the fs backend"})


class CheckResultSchema(Schema):
    success = fields.Boolean(required=True)
    message = fields.String(required=True)


def _check_allowed() -> None:
    """Connectivity checks are public only until setup completes, then for admins only."""
    if setup.is_complete(db()) and not current_principal().is_system_admin:
        raise Forbidden("setup is complete: system administrators only")


@blp.route("/status")
class SetupStatus(MethodView):
    @blp.response(200, SetupStatusSchema)
    def get(self) -> dict[str, Any]:
        """Whether setup is complete; while it is not, which datastores are in use"""
        if setup.is_complete(db()):
            return {"completed": True}
        return {"completed": False, "datastores": setup.datastores(runtime().settings)}


@blp.route("/complete")
class SetupComplete(MethodView):
    @rate_limited("auth")
    @blp.arguments(SetupSchema)
    @blp.response(201, SetupDoneSchema)
    @blp.alt_response(409, description="setup is already complete")
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create the first system administrator and org (optionally its first domain and
        team), and sign the admin in"""
        refused = [name for name in SETTINGS_ONLY if name in body]
        if refused:
            raise ValidationFailed(
                ", ".join(refused) + " cannot be set during setup: configure them through "
                "settings (" + ", ".join(f"{name}.*" for name in refused) + " in the config "
                "file or the environment), or after setup with PUT /api/v1/admin/config/" +
                " and /api/v1/admin/config/".join(refused),
                details={name: [f"configured through the {name}.* settings or PUT "
                                f"/api/v1/admin/config/{name}, not during setup"]
                         for name in refused})
        admin = body["admin"]
        done = setup.complete_setup(db(), runtime().settings, email=admin["email"],
                                    password=admin["password"],
                                    display_name=admin["display_name"],
                                    org_name=body["org"]["name"], origin=origin(),
                                    domain_name=body.get("domain", {}).get("domain_name"),
                                    team_name=body.get("team", {}).get("name"))
        return {"user": done.signed_in.user, "org": done.org,
                "tokens": token_body(done.signed_in.tokens, use_cookie=False)}


@blp.route("/test-smtp")
class SetupTestSmtp(MethodView):
    @rate_limited("auth")
    @blp.arguments(SmtpCheckSchema)
    @blp.response(200, CheckResultSchema)
    @blp.alt_response(400, description="invalid input, or a host the outbound rules refuse")
    @blp.alt_response(401, description="setup is complete and no credentials were sent")
    @blp.alt_response(403, description="setup is complete and the caller is not an admin")
    @blp.doc(security=SETUP_SECURITY)
    def post(self, body: dict[str, Any]) -> setup.CheckResult:
        """Try an SMTP relay: connect, EHLO, STARTTLS and log in as configured"""
        _check_allowed()
        # Nothing held open while the relay answers: on SQLite the request's transaction
        # would hold the writer lock every SMTP delivery needs for as long.
        end_read_only_transaction(db())
        relay = Relay(host=body["host"], port=body["port"], username=body["username"],
                      password=body["password"], starttls=body["starttls"])
        return setup.check_smtp(runtime().settings, relay)


@blp.route("/test-storage")
class SetupTestStorage(MethodView):
    @rate_limited("auth")
    @blp.arguments(StorageCheckSchema)
    @blp.response(200, CheckResultSchema)
    @blp.alt_response(401, description="setup is complete and no credentials were sent")
    @blp.alt_response(403, description="setup is complete and the caller is not an admin")
    @blp.doc(security=SETUP_SECURITY)
    def post(self, body: dict[str, Any]) -> setup.CheckResult:
        """Try object storage: write, read and delete a probe object"""
        _check_allowed()
        return setup.check_storage(body["path"])
