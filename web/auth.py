"""Who is calling: bearer authentication, the `protected` view decorator, the refresh cookie.

`Authorization: Bearer <value>`: a value starting with `bb_` is an API key, looked up by its
hash and never decoded as a JWT (`authenticate_api_key`); anything else must be an access token
whose session is still active. The caller is resolved once per request and kept for it;
`current_principal()` / `current_user()` read it from any view, permission check or later
middleware. Rights (is_system_admin) come from the user row, never from the token, and never
through an API key. The key or session and its user come from the process's callers' cache
(models.identity.callers) while no write to them has committed since they were read; every
check (revoked, expired, disabled, IP allowlist) runs on every request.

API keys are for team endpoints only. `protected` refuses them with 403 unless the endpoint opts
in with `api_keys=True`; `web.permissions.require_team` does, and then confines the key to its
own team and narrows its creator's rights to its scopes. So org-level and account endpoints
(and any new endpoint that does not opt in) refuse keys by this one rule.
"""

from __future__ import annotations

import binascii
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from flask import Response, after_this_request, g, request

from burnbox import metrics
from models.apikeys import keys
from models.apikeys.keys import (
    KeyGrant,
    authenticate_key,
)
from models.caching import Lookup, uncached
from models.errors import Forbidden, Unauthenticated
from models.identity.callers import CallerCache
from models.identity.sessions import Tokens, authenticate
from models.identity.users import User
from models.platform.audit import Origin
from web import key_usage
from web.api import Blueprint
from web.context import db, revisions, runtime
from web.per_request import client_ip

