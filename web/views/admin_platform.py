"""Runtime configuration for system administrators: /api/v1/admin/platform, /admin/config/mailer,
/admin/config/storage and the connectivity tests /admin/infra/test-smtp and test-storage.

Platform: GET shows every runtime key's effective value and which keys the database overrides;
PUT pins keys (a `null` value unpins one, so it follows the configuration again). A change is
seen by every process on its next use (models.platform.settings). Mailer and storage: stored
groups over the settings, secrets sealed and never shown (models.system_config)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, pre_load, validate

from burnbox.mailer import Relay
from models.admin.runtime_config import candidate, check_storage_config, update_config
from models.admin.setup import CheckResult, check_smtp
from models.errors import ValidationFailed
from models.platform.settings import PLATFORM_KEYS, Platform, current_platform, update_platform
from models.system_config import MAILER, STORAGE, Group, config_view
from web.api import Blueprint
from web.auth import current_user, origin, protected
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Timestamp, merge_aliases
from web.ratelimit import rate_limited

blp = Blueprint("admin-platform", __name__, url_prefix="/api/v1/admin",
                description="Platform settings changed at run time (system administrators)")


def _field(name: str, *, load: bool) -> fields.Field:
    """The schema field of platform key `name`: its kind, and its bounds in the description
    (the bounds themselves are checked by the domain action, one place for every face)."""
    key = PLATFORM_KEYS[name]
    help_text = f"overrides {key.setting}"
    if key.low is not None:
        help_text += f"; {key.dump(key.low)} to {key.dump(key.high)}"
    options: dict[str, Any] = ({"allow_none": True} if load else {"required": True})
    options["metadata"] = {"description": help_text + ("; null: follow the configuration"
                                                        if load else "")}
    if key.kind is bool:
        return JsonBoolean(**options) if load else fields.Boolean(**options)
    if key.kind is int:
        return fields.Integer(strict=True, **options)
    assert key.kind in (timedelta, str)
    return (Line(validate=validate.Length(max=64), **options) if load
            else fields.String(**options))


PlatformChangeSchema = Schema.from_dict(
    {name: _field(name, load=True) for name in PLATFORM_KEYS}, name="PlatformChange")
PlatformValuesSchema = Schema.from_dict(
    {name: _field(name, load=False) for name in PLATFORM_KEYS}, name="PlatformValues")


class PlatformSchema(PlatformValuesSchema):  # type: ignore[valid-type,misc]
    """Every runtime platform key's effective value, and which ones the database overrides."""

    overridden = fields.List(fields.String(), required=True, metadata={
        "description": "keys pinned by an administrator; the others follow the configuration"})
    revision = fields.Integer(required=True, metadata={"description": "changes so far"})
    updated_at = Timestamp(required=True, allow_none=True)


def _shown(platform: Platform) -> dict[str, Any]:
    return {**platform.values(), "overridden": sorted(platform.overridden),
            "revision": platform.revision, "updated_at": platform.updated_at}


@blp.route("/platform")
class AdminPlatform(MethodView):
    @protected(blp, system_admin=True)
    @blp.response(200, PlatformSchema)
    def get(self) -> dict[str, Any]:
        """The platform settings in force, and which ones are overridden"""
        return _shown(current_platform(db(), runtime().settings))

    @protected(blp, system_admin=True)
    @blp.arguments(PlatformChangeSchema)
    @blp.response(200, PlatformSchema)
    @blp.alt_response(400, description="a key of the wrong kind or out of bounds")
    def put(self, args: dict[str, Any]) -> dict[str, Any]:
        """Pin platform settings (null unpins); the others keep their values"""
        platform = update_platform(db(), runtime().settings, args, actor_id=current_user().id,
                                   origin=origin())
        return _shown(platform)


class ConfigStateSchema(Schema):
    """Whether the database overrides the settings for the group, and since when."""

    stored = fields.Boolean(required=True, metadata={
        "description": "false: the group comes from the settings (file, environment)"})
    updated_at = Timestamp(required=True, allow_none=True)


class MailerConfigSchema(ConfigStateSchema):
    """The outgoing mail relay in force; the password is never shown."""

    host = fields.String(required=True, metadata={"description": "empty: mail is logged"})
    port = fields.Integer(required=True)
    username = fields.String(required=True)
    starttls = fields.Boolean(required=True)
    from_address = fields.String(required=True)
    has_password = fields.Boolean(required=True)


