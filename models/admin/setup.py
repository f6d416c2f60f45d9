"""First-run setup: the first system administrator and the first org, from the API
(`POST /setup/complete`) or the command line (`burnbox create-admin`), plus the connectivity
checks the setup screens offer.

Completion happens once: it is recorded on the platform settings row, which every completer locks
first, so two concurrent attempts cannot both succeed.
"""

from __future__ import annotations

import ipaddress
import smtplib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from burnbox import mailer
from burnbox.dns import to_ascii_hostname
from burnbox.netguard import TargetRefused, resolve_target
from burnbox.settings import Settings
from burnbox.storage import FilesystemStorage, StorageError
from burnbox.timeutil import utcnow
from models.db import end_read_only_transaction
from models.domains.assignments import FULL, assign_domain
from models.domains.domains import register_domain
from models.errors import Conflict, DomainError, ValidationFailed
from models.identity.sessions import SignedIn, open_session
from models.identity.users import User, find_by_email, new_user, password_hasher
from models.platform import audit
from models.platform.audit import Origin, record_audit
from models.platform.settings import ROW_ID, PlatformSettings, current_platform, lock_platform
from models.tenancy.access import Caller, resolve_org_access
from models.tenancy.orgs import Org, create_org
from models.tenancy.rbac import load_grants
from models.tenancy.teams import create_team

CHECK_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class SetupDone:
    """The outcome of setup: the admin's sign-in and the first org."""

    signed_in: SignedIn
    org: Org


@dataclass(frozen=True)
class CheckResult:
    """The outcome of a connectivity check."""

    success: bool
    message: str


def is_complete(session: Session) -> bool:
    """True once setup has been completed (by the API or the command line)."""
    row = session.get(PlatformSettings, ROW_ID)
    return row is not None and row.setup_completed_at is not None


def datastores(settings: Settings) -> dict[str, dict[str, Any]]:
    """The database and key-value store this deployment uses, without credentials."""
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        database = {"type": "sqlite", "target": url.database}
    else:
        database = {"type": url.get_backend_name(),
                    "target": f"{url.host}:{url.port or 5432}/{url.database}"}
    if settings.redis.url:
        parts = urlsplit(settings.redis.url)
        redis = {"type": "redis",
                 "target": f"{parts.hostname}:{parts.port or 6379}{parts.path or '/0'}"}
    else:
        redis = {"type": "memory", "target": None}
    return {"database": database, "redis": redis}


def prepare_admin(session: Session, settings: Settings, *, email: str, password: str,
                   display_name: str) -> User:
    """A validated, hashed, not-yet-added system administrator; no transaction is left open."""
    try:
        current_platform(session, settings).password_policy.check(password)
        admin = new_user(email=email, display_name=display_name, password_hash=None,
                         is_system_admin=True)
    except ValidationFailed as exc:
        raise ValidationFailed(exc.message, details={"admin": exc.details}) from exc
    # The operator typed the address themselves, and no mailer may exist yet to verify it.
    admin.email_verified = True
    end_read_only_transaction(session)
    admin.password_hash = password_hasher(settings).hash(password)
    return admin


def add_admin_user(session: Session, admin: User) -> None:
    """Add the prepared administrator; raise Conflict when the address is taken."""
    taken = Conflict("a user with this e-mail address already exists")
    if find_by_email(session, admin.email) is not None:
        raise taken
    session.add(admin)
    try:
        session.flush()
    except IntegrityError as exc:  # a registration took the address since the check
        raise taken from exc


def _under(field: str, exc: DomainError, name_field: str) -> DomainError:
    """`exc` again (same class, so the same status), its details nested under `field`; an
    error without details (a Conflict) names `field.name_field` with its message."""
    details = exc.details or {name_field: [exc.message]}
    return type(exc)(f"{field}: {exc.message}", details={field: details}, extra=exc.extra)


def _add_extras(session: Session, settings: Settings, admin: User, org: Org, origin: Origin,
                domain_name: str | None, team_name: str | None) -> None:
    """Register the first domain and create the first team in the new org, through the same
    actions (and so the same rules) as the tenancy endpoints, acting as the admin (its owner and
    a system administrator, so a name the operator trusts is verified at once; any other domain
    requests its auto_create check, sent once the transaction commits); the team has the admin
    as its lead. With both, the domain is assigned to the team with full access, so the team
    can create inboxes on it straight away (a domain nobody is assigned to serves no inbox)."""
    if domain_name is None and team_name is None:
        return
    caller = Caller(user_id=admin.id, is_system_admin=True, origin=origin)
    domain = team = None
    if domain_name is not None:
        try:
            domain = register_domain(session, settings, caller, org.id, domain_name)
        except DomainError as exc:
            raise _under("domain", exc, "domain_name") from exc
    if team_name is not None:
        access = resolve_org_access(session, load_grants(session), caller, org.id)
        try:
            team = create_team(session, settings, access, name=team_name)
        except DomainError as exc:
            raise _under("team", exc, "name") from exc
    if domain is not None and team is not None:
        assign_domain(session, settings, caller, team, domain.id, FULL)