API_KEY_PREFIX = "bb_"
KEYS_REFUSED = "API keys cannot be used on this endpoint"
BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
REFRESH_COOKIE = "bb_refresh_token"
REFRESH_COOKIE_PATH = "/api/v1/auth"
# Set and dropped with the refresh cookie, on the whole site, holding no secret ("1"): it tells
# the UI's page, as the server serves it, that a session may be there to restore. Without it the
# page's first refresh was a 401 for every signed-out visitor, an error in the browser's console.
SESSION_HINT_COOKIE = "bb_session"
# The header a request must carry for the refresh cookie to count (see refresh_token_from).
CSRF_HEADER = "X-Burnbox-CSRF"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: a user, through one session (JWT) or one API key."""

    user: User
    session_id: uuid.UUID | None = None
    api_key: KeyGrant | None = None

    @property
    def is_system_admin(self) -> bool:
        """System-admin rights: from the user row, and never through an API key (a key acts
        for its team within its scopes, never with its creator's platform rights)."""
        return self.user.is_system_admin and self.api_key is None


def origin() -> Origin:
    """The current request's client IP and User-Agent, for sessions and audit entries."""
    return Origin(ip=client_ip(), user_agent=request.headers.get("User-Agent", ""))


def _bearer() -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise Unauthenticated("authentication required")
    return value.strip()


def presented_key() -> str | None:
    """The API key the request presents, without checking it: the `Authorization: Bearer`
    value, or the password of `Authorization: Basic` (what the Mailpit and MailHog clients the
    compat faces serve can send; the user name is ignored); None unless it starts with `bb_`.
    The rate limiter buckets by it and the compat faces authenticate it; the native API reads
    only Bearer (`current_principal`)."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            decoded = binascii.a2b_base64(value, strict_mode=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return None
        value = decoded.partition(":")[2]
    elif scheme.lower() != "bearer":
        return None
    return value if value.startswith(API_KEY_PREFIX) else None


# The outcome label of each rejection message of `authenticate_key` (docs/api-keys.md's table).
_REFUSALS = {keys.INVALID: "invalid", keys.REVOKED: "revoked", keys.EXPIRED: "expired",
             keys.DISABLED: "disabled", keys.IP_REFUSED: "ip_refused"}


def authenticate_api_key(raw_key: str) -> Principal:
    """The principal of an API key: its creator, narrowed to the key. Raise Unauthenticated or
    Forbidden with the rejection messages of docs/api-keys.md. The request is counted as the
    key's usage when it ends, unless it was refused (401/403: not an accepted request)."""
    try:
        user, key = authenticate_key(db(), raw_key, client_ip(), lookup=_callers_lookup())
    except (Unauthenticated, Forbidden) as refusal:
        metrics.API_KEY_AUTHENTICATIONS.labels(_REFUSALS.get(refusal.message, "invalid")).inc()
        raise  # usage counted ahead is taken back when the request ends (web.key_usage)
    metrics.API_KEY_AUTHENTICATIONS.labels("accepted").inc()
    key_usage.accepted(key.id, client_ip())
    return Principal(user=user, api_key=key)


def _callers_lookup() -> Lookup[Any]:
    """The process's cached credentials and users, checked against this request's revisions;
    without Redis, nothing cached: a process's memory store is its own, and a change made by
    another process on the same database (a `burnbox keys revoke` beside `burnbox serve`, a
    second worker) could not move the revision this process reads."""
    rt = runtime()
    if not rt.settings.redis.url:
        return uncached
    return functools.partial(CallerCache.of(rt.caches).get, revisions())


def current_principal() -> Principal:
    """The authenticated caller of this request (resolved once); raise Unauthenticated."""
    principal = g.get("principal")
    if principal is None:
        token = _bearer()
        if token.startswith(API_KEY_PREFIX):
            principal = authenticate_api_key(token)
        else:
            user, session_id = authenticate(db(), runtime().settings, token,
                                            lookup=_callers_lookup())
            principal = Principal(user=user, session_id=session_id)
        g.principal = principal
    return principal


def current_user() -> User:
    """The authenticated user of this request; raise Unauthenticated."""
    return current_principal().user


def current_session_id() -> uuid.UUID:
    """The session of a JWT-authenticated request; raise Forbidden for API keys, which have
    none (session management needs a signed-in user)."""
    principal = current_principal()
    if principal.session_id is None:
        raise Forbidden("this operation needs a signed-in user, not an API key")
    return principal.session_id


def protected(blp: Blueprint, *, system_admin: bool = False,
              api_keys: bool = False) -> Callable[[F], F]:
    """Require an authenticated caller (and a system admin when asked) before the view runs,
    before its body is even parsed; document the bearer security and the 401/403 answers.

    API keys are refused with 403 unless `api_keys` is true; an endpoint that accepts them must
    confine each key to its team and scopes itself (as `web.permissions.require_team` does)."""

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            principal = current_principal()
            if principal.api_key is not None and not api_keys:
                raise Forbidden(KEYS_REFUSED)
            if system_admin and not principal.is_system_admin:
                raise Forbidden("system administrator only")
            return view(*args, **kwargs)

        wrapped = blp.alt_response(401, description="missing, invalid or revoked credentials")(
            wrapper)
        if system_admin or not api_keys:
            wrapped = blp.alt_response(403, description=(
                "not a system administrator, or an API key" if system_admin
                else "an API key (this endpoint needs a signed-in user)"))(wrapped)
        return blp.doc(security=BEARER)(wrapped)  # type: ignore[return-value]

    return decorate


def _cookie_secure() -> bool:
    setting = runtime().settings.auth.cookie_secure
    if setting != "auto":
        return setting == "true"
    return request.is_secure or runtime().settings.http.url.startswith("https://")


def deliver_refresh_cookie(refresh_token: str) -> None:
    """Send the refresh token as the httpOnly `bb_refresh_token` cookie, scoped to the auth
    endpoints. SameSite=None forces Secure, which browsers demand of it."""
    settings = runtime().settings
    samesite = settings.auth.cookie_samesite
    secure = _cookie_secure() or samesite == "None"
    max_age = int(settings.auth.refresh_token_ttl.total_seconds())

    @after_this_request
    def set_cookie(response: Response) -> Response:
        response.set_cookie(REFRESH_COOKIE, refresh_token, max_age=max_age,
                            path=REFRESH_COOKIE_PATH, secure=secure, httponly=True,
                            samesite=samesite)
        response.set_cookie(SESSION_HINT_COOKIE, "1", max_age=max_age, path="/", secure=secure,
                            httponly=True, samesite=samesite)
        return response


def clear_refresh_cookie() -> None:
    """Tell the browser to drop the refresh cookie (and its hint)."""

    @after_this_request
    def delete_cookie(response: Response) -> Response:
        samesite = runtime().settings.auth.cookie_samesite
        response.delete_cookie(REFRESH_COOKIE, path=REFRESH_COOKIE_PATH, httponly=True,
                               secure=_cookie_secure(), samesite=samesite)
        response.delete_cookie(SESSION_HINT_COOKIE, path="/", httponly=True,
                               secure=_cookie_secure(), samesite=samesite)
        return response


def refresh_token_from(body: dict[str, Any]) -> tuple[str | None, bool]:
    """The refresh token of a request: the body's, else the cookie's; and whether it came from
    the cookie.

    The cookie counts only with the `X-Burnbox-CSRF` header (any value), else 403. Why: the
    browser attaches the cookie by itself, so a page of another site could post a form to
    /auth/refresh or /auth/logout (a form's text/plain body parses as `{}`); SameSite=Lax stops
    that in today's browsers but `auth.cookie_samesite` may be None. A cross-site form cannot
    set a header, and a cross-site fetch that sets one needs a CORS preflight we never grant.
    """
    if body.get("refresh_token"):
        return body["refresh_token"], False
    cookie = request.cookies.get(REFRESH_COOKIE)
    if not cookie:
        return None, False
    if CSRF_HEADER not in request.headers:
        raise Forbidden(f"the refresh cookie is only accepted with the {CSRF_HEADER} header")
    return cookie, True


def token_body(tokens: Tokens, use_cookie: bool) -> dict[str, Any]:
    """The `tokens` object of a response. In cookie mode the refresh token goes out as the
    cookie and is left out of the JSON, where page scripts could read it."""
    body: dict[str, Any] = {"access_token": tokens.access_token, "token_type": "Bearer",
                            "expires_in": tokens.expires_in}
    if use_cookie:
        deliver_refresh_cookie(tokens.refresh_token)
    else:
        body["refresh_token"] = tokens.refresh_token
    return body
