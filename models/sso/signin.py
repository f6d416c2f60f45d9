"""Signing in (and linking an account) through an OpenID Connect provider.

The flow (GET /auth/sso/:provider, then the provider, then GET /auth/sso/:provider/callback):

- `start` stores what the callback must check under a random `state`, in the key-value store,
  for `STATE_TTL` (10 minutes), single use (taken and deleted by the callback): the provider,
  the `nonce` the ID token must carry, the PKCE verifier, the redirect URI, a hash of the
  browser binding (below), and for a link the user and session that asked for it. Nothing of
  it travels through the browser but `state` itself.
- The browser binding: `start` also returns a random value the web face sets as an httpOnly
  cookie of this flow alone (named from `flow_id(state)`), and the callback must present it.
  A `state` alone would let someone start a sign-in (or a link of their own account) and
  have another person's browser finish it, signing that person into the attacker's account
  or linking the person's provider account to the attacker's. The cookie is a check, never
  a source: who is linked comes only from the stored intent (a client cookie naming the
  target user once let anyone link any account).
- `finish` validates everything (see `models.sso.oidc`; the claims come from the ID token, or
  from UserInfo when it lacks the address claims), finds or creates the user, and opens
  a session within the session limit (`models.identity.sessions.sign_in`). The browser is then
  given a one-time code (`CODE_TTL`, 60 s, single use) that `exchange` trades for tokens,
  so no token ever appears in a URL; at the limit it gets the same pending token a password
  login gets, for POST /auth/login/resolve.

Finding the user: by identity (provider, subject); else by address, when the provider says it
is verified (`email_verified` true) and the provider may vouch for the domain
(`allowed_domains`) and a mapping covers it or the provider auto-provisions; the identity is
then linked, provided the account's own address is verified too (else whoever registered the
address first would share the account with its owner). Else, under the same conditions, a new
SSO-only account (no password, address verified) is created with the memberships of the
mappings. Anyone else is refused: the platform is invitation-based for them.
"""

from __future__ import annotations

import hmac
import json
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from burnbox.kv import KeyValueStore, StoreUnavailable
from burnbox.secretbox import SecretBox, SecretsUnavailable
from burnbox.security import hash_token, new_token
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from models.db import detached_copy, end_read_only_transaction
from models.errors import Conflict, NotFound, Unauthenticated
from models.identity.sessions import (
    SignedIn,
    UserSession,
    issue_tokens,
    lock_user,
    sign_in,
)
from models.identity.users import MAX_DISPLAY_NAME, User, find_by_email, new_user
from models.platform.audit import Origin, record_audit
from models.platform.settings import live_settings
from models.sso import oidc
from models.sso.discovery import ProviderFailure
from models.sso.identities import find_identity, link_identity, mark_session
from models.sso.mappings import domain_allowed, email_domain, matching_mappings, org_roles
from models.sso.providers import SsoProvider
from models.tenancy.members import join_org
from models.tenancy.orgs import OrgMember
from models.tenancy.teams import Team, TeamMember

log = logging.getLogger(__name__)

STATE_TTL = timedelta(minutes=10)
# What the callback accepts from the browser: our states are 43 characters, and providers'
# codes are far shorter than this.
MAX_STATE = 512
MAX_CODE = 4096
CODE_TTL = timedelta(seconds=60)
SSO_PROVISION = "auth.sso_provision"
SSO_LOGIN_FAILED = "auth.sso_login_failed"
CALLBACK_PATH = "/api/v1/auth/sso/{name}/callback"
MALFORMED = "the answer brought back from the identity provider is malformed; start again"


class SsoFailed(Exception):
    """The sign-in or link cannot go on; the message is for the user (never a secret)."""


@dataclass(frozen=True)
class Started:
    """Where to send the browser, and the binding value to set as its cookie, under a name
    made from `flow` (see `flow_id`)."""

    authorization_url: str
    binding: str
    flow: str


