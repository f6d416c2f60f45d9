"""The one permission check every org and team endpoint goes through.

`@require_org(permission)` and `@require_team(permission)` wrap a view whose URL carries
`<uuid:org_id>` (and `<uuid:team_id>`). Before the body is parsed they:

1. authenticate the caller (401), through `web.auth.protected`;
2. resolve the path ids against each other and the caller (`models.tenancy.access`,
   `models.tenancy.teams`): an org the caller is not a member of, or a team that is not in
   that org, is 404, so nobody learns what exists in other orgs;
3. demand the permission (403 inside one's own org), from the role grants stored in the
   database (read once per request), so custom roles work with no code change;
4. call the view with `org=OrgAccess` or `team=TeamAccess` in place of the ids.

The permission is also written into the OpenAPI operation as `x-required-permission`. That one
declaration drives both checks: the role check for users, and for API keys (`bb_...`) also the
scope check in `_authorize`, the single place every check passes through (a key's rights are
its creator's, narrowed to its scopes). A key reaches only its own team: any other team or org
is 404 for it, before anything is looked up; `require_org` endpoints refuse keys (403).
Endpoints outside the `/orgs/:id/teams/:tid` paths that act in a team (inboxes, emails) accept
keys with `protected(blp, api_keys=True)` and check through `authorize_team` (or, for a team
access read with the row that named the team, `authorize_team_access`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from flask import g

from burnbox import metrics
from models.apikeys.keys import INSUFFICIENT_SCOPE
from models.errors import Forbidden, NotFound
from models.mail.emails import EmailAccess, resolve_email_access
from models.mail.inboxes import InboxAccess, resolve_inbox_access
from models.tenancy.access import Caller, OrgAccess, demand, resolve_org_access
from models.tenancy.rbac import Grants, GrantsCache
from models.tenancy.teams import TeamAccess, resolve_org_team_access
from web.api import Blueprint
from web.auth import Principal, current_principal, origin, protected
from web.context import db, inbox_caches, revisions, runtime
from web.errors import ErrorSchema

F = TypeVar("F", bound=Callable[..., Any])
REQUIRED_PERMISSION = "x-required-permission"
SYSTEM_ADMIN_ONLY = "x-system-admin-only"

# alt_response and doc need a Blueprint instance but use none of its state; this one is never
# registered, it only documents the answers the check can give.
_docs = Blueprint("permission-docs", __name__)


def grants() -> Grants:
    """Every role's permissions: the process's cached grants, checked once per request against
    the store's grants revision (`models.tenancy.rbac.GrantsCache`)."""
    if "grants" not in g:
        g.grants = GrantsCache.of(runtime().caches).get(db(), revisions())
    return g.grants


def caller() -> Caller:
    """The authenticated caller as the domain actions see them."""
    principal = current_principal()
    return Caller(user_id=principal.user.id, is_system_admin=principal.is_system_admin,
                  origin=origin())


def _insufficient_scope() -> Forbidden:
    """The refusal of an API key whose scopes lack the permission, counted."""
    metrics.API_KEY_AUTHENTICATIONS.labels("insufficient_scope").inc()
    return Forbidden(INSUFFICIENT_SCOPE)


def _authorize(principal: Principal, held: frozenset[str], permission: str) -> None:
    """Raise Forbidden unless the request may use `permission`: the key's scopes include it
    (for an API key: `insufficient scope`), and the caller's roles hold it."""
    if principal.api_key is not None and permission not in principal.api_key.scopes:
        raise _insufficient_scope()
    demand(held, permission)


def _check(principal: Principal, held: frozenset[str], permission: str | None,
           system_admin: bool) -> None:
    if system_admin and not principal.is_system_admin:
        raise Forbidden("system administrator only")
    if permission:
        _authorize(principal, held, permission)
    elif principal.api_key is not None:
        raise _insufficient_scope()  # nothing declared, so no scope can cover it


def _org_access(org_id: uuid.UUID, *, as_system_admin: bool = False) -> OrgAccess:
    return resolve_org_access(db(), grants(), caller(), org_id, as_system_admin=as_system_admin)


def _confine_key(principal: Principal, org_id: uuid.UUID, team_id: uuid.UUID,
                 missing: str) -> None:
    """Raise NotFound(`missing`) when an API key reaches outside its own team: for a key,
    nothing of another team exists."""
    key = principal.api_key
    if key is not None and (key.org_id != org_id or key.team_id != team_id):
        raise NotFound(missing)