class MailerChangeSchema(Schema):
    """Relay fields to store; absent ones keep their values, an absent or empty password keeps
    the stored one. `from` and `tls` are accepted for from_address and starttls."""

    host = Line(validate=validate.Length(max=253))
    port = fields.Integer(strict=True, validate=validate.Range(min=1, max=65535))
    username = Line(validate=validate.Length(max=320))
    password = Line(validate=validate.Length(max=1024), load_only=True)
    starttls = JsonBoolean()
    from_address = Line(validate=validate.Length(max=320))

    @pre_load
    def _aliases(self, data: Any, **kwargs: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return merge_aliases(dict(data), {"from": "from_address", "tls": "starttls"})


class StorageConfigSchema(ConfigStateSchema):
    """The object storage in force; the secret key is never shown."""

    backend = fields.String(required=True, metadata={"description": "fs or s3"})
    path = fields.String(required=True, metadata={
        "description": "fs root; empty: data_dir/objects"})
    s3_endpoint_url = fields.String(required=True)
    s3_bucket = fields.String(required=True)
    s3_region = fields.String(required=True)
    s3_access_key = fields.String(required=True)
    s3_prefix = fields.String(required=True)
    s3_addressing_style = fields.String(required=True)
    has_secret_key = fields.Boolean(required=True)


STORAGE_ALIASES = {"endpoint": "s3_endpoint_url", "bucket": "s3_bucket", "region": "s3_region",
                   "access_key": "s3_access_key", "secret_key": "s3_secret_key",
                   "prefix": "s3_prefix"}


class StorageChangeSchema(Schema):
    """Storage fields to store; absent ones keep their values, an absent or empty secret key
    keeps the stored one. The reference names (endpoint, bucket, region, access_key,
    secret_key, prefix) are accepted."""

    backend = Line(validate=validate.OneOf(["fs", "s3"]))
    path = Line(validate=validate.Length(max=4096))
    s3_endpoint_url = Line(validate=validate.Length(max=2048))
    s3_bucket = Line(validate=validate.Length(max=63))
    s3_region = Line(validate=validate.Length(max=64))
    s3_access_key = Line(validate=validate.Length(max=256))
    s3_secret_key = Line(validate=validate.Length(max=1024), load_only=True)
    s3_prefix = Line(validate=validate.Length(max=512))
    s3_addressing_style = Line(validate=validate.OneOf(["auto", "path", "virtual"]))

    @pre_load
    def _aliases(self, data: Any, **kwargs: Any) -> Any:
        return merge_aliases(dict(data), STORAGE_ALIASES) if isinstance(data, dict) else data


class InfraCheckSchema(Schema):
    """The outcome of a connectivity test."""

    success = fields.Boolean(required=True)
    message = fields.String(required=True)
    response_time = fields.Integer(required=True, metadata={
        "description": "milliseconds the test took"})


def _view(group: Group, secret_name: str) -> dict[str, Any]:
    shown = config_view(db(), runtime().settings, group)
    shown[secret_name] = shown.pop("has_secret")
    return shown


def _store(group: Group, secret_name: str, args: dict[str, Any]) -> dict[str, Any]:
    update_config(db(), runtime().settings, group, args, actor_id=current_user().id,
                  origin=origin())
    return _view(group, secret_name)


def _timed(check: Callable[[], CheckResult]) -> dict[str, Any]:
    started = time.monotonic()
    result = check()
    return {"success": result.success, "message": result.message,
            "response_time": round((time.monotonic() - started) * 1000)}


@blp.route("/config/mailer")
class AdminMailerConfig(MethodView):
    @protected(blp, system_admin=True)
    @blp.response(200, MailerConfigSchema)
    def get(self) -> dict[str, Any]:
        """The mail relay in force (never the password)"""
        return _view(MAILER, "has_password")

    @protected(blp, system_admin=True)
    @blp.arguments(MailerChangeSchema)
    @blp.response(200, MailerConfigSchema)
    @blp.alt_response(400, description="a bad value, or a password with no encryption key")
    def put(self, args: dict[str, Any]) -> dict[str, Any]:
        """Store the mail relay; every process uses it for the next message"""
        return _store(MAILER, "has_password", args)


@blp.route("/config/storage")
class AdminStorageConfig(MethodView):
    @protected(blp, system_admin=True)
    @blp.response(200, StorageConfigSchema)
    def get(self) -> dict[str, Any]:
        """The object storage in force (never the secret key)"""
        return _view(STORAGE, "has_secret_key")

    @protected(blp, system_admin=True)
    @blp.arguments(StorageChangeSchema)
    @blp.response(200, StorageConfigSchema)
    @blp.alt_response(400, description="a bad value, or a secret key with no encryption key")
    @blp.alt_response(409, description="objects live where the change would move away from")
    def put(self, args: dict[str, Any]) -> dict[str, Any]:
        """Store the object storage; every process follows within storage.config_refresh"""
        return _store(STORAGE, "has_secret_key", args)


@blp.route("/infra/test-smtp")
class AdminTestSmtp(MethodView):
    @protected(blp, system_admin=True)
    @rate_limited("auth")
    @blp.arguments(MailerChangeSchema, required=False)
    @blp.response(200, InfraCheckSchema)
    @blp.alt_response(400, description="no host, or a host the outbound rules refuse")
    @blp.alt_response(409, description="the stored password cannot be opened")
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Try a relay (the fields given over the one in force): connect, EHLO, STARTTLS and
        log in as configured, within 10 s"""
        config = candidate(db(), runtime().settings, MAILER, args)
        db().rollback()  # nothing held open while the relay answers
        if not config.host:
            raise ValidationFailed("no relay host to test", details={"host": ["required"]})
        return _timed(lambda: check_smtp(runtime().settings, Relay.from_settings(config)))


@blp.route("/infra/test-storage")
class AdminTestStorage(MethodView):
    @protected(blp, system_admin=True)
    @rate_limited("auth")
    @blp.arguments(StorageChangeSchema, required=False)
    @blp.response(200, InfraCheckSchema)
    @blp.alt_response(400, description="a storage that cannot be described, or an endpoint "
                                       "the outbound rules refuse")
    @blp.alt_response(409, description="the stored secret key cannot be opened")
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Try a storage (the fields given over the one in force): write, read and delete a
        probe object"""
        config = candidate(db(), runtime().settings, STORAGE, args)
        db().rollback()
        return _timed(lambda: check_storage_config(runtime().settings, config))
