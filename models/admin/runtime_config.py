"""Changing the runtime mailer and storage configuration (PUT /admin/config/mailer and
/admin/config/storage): validation, sealing the secret, the storage move guard, the audit.
How the groups are stored and read is models.system_config."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from email.utils import parseaddr
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from burnbox.netguard import TargetRefused, resolve_target
from burnbox.secretbox import SecretBox, SecretsUnavailable
from burnbox.settings import Settings, SettingsError, StorageSettings
from burnbox.storage import StorageError, make_storage
from burnbox.timeutil import utcnow
from models.admin.setup import CheckResult, relay_host
from models.errors import Conflict, ValidationFailed
from models.mail.entities import Email
from models.platform.audit import Origin, record_audit
from models.system_config import (
    MAILER,
    STORAGE,
    Group,
    SystemConfig,
    config_view,
    effective_group,
    stored_group,
)

# The fields that say where objects live: changing one while objects exist would strand them.
STORAGE_LOCATION = ("backend", "path", "s3_endpoint_url", "s3_bucket", "s3_prefix")


def _check_mailer(values: Mapping[str, Any]) -> None:
    if values["host"] and "@" not in parseaddr(values["from_address"])[1]:
        raise ValidationFailed("from_address must be an e-mail address",
                               details={"from_address": ["an address such as "
                                                         "Burnbox <no-reply@example.com>"]})
    if not 1 <= values["port"] <= 65535:
        raise ValidationFailed("port must be 1-65535", details={"port": ["1-65535"]})


def _check_storage(values: Mapping[str, Any]) -> None:
    if values["backend"] not in ("fs", "s3"):
        raise ValidationFailed("backend must be fs or s3", details={"backend": ["fs or s3"]})
    if values["backend"] == "s3" and not values["s3_bucket"]:
        raise ValidationFailed("the s3 backend needs a bucket",
                               details={"s3_bucket": ["required for the s3 backend"]})
    if values["path"] and not PurePath(values["path"]).is_absolute():
        raise ValidationFailed("path must be absolute", details={"path": ["an absolute path"]})


def _stored_objects(session: Session) -> int:
    """E-mails whose raw message (and attachments) are in the storage."""
    return session.scalar(select(func.count()).select_from(Email)) or 0


def update_config(session: Session, settings: Settings, group: Group,
                  changes: Mapping[str, Any], *, actor_id: Any, origin: Origin
                  ) -> dict[str, Any]:
    """Store the group: `changes` (settings field names) over the values in force; an absent
    or empty secret keeps the stored (or configured) one; a mailer host is stored as
    `relay_host` writes it. Raise ValidationFailed for bad values or a secret with no
    encryption key; Conflict when a storage change would move
    where objects live while objects exist (they would no longer be found). Audited (the
    secret only as "changed"). Return the new view; the caller commits."""
    box = SecretBox.from_settings(settings)
    row = session.scalars(select(SystemConfig).where(SystemConfig.key == group.key)
                          .with_for_update()).first()
    before_view = config_view(session, settings, group)
    section = getattr(settings, group.section)
    current = dict(row.value) if row else {}
    values = {name: current.get(name, getattr(section, name)) for name in group.fields}
    values.update({k: v for k, v in changes.items() if k != group.secret})
    if group is MAILER and changes.get("host"):  # "" clears the relay
        values["host"] = relay_host(changes["host"])
    secret = changes.get(group.secret)
    if secret:
        try:
            values[group.secret] = box.seal(secret)
        except SecretsUnavailable as exc:
            raise ValidationFailed(f"cannot store {group.secret}: {exc}", details={
                group.secret: ["set secrets.encryption_keys to store secrets"]}) from exc
    elif current.get(group.secret):
        values[group.secret] = current[group.secret]
    else:
        values[group.secret] = ""  # the configured secret, if any, keeps applying
    (_check_mailer if group is MAILER else _check_storage)(values)
    if group is STORAGE:
        old = {name: before_view[name] for name in STORAGE_LOCATION}
        moved = [name for name in STORAGE_LOCATION if values[name] != old[name]]
        objects = _stored_objects(session) if moved else 0
        if objects:
            raise Conflict(
                f"{objects} e-mail(s) keep their objects in the current storage; changing "
                f"{', '.join(moved)} would leave them unreadable. Wait for their inboxes to "
                "expire (or delete them), then change the storage",
                details={"objects": objects, "fields": moved})
    if row is None:
        row = SystemConfig(key=group.key, value=values, updated_at=utcnow())
        session.add(row)
    else:
        row.value = values
        row.updated_at = utcnow()
    session.flush()
    after_view = config_view(session, settings, group)
    plain = [name for name in group.fields if name != group.secret]
    record_audit(session, group.audit_action, actor_id=actor_id, resource_type="config",
                 resource_id=group.key, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel,
                 before={name: before_view[name] for name in plain},
                 after={**{name: after_view[name] for name in plain},
                        "secret_changed": bool(secret)})
    return after_view


def check_storage_config(settings: Settings, config: StorageSettings) -> CheckResult:
    """Write, read and delete a probe object in the storage `config` describes. An S3 endpoint
    must pass the outbound rules (resolved once; internal addresses refused unless
    webhooks.allow_private_targets). Raise ValidationFailed for a config that cannot describe
    a storage or an endpoint the rules refuse; report failures to reach it in the result."""
    values = {name: getattr(config, name) for name in STORAGE.fields}
    _check_storage(values)
    if config.backend == "fs" and not config.path:
        raise ValidationFailed("the fs backend needs a path to test",
                               details={"path": ["an absolute path"]})
    if config.backend == "s3" and config.s3_endpoint_url:
        endpoint = urlsplit(config.s3_endpoint_url)
        if endpoint.scheme not in ("http", "https") or not endpoint.hostname:
            raise ValidationFailed("s3_endpoint_url must be an http(s) URL",
                                   details={"s3_endpoint_url": ["an http(s) URL"]})
        try:
            resolve_target(endpoint.hostname,
                           endpoint.port or (443 if endpoint.scheme == "https" else 80),
                           allow_private=settings.webhooks.allow_private_targets)
        except TargetRefused as exc:
            raise ValidationFailed(str(exc), details={"s3_endpoint_url": [str(exc)]}) from exc
    try:
        make_storage(dataclasses.replace(settings, storage=config)).probe()
    except (StorageError, SettingsError) as exc:
        return CheckResult(False, f"storage check failed: {exc}")
    where = config.path if config.backend == "fs" else f"bucket {config.s3_bucket}"
    return CheckResult(True, f"{where} is writable")


def candidate(session: Session, settings: Settings, group: Group,
              changes: Mapping[str, Any]) -> Any:
    """The group in force with `changes` over it (an empty secret keeps the one in force): what
    a connectivity test tries before it is stored. Raise Conflict when the stored secret cannot
    be opened with the configured keys."""
    try:
        current = effective_group(settings, group, stored_group(session, group),
                                  SecretBox.from_settings(settings))
    except SecretsUnavailable as exc:
        raise Conflict(f"the stored {group.secret} cannot be used: {exc}") from exc
    given = {name: value for name, value in changes.items()
             if name in group.fields and (name != group.secret or value)}
    return dataclasses.replace(current, **given)
