"""The JWT signing secret every process of one deployment shares.

`auth.jwt_secret` when it is set. Without it, the SQLite (single-machine) deployment keeps a
generated secret in `data_dir`, made on the first start and read by every later one, so restarts
and sibling processes (gunicorn workers) accept each other's tokens. A database that is not SQLite
means processes that may run on other machines, which cannot read that file: there a process
without the setting refuses to start. A random key per process, the old fallback, made about half
of all requests fail under two gunicorn workers and killed every token on each restart.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from burnbox.settings import MIN_SECRET_LENGTH, Settings, SettingsError

log = logging.getLogger(__name__)

SECRET_FILE = "jwt_secret"  # noqa: S105 (a file name, not a secret)
ENV_NAME = "BURNBOX_AUTH__JWT_SECRET"
# 48 random bytes, 64 URL-safe characters: far above the 32 characters production demands.
SECRET_BYTES = 48


def resolve_jwt_secret(settings: Settings) -> Settings:
    """The settings with `auth.jwt_secret` filled in: unchanged when it is set; on SQLite, the
    secret kept in `data_dir/jwt_secret` (created on first use, mode 0600); otherwise raise
    SettingsError saying what to set."""
    if settings.auth.jwt_secret:
        return settings
    if not settings.database_url.startswith("sqlite"):
        raise SettingsError(
            f"setting auth.jwt_secret: required when the database is not SQLite, so that every "
            f"process signs with the same key; set {ENV_NAME} to {MIN_SECRET_LENGTH}+ random "
            f"characters in every process")
    path = Path(settings.data_dir) / SECRET_FILE
    try:
        secret = read_or_create(path)
    except OSError as exc:
        raise SettingsError(f"setting auth.jwt_secret: not set, and {path} cannot be read or "
                            f"created ({exc.strerror}); set {ENV_NAME}") from exc
    return settings.replace(**{"auth.jwt_secret": secret})


def read_or_create(path: Path) -> str:
    """The secret stored at `path`, creating it first when it does not exist.

    Two processes starting together must end up with the same secret, and neither may read a
    half-written file: each writes a complete private temporary file, then links it to `path`,
    which fails for every process but the first; all of them then read what the first linked.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="ascii") as handle:
                handle.write(secrets.token_urlsafe(SECRET_BYTES) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.link(temporary, path)
            log.info("auth.jwt_secret is not set: generated a signing secret in %s, kept "
                     "across restarts", path)
        except FileExistsError:
            pass  # another process created it first: use theirs
        finally:
            temporary.unlink(missing_ok=True)
    secret = path.read_text(encoding="ascii").strip()
    if len(secret) < MIN_SECRET_LENGTH:
        raise SettingsError(f"setting auth.jwt_secret: {path} is damaged (shorter than "
                            f"{MIN_SECRET_LENGTH} characters); delete it to generate a new "
                            f"one, or set {ENV_NAME}")
    return secret