@dataclass(frozen=True)
class Linked:
    """A link completed: the provider's name."""

    provider: str


@dataclass(frozen=True)
class Intent:
    """What `start` stored for the callback (see the module docstring)."""

    provider_id: uuid.UUID
    nonce: str
    verifier: str
    redirect_uri: str
    binding_hash: str
    link_user_id: uuid.UUID | None
    link_session_id: uuid.UUID | None

    def dump(self) -> str:
        return json.dumps({"provider_id": str(self.provider_id), "nonce": self.nonce,
                           "verifier": self.verifier, "redirect_uri": self.redirect_uri,
                           "binding_hash": self.binding_hash,
                           "link_user_id": _str(self.link_user_id),
                           "link_session_id": _str(self.link_session_id)})

    @classmethod
    def load(cls, raw: str) -> Intent:
        data = json.loads(raw)
        return cls(provider_id=uuid.UUID(data["provider_id"]), nonce=data["nonce"],
                   verifier=data["verifier"], redirect_uri=data["redirect_uri"],
                   binding_hash=data["binding_hash"],
                   link_user_id=_uuid(data["link_user_id"]),
                   link_session_id=_uuid(data["link_session_id"]))


def _str(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def _uuid(value: str | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(value)


def flow_id(state: str) -> str:
    """A short name for the flow of `state`, for its browser binding's cookie. Each flow has
    its own cookie: with one cookie for every flow, a second sign-in started in the same
    browser replaced the first one's binding, and any refused callback (a stray link) deleted
    the binding of the sign-in in progress. 64 bits of the state's hash: distinct for the few
    flows one browser has going, and the state itself stays out of cookie names."""
    return hash_token(state)[:16]


def _state_key(state: str) -> str:
    return f"sso-state:{hash_token(state)}"


def _code_key(code: str) -> str:
    return f"sso-code:{hash_token(code)}"


def enabled_provider(session: Session, name: str) -> SsoProvider:
    """The enabled provider named `name`; NotFound otherwise (a disabled one included)."""
    provider = session.scalar(select(SsoProvider).where(SsoProvider.name == name))
    if provider is None or not provider.enabled:
        raise NotFound("no such SSO provider")
    return provider


def redirect_uri(settings: Settings, provider: SsoProvider) -> str:
    """The callback URL registered at the provider: its own `redirect_url`, or the one
    derived from `http.public_url`."""
    return provider.redirect_url or settings.http.url + CALLBACK_PATH.format(name=provider.name)


def start(session: Session, store: KeyValueStore, settings: Settings, provider_name: str, *,
          link_user_id: uuid.UUID | None = None,
          link_session_id: uuid.UUID | None = None) -> Started:
    """Begin a sign-in (or, with `link_user_id` and `link_session_id`, a link to that signed-in
    user). Raise NotFound for an unknown or disabled provider, SsoFailed when its discovery
    document cannot be read or the key-value store is down."""
    # The discovery document comes over the network: the transaction ends first (a copy of
    # the provider's columns outlives it), or on SQLite it would hold the writer lock that
    # every SMTP delivery needs while the provider answers.
    provider = detached_copy(enabled_provider(session, provider_name))
    end_read_only_transaction(session)
    try:
        endpoints = oidc.discover(settings, provider.issuer_url)
    except ProviderFailure as exc:
        log.warning("SSO provider unavailable", extra={"provider": provider.name,
                                                       "reason": str(exc)})
        raise SsoFailed("the identity provider is unavailable; try again later") from exc
    state, nonce, verifier, binding = new_token(), new_token(), new_token(), new_token()
    uri = redirect_uri(settings, provider)
    intent = Intent(provider_id=provider.id, nonce=nonce, verifier=verifier, redirect_uri=uri,
                    binding_hash=hash_token(binding), link_user_id=link_user_id,
                    link_session_id=link_session_id)
    try:
        store.set(_state_key(state), intent.dump(), STATE_TTL)
    except StoreUnavailable as exc:
        raise SsoFailed("single sign-on is unavailable right now; try again later") from exc
    # A link attaches whoever signs in at the provider to this account. The provider's session
    # in this browser may be someone else's (a shared computer, a colleague who did not sign
    # out): without asking for a fresh sign-in, their account was linked silently.
    url = oidc.authorization_url(endpoints, client_id=provider.client_id, redirect_uri=uri,
                                 state=state, nonce=nonce, verifier=verifier,
                                 reauthenticate=link_user_id is not None)
    return Started(authorization_url=url, binding=binding, flow=flow_id(state))


def take_intent(store: KeyValueStore, state: str, binding: str | None) -> Intent:
    """The stored intent of `state`, deleted from the store (single use, even when the checks
    below fail). Raise SsoFailed when it is unknown, used, expired, longer than MAX_STATE, or
    the browser does not present its binding, or holds a character that is not printable (the
    callback takes its parameters as plain strings, so that a browser always gets a redirect).
    The provider is checked by `finish`."""
    if len(state) > MAX_STATE or not state.isprintable():
        raise SsoFailed(MALFORMED)
    try:
        raw = store.take(_state_key(state)) if state else None
    except StoreUnavailable as exc:
        raise SsoFailed("single sign-on is unavailable right now; try again later") from exc
    if raw is None:
        raise SsoFailed("this sign-in has expired or was already used; start again")
    intent = Intent.load(raw)
    if not binding or not hmac.compare_digest(hash_token(binding), intent.binding_hash):
        raise SsoFailed("this sign-in was started in another browser; start again")
    return intent


def finish(session: Session, store: KeyValueStore, settings: Settings, box: SecretBox,
           provider_name: str, intent: Intent, *, code: str | None, error: str | None,
           origin: Origin) -> SignedIn | Linked:
    """Complete the sign-in or link of `intent` with the provider's answer. Return the
    SignedIn (a session opened) or Linked. Raise SsoFailed for every refusal,
    SessionLimitReached at the session limit (the identity link and provisioning it made
    stand, as `sign_in` keeps what the transaction holds)."""
    provider = _intent_provider(session, provider_name, intent)
    if error:
        # The provider's own words stay out: only its OAuth error code, if it is one.
        shown = error if oidc.ERROR_CODE.fullmatch(error) else "an error"
        raise SsoFailed(f"the identity provider refused the sign-in ({shown})")
    if not code:
        raise SsoFailed("the identity provider answered without a code")
    if len(code) > MAX_CODE or not code.isprintable():
        raise SsoFailed(MALFORMED)
    # The provider is asked three or four times (discovery, token, keys, UserInfo) with no
    # transaction open; what it answered is then applied in a new one, to the provider as it
    # is by then (disabled meanwhile: refused).
    copy = detached_copy(provider)
    end_read_only_transaction(session)
    claims = _verified_claims(settings, box, copy, intent, code)
    provider = _intent_provider(session, provider_name, intent)
    if intent.link_user_id is not None:
        return _link(session, provider, intent, claims, origin)
    user = _user_for(session, settings, provider, claims, origin)
    locked = lock_user(session, user.id)
    if locked is None:
        raise SsoFailed("the account is gone")
    identity = find_identity(session, provider.id, claims["sub"])
    if identity is not None:
        identity.last_used_at = utcnow()
    signed_in = sign_in(session, store, settings, locked, origin,
                        via={"method": "sso", "provider": provider.name})
    mark_session(session, signed_in.session_id, provider.id)
    return signed_in


def _intent_provider(session: Session, provider_name: str, intent: Intent) -> SsoProvider:
    """The enabled provider `intent` was started with, named `provider_name`; SsoFailed
    otherwise."""
    provider = session.get(SsoProvider, intent.provider_id)
    if provider is None or provider.name != provider_name or not provider.enabled:
        raise SsoFailed("this sign-in does not belong to this provider; start again")
    return provider


def _verified_claims(settings: Settings, box: SecretBox, provider: SsoProvider, intent: Intent,
                     code: str) -> dict[str, Any]:
    """The claims of the person who signed in: the validated ID token's, completed from
    UserInfo when needed. SsoFailed (logged with the technical reason) otherwise."""
    try:
        secret = box.open(provider.client_secret_sealed) if provider.client_secret_sealed else None
    except SecretsUnavailable as exc:
        log.error("cannot open the SSO client secret", extra={"provider": provider.name})
        raise SsoFailed("single sign-on is misconfigured; tell an administrator") from exc
    try:
        endpoints = oidc.discover(settings, provider.issuer_url)
        tokens = oidc.exchange_code(settings, endpoints, client_id=provider.client_id,
                                    client_secret=secret, code=code, verifier=intent.verifier,
                                    redirect_uri=intent.redirect_uri)
        claims = oidc.validate_id_token(settings, endpoints, tokens.id_token,
                                        client_id=provider.client_id, nonce=intent.nonce)
        return oidc.with_userinfo(settings, endpoints, claims, tokens.access_token,
                                  client_id=provider.client_id)
    except ProviderFailure as exc:
        log.warning("SSO provider failed", extra={"provider": provider.name, "reason": str(exc)})
        raise SsoFailed("the identity provider is unavailable or refused the code; "
                        "try again") from exc
    except (oidc.InvalidIdToken, oidc.InvalidUserInfo) as exc:
        log.warning("SSO ID token or UserInfo refused", extra={"provider": provider.name,
                                                               "reason": str(exc)})
        raise SsoFailed(f"the sign-in was refused: {exc}") from exc


def _claimed_email(claims: dict[str, Any]) -> str | None:
    """The address the provider vouches for: only with `email_verified` exactly true."""
    email = claims.get("email")
    if claims.get("email_verified") is not True or not isinstance(email, str):
        return None
    email = email.strip().lower()
    return email if "@" in email and len(email) <= 254 else None


def _display_name(claims: dict[str, Any], email: str) -> str:
    name = claims.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()[:MAX_DISPLAY_NAME]
    return email.split("@", 1)[0][:MAX_DISPLAY_NAME] or "user"


def _user_for(session: Session, settings: Settings, provider: SsoProvider,
              claims: dict[str, Any], origin: Origin) -> User:
    """The user this ID token signs in (see the module docstring), linking or creating them;
    SsoFailed for anyone the provider may not bring in."""
    identity = find_identity(session, provider.id, claims["sub"])
    if identity is not None:
        user = session.get(User, identity.user_id)
        if user is None:
            raise SsoFailed("the account is gone")
        return user
    email = _claimed_email(claims)
    if email is None:
        raise SsoFailed("the identity provider did not vouch for a verified e-mail address")
    domain = email_domain(email)
    rules = matching_mappings(session, provider.id, domain)
    if not domain_allowed(provider, domain) or not (rules or provider.auto_provision):
        raise SsoFailed("no account for this address here: ask for an invitation")
    name = _display_name(claims, email)
    user = find_by_email(session, email)
    if user is None:
        user = _provision(session, settings, provider, email, name, rules, origin)
    elif not user.email_verified:
        # Someone may have registered the address before its owner first signed in with SSO,
        # and would keep their password into the account the owner then uses: an unverified
        # account is never taken over by address.
        raise SsoFailed("an account with this address exists but its address is not verified: "
                        "sign in with its password and link the provider from the account page")
    link_identity(session, user, provider, subject=claims["sub"], email=email,
                  display_name=name, origin=origin)
    return user


def _provision(session: Session, settings: Settings, provider: SsoProvider, email: str,
               name: str, rules: list[Any], origin: Origin) -> User:
    """A new SSO-only account (no password; the provider verified the address) with the
    memberships the mappings give: per org the highest mapped role, and each mapped team."""
    user = new_user(email=email, display_name=name, password_hash=None,
                    datetime_defaults=live_settings(session, settings).defaults)
    user.email_verified = True
    try:
        with session.begin_nested():
            session.add(user)
            session.flush()
    except IntegrityError as exc:
        # Two first sign-ins of one address at once: the other one created the account.
        raise SsoFailed("the account is being created by another sign-in; try again") from exc
    for org_id, role in org_roles(session, rules).items():
        join_org(session, org_id, user, role)
    for rule in rules:
        team = session.get(Team, rule.team_id) if rule.team_id else None
        if (team is not None and not team.is_archived
                and session.get(OrgMember, (team.org_id, user.id)) is not None
                and session.get(TeamMember, (team.id, user.id)) is None):
            session.add(TeamMember(team_id=team.id, user_id=user.id,
                                   role=rule.team_role or "member", created_at=utcnow()))
    session.flush()
    record_audit(session, SSO_PROVISION, actor_id=user.id, resource_type="user",
                 resource_id=user.id, ip=origin.ip, user_agent=origin.user_agent,
                 after={"email": email, "provider": provider.name,
                        "orgs": sorted(str(org_id) for org_id in org_roles(session, rules)),
                        "teams": sorted(str(rule.team_id) for rule in rules if rule.team_id)})
    return user


def _link(session: Session, provider: SsoProvider, intent: Intent, claims: dict[str, Any],
          origin: Origin) -> Linked:
    """Link the token's identity to the user who started the link, while the session that
    started it is still active (ended meanwhile: refused)."""
    user_session = session.get(UserSession, intent.link_session_id)
    if (user_session is None or user_session.user_id != intent.link_user_id
            or user_session.revoked_at is not None or user_session.expires_at <= utcnow()):
        raise SsoFailed("the session that started the link has ended; sign in and start again")
    user = lock_user(session, user_session.user_id)
    if user is None or user.disabled_at is not None:
        raise SsoFailed("the account cannot be linked")
    email = _claimed_email(claims) or ""
    try:
        link_identity(session, user, provider, subject=claims["sub"], email=email,
                      display_name=_display_name(claims, email or user.email), origin=origin)
    except Conflict as exc:
        raise SsoFailed(str(exc)) from exc
    return Linked(provider=provider.name)


def record_failure(session: Session, provider_name: str, reason: str, origin: Origin) -> None:
    """Audit and log a refused SSO sign-in or link (its own transaction: the refused one is
    rolled back). The log line carries the reason, as the audit entry does: the person only
    sees a short message, and an operator reads the server log first."""
    log.warning("SSO sign-in refused", extra={"provider": provider_name[:64], "reason": reason})
    record_audit(session, SSO_LOGIN_FAILED, actor_id=None, resource_type="sso_provider",
                 resource_id=None, ip=origin.ip, user_agent=origin.user_agent,
                 after={"provider": provider_name[:64], "reason": reason})


def stash_code(store: KeyValueStore, signed_in: SignedIn) -> str:
    """A one-time code (CODE_TTL, single use) the browser trades for the tokens of the session
    just opened. Raise SsoFailed when the store is down."""
    code = new_token()
    value = json.dumps({"user_id": str(signed_in.user.id),
                        "session_id": str(signed_in.session_id)})
    try:
        store.set(_code_key(code), value, CODE_TTL)
    except StoreUnavailable as exc:
        raise SsoFailed("single sign-on is unavailable right now; try again later") from exc
    return code


def exchange(session: Session, store: KeyValueStore, settings: Settings, code: str) -> SignedIn:
    """The user and fresh tokens of the session behind a one-time code, which is consumed.
    Unauthenticated for an unknown, used or expired code, or a session ended meanwhile."""
    try:
        raw = store.take(_code_key(code))
    except StoreUnavailable as exc:
        raise Unauthenticated("single sign-on is unavailable right now; sign in again") from exc
    if raw is None:
        raise Unauthenticated("invalid or expired code")
    data = json.loads(raw)
    return issue_tokens(session, settings, uuid.UUID(data["user_id"]),
                        uuid.UUID(data["session_id"]))