def _confine_key_to_team(principal: Principal, org_id: uuid.UUID, team_id: uuid.UUID) -> None:
    """`_confine_key` for a team named by its ids: "team not found" in the key's own org, "org
    not found" in any other."""
    key = principal.api_key
    _confine_key(principal, org_id, team_id,
                 "team not found" if key and key.org_id == org_id else "org not found")


def authorize_team(org_id: uuid.UUID, team_id: uuid.UUID, permission: str | None, *,
                   system_admin: bool = False) -> TeamAccess:
    """The caller's access to team `team_id` of org `org_id`, once `permission` is authorized
    there (see `require_team`). Raise NotFound for a team of another org, or any team but an
    API key's own; Forbidden for a missing permission or scope."""
    principal = current_principal()
    _confine_key_to_team(principal, org_id, team_id)
    access = resolve_org_team_access(db(), grants(), caller(), org_id, team_id,
                                     as_system_admin=system_admin)
    _check(principal, access.permissions, permission, system_admin)
    return access


def authorize_team_access(access: TeamAccess, permission: str) -> TeamAccess:
    """`access` once `permission` is authorized there, as `authorize_team` answers for its team:
    for a caller's access to a team read with the row that named the team (the assignment a
    new inbox goes through), so the check reads nothing again."""
    principal = current_principal()
    _confine_key_to_team(principal, access.org.org.id, access.team.id)
    _check(principal, access.permissions, permission, system_admin=False)
    return access


def authorize_hidden_team(found: tuple[uuid.UUID, uuid.UUID] | None, permission: str,
                          missing: str) -> TeamAccess:
    """The caller's access to the team `found` names ((org id, team id), looked up from
    something the caller gave, such as an address), once `permission` is authorized there.
    NotFound(`missing`) when `found` is None and, with the same words, when the caller may not
    see that team (another org's, or one of theirs without the permission): otherwise the
    answer would tell another tenant's addresses and domains from unknown ones. An API key's
    scope is checked on its own team first, whatever `found` is: a key without the scope is
    a 403 as on every route."""
    key = current_principal().api_key
    if key is not None:
        authorize_team(key.org_id, key.team_id, permission)
    if found is None:
        raise NotFound(missing)
    try:
        return authorize_team(found[0], found[1], permission)
    except (NotFound, Forbidden):
        raise NotFound(missing) from None


def _document(view: F, permission: str | None, *, system_admin: bool = False, where: str,
              api_keys: bool, key_scope: bool = True) -> F:
    """Document the check's answers and the declared permission, and authenticate first
    (API keys only where `api_keys`; `key_scope` false: whatever their scopes)."""
    documented = _docs.alt_response(404, schema=ErrorSchema, description=(
        f"no such {where}, or not visible to the caller (another org)"))(view)
    if system_admin:
        refusal = "not a system administrator (API keys never are)"
    elif api_keys and not key_scope:
        refusal = (f"the caller lacks the {permission} permission (an API key needs no scope "
                   "here: its creator's roles decide)")
    elif api_keys:
        refusal = (f"the caller lacks the {permission} permission, or the API key lacks it as a "
                   "scope (insufficient scope)")
    else:
        refusal = f"the caller lacks the {permission} permission, or is an API key"
    documented = _docs.alt_response(403, schema=ErrorSchema, description=refusal)(documented)
    extensions: dict[str, Any] = {}
    if permission:
        extensions[REQUIRED_PERMISSION] = permission
    if system_admin:
        extensions[SYSTEM_ADMIN_ONLY] = True
    documented = Blueprint.doc(**extensions)(documented)
    return protected(_docs, api_keys=api_keys)(documented)  # type: ignore[return-value]


