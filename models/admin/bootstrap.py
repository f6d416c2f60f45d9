"""Bootstrap: everything a script or a CI job needs before its first inbox, in one idempotent
action (`burnbox bootstrap`, or the `bootstrap.*` settings read by `burnbox serve` and
`burnbox release` on start).

It makes sure these exist, making only what is missing: a system administrator, an org they own,
a team in it, a domain of the org (by default the first operator-trusted name, verified without
DNS), the domain's assignment to the team with full access, and the team's *bootstrap key*: the
team's unrevoked API key named `bootstrap`, made by that administrator, with every team scope.
While setup is incomplete, the first four are made exactly as `POST /setup/complete` makes them,
and setup is then complete.

Running it again changes nothing. Its outcomes for the key:
- no key given, none exists: one is made and its secret returned (shown once, as for any key);
- no key given, one exists: nothing is made; its prefix is returned, never a second key (the
  secret cannot be shown again: only its hash is stored);
- a key given (`bb_` + 64 hex, for a CI job that fixes its key in advance, as MinIO and Keycloak
  fix their root credentials): only its hash is stored, as for any key. Already the bootstrap
  key: nothing changes; another key exists: it is rotated to the given secret (one bootstrap key
  at a time, the old secret stops working); none: it is made with that secret. A given secret
  that another key already has (another team's, or a revoked one) is refused.
- no key given, and the caller keeps the secret for the next run (`held_key`: `burnbox
  bootstrap --env-file` writes it into its file): the key it holds is kept while it is still
  the bootstrap key's secret; otherwise (no file yet, a file written without the key, a key
  rotated since) the bootstrap key gets a new secret (the old one stops working at once) or is
  made, so the caller always ends up with a working key.

An existing administrator's password is never changed. Every row made is audited as its own
action would be (user agent `burnbox bootstrap`), plus one platform entry `admin.bootstrap`
listing what was made; a run that makes nothing writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from models.admin.setup import add_admin_user, finish_setup, prepare_admin
from models.apikeys.keys import (
    ApiKey,
    IssuedKey,
    check_given_key,
    create_key,
    find_key,
    rotate_key,
)
from models.domains.assignments import FULL, DomainAssignment, assign_domain
from models.domains.domains import Domain, normalise_domain_name, register_domain
from models.errors import Conflict, ValidationFailed
from models.identity.accounts import made_up_password
from models.identity.users import User, find_by_email
from models.mail.release import RELEASE
from models.platform.audit import Origin, record_audit
from models.platform.settings import lock_platform
from models.tenancy.access import Caller, resolve_org_access
from models.tenancy.orgs import OWNER, Org, OrgMember, create_org
from models.tenancy.rbac import load_grants
from models.tenancy.teams import Team, TeamAccess, create_team, team_access

KEY_NAME = "bootstrap"
BOOTSTRAP = "admin.bootstrap"


@dataclass(frozen=True)
class BootstrapRequest:
    """What to make sure of; empty `password` or `api_key` means "make one up"."""

    email: str
    org_name: str
    team_name: str
    domain_name: str
    password: str = ""
    api_key: str = ""
    # The bootstrap key's secret the caller kept from an earlier run ("" for none); None when
    # the caller keeps nothing (the secret is shown once). See the module docstring.
    held_key: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> BootstrapRequest:
        """The request the `bootstrap.*` settings describe (the domain defaults to the first
        trusted name)."""
        config = settings.bootstrap
        domain = config.domain or next(iter(settings.domains.trusted), "")
        return cls(email=config.admin_email, org_name=config.org, team_name=config.team,
                   domain_name=domain, password=config.admin_password, api_key=config.api_key)


@dataclass
class Bootstrapped:
    """What bootstrap left in place, and what it made this time (`made`, in order)."""

    admin: User
    org: Org
    team: Team
    domain: Domain
    assignment: DomainAssignment
    key: ApiKey
    raw_key: str | None = None  # the secret this run made up (never a given one: not echoed)
    held_key: str | None = None  # the secret the caller held, when it is still the key's
    admin_password: str | None = None  # the password made up for a new admin
    made: list[str] = field(default_factory=list)


def run_bootstrap(session: Session, settings: Settings, request: BootstrapRequest,
                  origin: Origin) -> Bootstrapped:
    """Make sure of everything the module docstring lists, in the caller's transaction (the
    caller commits). Raise ValidationFailed for bad input (a malformed key, no domain, a weak
    password), Conflict when a row it needs belongs to someone else (the e-mail is a user who
    is not a system administrator, the domain another org's, the given key another's)."""
    given = check_given_key(request.api_key) if request.api_key else None
    if not request.domain_name:
        raise ValidationFailed("bootstrap needs a domain: name one, or trust one in "
                               "domains.trusted", details={"domain": ["required"]})
    domain_name = normalise_domain_name(request.domain_name)
    made: list[str] = []
    made_up = None
    admin = find_by_email(session, request.email)
    prepared = None
    if admin is None:
        made_up = None if request.password else made_up_password()
        prepared = prepare_admin(session, settings, email=request.email,
                                 password=request.password or made_up or "",
                                 display_name="Administrator")
    # Serialises bootstraps and setup: two runs at once cannot both make the same rows.
    row = lock_platform(session)
    if prepared is not None:
        # Another run may have added the administrator while the password was hashed.
        admin = find_by_email(session, request.email)
        if admin is None:
            admin = prepared
            add_admin_user(session, admin)
            made.append("admin")
            if row.setup_completed_at is None:
                finish_setup(session, settings, row, admin, request.org_name, origin,
                             domain_name, request.team_name)
                made.append("setup")
        else:
            made_up = None
    assert admin is not None
    if not admin.is_system_admin:
        raise Conflict(f"{admin.email} is a user who is not a system administrator",
                       details={"email": ["a user who is not a system administrator"]})
    caller = Caller(user_id=admin.id, is_system_admin=True, origin=origin)
    org = _owned_org(session, admin, request.org_name)
    if org is None:
        org = create_org(session, request.org_name, admin.id)
        made.append("org")
    access = resolve_org_access(session, load_grants(session), caller, org.id)
    team = _team(session, org, request.team_name)
    if team is None:
        team = create_team(session, settings, access, name=request.team_name)
        made.append("team")
    domain = _domain(session, org, domain_name)
    if domain is None:
        domain = register_domain(session, settings, caller, org.id, domain_name)
        made.append("domain")
    assignment = _assignment(session, team, domain)
    if assignment is None:
        assignment = assign_domain(session, settings, caller, team, domain.id, FULL)
        made.append("assignment")
    issued = _key(session, team_access(session, access, team), admin, given, request.held_key,
                  made)
    if made:
        record_audit(session, BOOTSTRAP, actor_id=admin.id, resource_type="platform",
                     resource_id=None, ip=origin.ip, user_agent=origin.user_agent,
                     after={"made": made, "org_id": str(org.id), "team_id": str(team.id),
                            "domain_id": str(domain.id), "api_key_id": str(issued.key.id)})
    return Bootstrapped(admin=admin, org=org, team=team, domain=domain, assignment=assignment,
                        key=issued.key, raw_key=None if given else issued.raw_key or None,
                        held_key=request.held_key if issued.raw_key == "" and not given
                        else None,
                        admin_password=made_up, made=made)


def _owned_org(session: Session, admin: User, name: str) -> Org | None:
    """The oldest org named `name` that the admin owns."""
    return session.scalars(
        select(Org).join(OrgMember, OrgMember.org_id == Org.id)
        .where(OrgMember.user_id == admin.id, OrgMember.role == OWNER, Org.name == name.strip())
        .order_by(Org.created_at, Org.id)).first()


def _team(session: Session, org: Org, name: str) -> Team | None:
    return session.scalars(select(Team).where(Team.org_id == org.id,
                                              Team.name == name.strip())).first()


def _domain(session: Session, org: Org, name: str) -> Domain | None:
    domain = session.scalars(select(Domain).where(Domain.domain_name == name)).first()
    if domain is not None and domain.org_id != org.id:
        raise Conflict(f"the domain {name} is registered by another org",
                       details={"domain": ["registered by another org"]})
    return domain


def _assignment(session: Session, team: Team, domain: Domain) -> DomainAssignment | None:
    return session.scalars(select(DomainAssignment).where(
        DomainAssignment.team_id == team.id, DomainAssignment.domain_id == domain.id)).first()


def _key(session: Session, access: TeamAccess, admin: User, given: str | None,
         held: str | None, made: list[str]) -> IssuedKey:
    """The team's bootstrap key, made or rotated as the module docstring says; `raw_key` is
    empty when the secret was not set by this run (it was given, or `held` is still it)."""
    team_id = access.team.id
    current = session.scalars(
        select(ApiKey).where(ApiKey.team_id == team_id, ApiKey.name == KEY_NAME,
                             ApiKey.created_by == admin.id, ApiKey.revoked_at.is_(None))
        .order_by(ApiKey.created_at, ApiKey.id)).first()
    if given is not None:
        holder = find_key(session, given)
        if holder is not None and holder is not current:
            raise Conflict("the given API key is already another key's secret",
                           details={"api_key": ["in use by another key"]})
        if holder is current and current is not None:
            return IssuedKey(key=current, raw_key="")
        if current is not None:
            made.append("api_key_rotated")
            return rotate_key(session, access, current.id, given=given)
    elif current is not None:
        if held is None or (held and find_key(session, held) is current):
            return IssuedKey(key=current, raw_key="")
        made.append("api_key_rotated")
        return rotate_key(session, access, current.id)
    made.append("api_key")
    # Every team scope but the one that sends mail out of Burnbox: a key printed into a
    # newcomer's shell must not be able to turn the service into a relay.
    scopes = sorted(access.org.grants.team_permissions - {RELEASE})
    return create_key(session, access, name=KEY_NAME, scopes=scopes, given=given)


def bootstrap_report(settings: Settings, done: Bootstrapped,
                     env_file: str | None = None) -> tuple[dict[str, str], str]:
    """What a bootstrap run tells its user: shell variables (the API address, the SMTP address,
    the domain, and the key when its secret is known: set by this run or held by the caller)
    and a guide to the next steps; with `env_file`, the guide says the variables are there
    rather than showing the secret."""
    api = settings.http.url + "/api/v1"
    smtp = f"{settings.smtp.host}:{settings.smtp.port}"
    variables = {"BURNBOX_API": api, "BURNBOX_SMTP": smtp,
                 "BURNBOX_DOMAIN": done.domain.domain_name}
    secret = done.raw_key or done.held_key
    if secret:
        variables["BURNBOX_API_KEY"] = secret
    made = "made " + ", ".join(done.made) if done.made else "nothing to do"
    password = f" (password {done.admin_password}: shown once)" if done.admin_password else ""
    lines = [f"Burnbox bootstrap: {made}",
             f"  admin    {done.admin.email}{password}",
             f"  org      {done.org.name} ({done.org.id})",
             f"  team     {done.team.name} ({done.team.id})",
             f"  domain   {done.domain.domain_name} ({done.domain.status}), assigned to the team",
             ]
    if secret and env_file:
        rotated = ("; the secret it held before stops working"
                   if "api_key_rotated" in done.made else "")
        lines.append(f"  API key  {done.key.prefix}... (in {env_file}, readable by you only"
                     f"{rotated})")
    elif done.raw_key:
        lines.append(f"  API key  {done.raw_key} (keep it: its secret is not shown again)")
    else:
        lines.append(f"  API key  {done.key.prefix}... (not shown: it was given, or shown when "
                     "it was made; pass --api-key to fix it, or rotate it with the API)")
    key = "$BURNBOX_API_KEY" if env_file or not done.raw_key else done.raw_key
    lines += ["Next:"]
    if env_file:
        lines.append(f"  load the variables: set -a; . {_shell_path(env_file)}; set +a")
    lines += [f"  send mail over SMTP to {smtp}, to an inbox's address "
              f"at {done.domain.domain_name}",
              "  create an inbox:",
              f'    curl -s -X POST {api}/inboxes -H "Authorization: Bearer {key}" \\',
              "      -H 'Content-Type: application/json' "
              f"-d '{{\"domain\": \"{done.domain.domain_name}\", \"alias\": \"signup\"}}'",
              f"  read its mail: GET {api}/inboxes/<inbox id>/emails, then GET {api}/emails/<id>"]
    return variables, "\n".join(lines)


def _shell_path(path: str) -> str:
    """`path` as `.` needs it in a shell: a bare name is looked up on PATH, so ./ goes first."""
    return path if "/" in path else f"./{path}"