def finish_setup(session: Session, settings: Settings, row: PlatformSettings, admin: User,
                 org_name: str, origin: Origin, domain_name: str | None = None,
                 team_name: str | None = None) -> Org:
    """Make the first org (with its optional domain and team, `_add_extras`) owned by the added
    `admin`, and mark setup complete on the locked platform row; audited."""
    try:
        org = create_org(session, org_name, admin.id)
    except ValidationFailed as exc:
        raise ValidationFailed(exc.message, details={"org": exc.details}) from exc
    _add_extras(session, settings, admin, org, origin, domain_name, team_name)
    row.setup_completed_at = utcnow()
    record_audit(session, audit.SETUP_COMPLETE, actor_id=admin.id, resource_type="platform",
                 resource_id=None, ip=origin.ip, user_agent=origin.user_agent,
                 channel=origin.channel,
                 after={"admin_id": str(admin.id), "org_id": str(org.id)})
    return org


def complete_setup(session: Session, settings: Settings, *, email: str, password: str,
                   display_name: str, org_name: str, origin: Origin,
                   domain_name: str | None = None, team_name: str | None = None) -> SetupDone:
    """Create the first system administrator and the first org (its owner: the admin), and
    optionally the org's first domain and first team (the admin its lead), sign the admin in,
    and mark setup complete, in the caller's transaction. Raise Conflict once setup is complete
    (or when the domain is taken); ValidationFailed (details under "admin", "org", "domain" or
    "team") for bad input. On any error nothing is written (the caller rolls back)."""
    admin = prepare_admin(session, settings, email=email, password=password,
                           display_name=display_name)
    row = lock_platform(session)
    if row.setup_completed_at is not None:
        raise Conflict("setup is already complete")
    add_admin_user(session, admin)
    org = finish_setup(session, settings, row, admin, org_name, origin, domain_name, team_name)
    signed_in = open_session(session, settings, admin, origin)
    return SetupDone(signed_in=signed_in, org=org)


def create_admin(session: Session, settings: Settings, *, email: str, password: str,
                 display_name: str, org_name: str, origin: Origin,
                 domain_name: str | None = None, team_name: str | None = None
                 ) -> tuple[User, Org | None]:
    """The command-line way in: before setup, do what setup does (without signing in); after
    it, add one more system administrator (`org_name`, `domain_name` and `team_name` are then
    unused). Return the admin and the org created, if any. Raise Conflict when the address is
    taken."""
    admin = prepare_admin(session, settings, email=email, password=password,
                           display_name=display_name)
    row = lock_platform(session)
    add_admin_user(session, admin)
    org = None
    if row.setup_completed_at is None:
        org = finish_setup(session, settings, row, admin, org_name, origin, domain_name,
                           team_name)
    else:
        record_audit(session, audit.ADMIN_CREATE, actor_id=None, resource_type="user",
                     resource_id=admin.id, ip=origin.ip, user_agent=origin.user_agent,
                     channel=origin.channel, after={"email": admin.email})
    return admin, org


def relay_host(text: str) -> str:
    """A mail relay's host as it is stored and connected to: an IP address (an IPv6 one with or
    without brackets) written canonically, or a host name in IDNA A-labels, lower case, no
    final dot; surrounding blanks are dropped. Raise ValidationFailed naming `host` for
    anything else: nothing, blanks inside, control or bidi characters, emoji, underscores."""
    text = text.strip()
    try:
        return str(ipaddress.ip_address(text.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    try:
        return to_ascii_hostname(text)
    except ValueError:
        raise ValidationFailed("host must be a host name or an IP address", details={
            "host": ["a host name (letters, digits, hyphens, dots) or an IP address"]}) from None


def check_smtp(settings: Settings, relay: mailer.Relay) -> CheckResult:
    """Connect to a relay (EHLO, STARTTLS and login as configured) at an address resolved once
    and checked by the outbound rules. Raise ValidationFailed when the host is not one
    (`relay_host`) or the rules refuse it; report connection and protocol failures in the
    result."""
    relay = replace(relay, host=relay_host(relay.host))
    try:
        address = resolve_target(relay.host, relay.port,
                                 allow_private=settings.webhooks.allow_private_targets)
    except TargetRefused as exc:
        raise ValidationFailed(str(exc), details={"host": [str(exc)]}) from exc
    try:
        with mailer.connect(relay, address=address, timeout=CHECK_TIMEOUT_SECONDS) as client:
            client.noop()
    except (OSError, smtplib.SMTPException) as exc:
        return CheckResult(False, f"SMTP check failed: {exc or type(exc).__name__}")
    return CheckResult(True, f"connected to {relay.host}:{relay.port}")


def check_storage(path: str) -> CheckResult:
    """Write, read and delete a probe object under a filesystem storage root (absolute path)."""
    root = Path(path)
    if not root.is_absolute() or "\x00" in path:
        raise ValidationFailed("the storage path must be absolute",
                               details={"path": ["must be an absolute path"]})
    try:
        FilesystemStorage(root).probe()
    except StorageError as exc:
        return CheckResult(False, f"storage check failed: {exc}")
    return CheckResult(True, f"{root} is writable")