def require_org(permission: str | None, *, system_admin: bool = False) -> Callable[[F], F]:
    """Authorize `permission` in the org of the `org_id` path parameter; the view receives
    `org=OrgAccess` instead of `org_id`. `system_admin` works as for `require_team`."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, org_id: uuid.UUID, **kwargs: Any) -> Any:
            principal = current_principal()
            access = _org_access(org_id, as_system_admin=system_admin)
            _check(principal, access.permissions, permission, system_admin)
            return view(*args, org=access, **kwargs)

        return _document(wrapper, permission, system_admin=system_admin, where="org",  # type: ignore[arg-type]
                         api_keys=False)

    return decorate


def require_team(permission: str | None, *, system_admin: bool = False) -> Callable[[F], F]:
    """Authorize `permission` (an org or a team permission) in the team of the `team_id` path
    parameter, which must belong to the org of `org_id`; the view receives `team=TeamAccess`.

    With `system_admin`, the endpoint is for system administrators (who need not be members of
    the org) and `permission` may be None; members who are not system administrators get 403,
    everyone else 404."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, org_id: uuid.UUID, team_id: uuid.UUID, **kwargs: Any) -> Any:
            access = authorize_team(org_id, team_id, permission, system_admin=system_admin)
            return view(*args, team=access, **kwargs)

        return _document(wrapper, permission, system_admin=system_admin, where="team",  # type: ignore[arg-type]
                         api_keys=True)

    return decorate


# --- inboxes and e-mails: team resources found by their own ids ------------------------------

def authorize_inbox(inbox_id: uuid.UUID, permission: str) -> InboxAccess:
    """The caller's access to inbox `inbox_id` once `permission` is authorized on it: what its
    creator may do plus what the caller holds in the inbox's team (`models.mail.inboxes`); an API
    key reaches only its own team's inboxes, within its scopes. Raise NotFound (unknown, another
    org's, outside the key's team) or Forbidden (permission or scope)."""
    principal = current_principal()
    access = resolve_inbox_access(db(), grants(), caller(), inbox_id, inbox_caches())
    _confine_key(principal, access.inbox.org_id, access.inbox.team_id, "inbox not found")
    _check(principal, access.permissions, permission, system_admin=False)
    return access


def authorize_also(access: InboxAccess, permission: str) -> None:
    """Authorize one more permission on an inbox already reached through `authorize_inbox`
    (an endpoint that brings several parts, each needing its own permission): Forbidden
    exactly as `authorize_inbox(..., permission)` would answer."""
    _check(current_principal(), access.permissions, permission, system_admin=False)


def authorize_email(email_id: uuid.UUID, permission: str) -> EmailAccess:
    """As `authorize_inbox`, for the inbox of e-mail `email_id`."""
    principal = current_principal()
    access = resolve_email_access(db(), grants(), caller(), email_id, inbox_caches())
    inbox = access.inbox.inbox
    _confine_key(principal, inbox.org_id, inbox.team_id, "email not found")
    _check(principal, access.inbox.permissions, permission, system_admin=False)
    return access


def require_inbox(permission: str) -> Callable[[F], F]:
    """Authorize `permission` on the inbox of the `inbox_id` path parameter; the view receives
    `inbox=InboxAccess` instead of the id."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, inbox_id: uuid.UUID, **kwargs: Any) -> Any:
            return view(*args, inbox=authorize_inbox(inbox_id, permission), **kwargs)

        return _document(wrapper, permission, where="inbox", api_keys=True)  # type: ignore[arg-type]

    return decorate


def require_email(permission: str) -> Callable[[F], F]:
    """Authorize `permission` on the inbox of the e-mail of the `email_id` path parameter; the
    view receives `email=EmailAccess` instead of the id."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, email_id: uuid.UUID, **kwargs: Any) -> Any:
            return view(*args, email=authorize_email(email_id, permission), **kwargs)

        return _document(wrapper, permission, where="email", api_keys=True)  # type: ignore[arg-type]

    return decorate


def declares(permission: str, *, key_scope: bool = True) -> Callable[[F], F]:
    """For endpoints that act in a team named by the body or the query, or across the caller's
    teams (creating and listing inboxes, files): authenticate, refuse an API key whose scopes
    lack `permission` (insufficient scope) unless `key_scope` is false, and declare it in the
    OpenAPI document. The view then authorizes in the team it finds (`authorize_team`,
    `authorize_inbox`) or lists only the teams where the caller's roles hold the permission.

    `key_scope=False` is for `GET /my/domains` alone: clients written for the reference system
    call it with keys of any scopes (to find the assignment to create inboxes through), and
    the reference checks no scope there; the key's creator's roles still decide."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = current_principal().api_key
            if key_scope and key is not None and permission not in key.scopes:
                raise _insufficient_scope()
            return view(*args, **kwargs)

        return _document(wrapper, permission, where="team", api_keys=True,  # type: ignore[arg-type]
                         key_scope=key_scope)

    return decorate
