"""The OpenID Connect relying party: the authorization request (state, nonce, PKCE S256), the
code exchange at the token endpoint, the validation of the ID token, and the UserInfo read
that completes its claims when the ID token lacks them (`with_userinfo`).

Every call to the provider (discovery, token endpoint, JWKS, UserInfo) goes through
`burnbox.http_client` with the outbound guard, so a provider's document cannot point this
server at an internal address (unless `sso.allow_private_issuers`). The ID token is checked by
PyJWT (`jwt.decode`: signature, `iss`, `aud`, `exp`, `iat`), never by code of ours; what PyJWT
leaves to the caller is done here: only asymmetric algorithms are accepted (`none` and HS256
are refused: an HS256 token would be "signed" with the client secret, which is no proof the
provider issued it), the key comes from the provider's JWKS by `kid`, and the nonce must be
the one this sign-in sent.

JWKS are kept per process for `JWKS_TTL`; a token naming a `kid` the kept set lacks makes one
refetch (the provider rotated its keys), and a still unknown `kid` is refused. A signature the
kept key does not verify makes one refetch too: a provider may replace a key under the same
`kid`, and a provider now answering at an address another one used has other keys (a sign-in
was refused as "signature is not valid" until the kept set expired).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

import jwt
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

from burnbox import http_client
from burnbox.settings import Settings
from models.sso.discovery import (
    MAX_DOCUMENT,
    TIMEOUT,
    ProviderFailure,
    checked_document,
    discovery_url,
    fetch_json,
    provider_call,
)

# Asymmetric signatures only: see the module docstring.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
              "EdDSA")
# Clock skew allowed between the provider and this server for exp, iat and nbf.
LEEWAY_SECONDS = 60
JWKS_TTL = 3600.0
T = TypeVar("T")
SCOPES = "openid email profile"
# What sign-in reads from the UserInfo answer (see `with_userinfo`).
USERINFO_CLAIMS = ("email", "email_verified", "name")
# An OAuth error code (RFC 6749, section 5.2: `invalid_grant`...), the only part of a
# provider's error shown to anyone: its description is the provider's free text.
ERROR_CODE = re.compile(r"[a-z_]{1,64}")


class InvalidIdToken(Exception):
    """The ID token is not acceptable; the message says why (never the token itself)."""


class InvalidUserInfo(Exception):
    """The UserInfo answer is not acceptable; the message says why (never its content)."""


@dataclass(frozen=True)
class Endpoints:
    """What sign-in needs from a provider's discovery document (`userinfo_endpoint`: None
    when the document names none)."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None = None


@dataclass(frozen=True)
class Tokens:
    """What the token endpoint answered that sign-in uses (`access_token`: None when it
    gave none; it is only needed for UserInfo)."""

    id_token: str
    access_token: str | None


def discover(settings: Settings, issuer: str) -> Endpoints:
    """The provider's endpoints from its discovery document (fetched through the guard);
    ProviderFailure when it cannot be read or is not a valid document of `issuer`."""
    _, document = fetch_json(settings, discovery_url(issuer))
    jwks_uri = checked_document(issuer, document)
    userinfo = document.get("userinfo_endpoint")
    return Endpoints(issuer=document["issuer"],
                     authorization_endpoint=document["authorization_endpoint"],
                     token_endpoint=document["token_endpoint"], jwks_uri=jwks_uri,
                     userinfo_endpoint=userinfo if isinstance(userinfo, str) else None)


def pkce_challenge(verifier: str) -> str:
    """The S256 code challenge of `verifier` (RFC 7636, section 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(endpoints: Endpoints, *, client_id: str, redirect_uri: str, state: str,
                      nonce: str, verifier: str, reauthenticate: bool = False) -> str:
    """Where to send the browser: the authorization code flow with PKCE S256; with
    `reauthenticate`, asking the provider to have the person sign in again (`prompt=login`)
    rather than reuse a session it holds."""
    fields = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
              "scope": SCOPES, "state": state, "nonce": nonce,
              "code_challenge": pkce_challenge(verifier), "code_challenge_method": "S256"}
    if reauthenticate:
        fields["prompt"] = "login"
    query = urlencode(fields)
    separator = "&" if "?" in endpoints.authorization_endpoint else "?"
    return f"{endpoints.authorization_endpoint}{separator}{query}"


def exchange_code(settings: Settings, endpoints: Endpoints, *, client_id: str,
                  client_secret: str | None, code: str, verifier: str,
                  redirect_uri: str) -> Tokens:
    """Trade the authorization code for tokens at the token endpoint; return the ID token and
    the access token.
    A confidential client authenticates with HTTP Basic (client_secret_basic, the default of
    OpenID Connect); a public one sends its client_id only. ProviderFailure when the provider
    cannot be reached or refuses (its OAuth `error` code is named, its description is not:
    it is the provider's text)."""
    fields = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
              "code_verifier": verifier, "client_id": client_id}
    headers = {}
    if client_secret:
        pair = f"{_form_quote(client_id)}:{_form_quote(client_secret)}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    url = endpoints.token_endpoint
    with provider_call(url):
        answer = http_client.post_form(url, fields, headers=headers, timeout=TIMEOUT,
                                       limit=MAX_DOCUMENT,
                                       allow_private=settings.sso.allow_private_issuers,
                                       ca_file=settings.webhooks.ca_file)
    try:
        body = json.loads(answer.body)
    except ValueError:
        body = None
    if answer.status != 200 or not isinstance(body, dict):
        error = body.get("error") if isinstance(body, dict) else None
        named = f" ({error})" if isinstance(error, str) and ERROR_CODE.fullmatch(error) else ""
        raise ProviderFailure(f"the token endpoint answered HTTP {answer.status}{named}",
                              answer.status)
    id_token = body.get("id_token")
    if not isinstance(id_token, str) or not id_token:
        raise ProviderFailure("the token endpoint answered no id_token", answer.status)
    access_token = body.get("access_token")
    return Tokens(id_token=id_token,
                  access_token=access_token if isinstance(access_token, str) else None)


def _form_quote(value: str) -> str:
    # RFC 6749, section 2.3.1: the client id and secret are form-encoded before Basic.
    return urlencode({"": value})[1:]


class _KeyCache:
    """JWKS by address, kept for JWKS_TTL, shared by the threads of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[float, PyJWKSet]] = {}

    def get(self, uri: str) -> PyJWKSet | None:
        with self._lock:
            kept = self._sets.get(uri)
        if kept is None or time.monotonic() - kept[0] > JWKS_TTL:
            return None
        return kept[1]

    def put(self, uri: str, keys: PyJWKSet) -> None:
        with self._lock:
            self._sets[uri] = (time.monotonic(), keys)


_keys = _KeyCache()


def _fetch_keys(settings: Settings, uri: str) -> PyJWKSet:
    _, document = fetch_json(settings, uri)
    try:
        keys = PyJWKSet.from_dict(document)
    except (PyJWKError, PyJWKSetError, TypeError, AttributeError) as exc:
        raise ProviderFailure(f"the JWKS holds no usable key: {exc}") from exc
    _keys.put(uri, keys)
    return keys


def _pick(keys: PyJWKSet, kid: str | None) -> PyJWK | None:
    usable = [key for key in keys.keys if key.public_key_use in (None, "sig")]
    if kid is not None:
        return next((key for key in usable if key.key_id == kid), None)
    # No kid: acceptable only when the set leaves no choice.
    return usable[0] if len(usable) == 1 else None


def signing_key(settings: Settings, jwks_uri: str, kid: str | None, *,
                fresh: bool = False) -> PyJWK:
    """The provider's key for `kid`, from the kept JWKS (unless `fresh`) or, when it lacks the
    key, from one fresh fetch (rotation). InvalidIdToken when the provider has no such key."""
    kept = None if fresh else _keys.get(jwks_uri)
    key = _pick(kept, kid) if kept is not None else None
    if key is None:
        key = _pick(_fetch_keys(settings, jwks_uri), kid)
    if key is None:
        raise InvalidIdToken("the ID token is signed with a key the provider does not publish")
    return key


def verified_with_provider_key(settings: Settings, jwks_uri: str, kid: str | None,
                               decode: Callable[[PyJWK], T]) -> T:
    """`decode(key)` with the provider's key for `kid`; when that key (a kept one) does not
    verify the signature, once more with the key of a fresh JWKS. InvalidIdToken when the
    provider has no such key; what `decode` raises otherwise."""
    key = signing_key(settings, jwks_uri, kid)
    try:
        return decode(key)
    except jwt.InvalidSignatureError:
        return decode(signing_key(settings, jwks_uri, kid, fresh=True))


def validate_id_token(settings: Settings, endpoints: Endpoints, token: str, *, client_id: str,
                      nonce: str) -> dict[str, Any]:
    """The claims of a valid ID token: signed by the provider's key with an asymmetric
    algorithm, issued by `endpoints.issuer` for `client_id`, not expired, with `iat`, `sub`
    and exactly `nonce`. InvalidIdToken for each way it is not; ProviderFailure when the keys
    cannot be fetched."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as exc:
        raise InvalidIdToken("the ID token is malformed") from exc
    algorithm = header.get("alg")
    if algorithm not in ALGORITHMS:
        raise InvalidIdToken(f"the ID token's algorithm {str(algorithm)[:16]!r} is not accepted "
                             "(unsigned and shared-secret tokens are refused)")
    kid = header.get("kid")

    def decode(key: PyJWK) -> dict[str, Any]:
        return jwt.decode(token, key.key, algorithms=[algorithm], audience=client_id,
                          issuer=endpoints.issuer, leeway=LEEWAY_SECONDS,
                          options={"require": ["exp", "iat", "iss", "aud", "sub"]})

    try:
        claims = verified_with_provider_key(settings, endpoints.jwks_uri,
                                            kid if isinstance(kid, str) else None, decode)
    except jwt.ExpiredSignatureError as exc:
        raise InvalidIdToken("the ID token has expired") from exc
    except jwt.InvalidAudienceError as exc:
        raise InvalidIdToken("the ID token was issued for another client") from exc
    except jwt.InvalidIssuerError as exc:
        raise InvalidIdToken("the ID token was issued by another issuer") from exc
    except jwt.InvalidSignatureError as exc:
        raise InvalidIdToken("the ID token's signature is not valid") from exc
    except jwt.InvalidTokenError as exc:
        raise InvalidIdToken(f"the ID token is not valid: {exc}") from exc
    # OpenID Connect Core 3.1.3.7: with several audiences, azp must be this client.
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise InvalidIdToken("the ID token was issued for another client")
    sent = claims.get("nonce")
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), nonce.encode()):
        raise InvalidIdToken("the ID token's nonce does not match this sign-in")
    if not isinstance(claims["sub"], str) or not 0 < len(claims["sub"]) <= 255:
        raise InvalidIdToken("the ID token's subject is not valid")
    return claims


def needs_userinfo(claims: dict[str, Any]) -> bool:
    """True when the ID token lacks the address claims sign-in reads. A conformant provider
    puts the claims of the `email` and `profile` scopes in the UserInfo answer, not in the
    ID token of the code flow (OpenID Connect Core 5.4): with only the ID token, every first
    sign-in was refused for want of a verified address."""
    return any(name not in claims for name in ("email", "email_verified"))


def with_userinfo(settings: Settings, endpoints: Endpoints, claims: dict[str, Any],
                  access_token: str | None, *, client_id: str) -> dict[str, Any]:
    """`claims` (a valid ID token's) completed from the provider's UserInfo endpoint when
    they lack the address claims and the provider has one: its USERINFO_CLAIMS replace the
    ID token's; nothing else of it is taken. Unchanged when no UserInfo call is needed or
    possible. ProviderFailure when the endpoint cannot be reached or refuses;
    InvalidUserInfo when its answer is unusable or about another subject."""
    if not needs_userinfo(claims) or endpoints.userinfo_endpoint is None or not access_token:
        return claims
    info = _userinfo(settings, endpoints, access_token, client_id=client_id)
    # OpenID Connect Core 5.3.4: the answer may only be used when its `sub` is exactly the
    # ID token's; else it may describe someone else (a token substitution).
    if not isinstance(info.get("sub"), str) or not hmac.compare_digest(
            info["sub"].encode(), claims["sub"].encode()):
        raise InvalidUserInfo("the UserInfo answer is about another user than the ID token")
    return {**claims, **{name: info[name] for name in USERINFO_CLAIMS if name in info}}


def _userinfo(settings: Settings, endpoints: Endpoints, access_token: str, *,
              client_id: str) -> dict[str, Any]:
    """The claims of the UserInfo answer: JSON, or a signed JWT (application/jwt) checked as
    an ID token is, whose `iss` and `aud` must be the provider and this client."""
    url = endpoints.userinfo_endpoint or ""
    with provider_call(url):
        answer = http_client.get(url, timeout=TIMEOUT, limit=MAX_DOCUMENT,
                                 headers={"Authorization": f"Bearer {access_token}"},
                                 allow_private=settings.sso.allow_private_issuers,
                                 ca_file=settings.webhooks.ca_file)
    if answer.status != 200:
        raise ProviderFailure(f"the UserInfo endpoint answered HTTP {answer.status}",
                              answer.status)
    if answer.media_type == "application/jwt":
        info = _signed_userinfo(settings, endpoints, answer.body, client_id=client_id)
    else:
        try:
            info = json.loads(answer.body)
        except ValueError:
            info = None
    if not isinstance(info, dict):
        raise InvalidUserInfo("the UserInfo answer is neither a JSON object nor a signed JWT")
    return info


def _signed_userinfo(settings: Settings, endpoints: Endpoints, body: bytes, *,
                     client_id: str) -> Any:
    token = body.decode("ascii", "replace").strip()
    if token.count(".") != 2:
        # Five parts: an encrypted answer (JWE), which would need a key of this client's.
        raise InvalidUserInfo("the UserInfo answer is encrypted, which is not supported: "
                              "configure the provider to answer JSON or a signed JWT")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as exc:
        raise InvalidUserInfo("the signed UserInfo answer is malformed") from exc
    algorithm, kid = header.get("alg"), header.get("kid")
    if algorithm not in ALGORITHMS:
        raise InvalidUserInfo(f"the UserInfo answer's algorithm {str(algorithm)[:16]!r} is not "
                              "accepted (unsigned and shared-secret answers are refused)")

    def decode(key: PyJWK) -> dict[str, Any]:
        # Signed answers should name their issuer and audience (OpenID Connect Core 5.3.2);
        # without them one issued to another client could be replayed here.
        return jwt.decode(token, key.key, algorithms=[algorithm], audience=client_id,
                          issuer=endpoints.issuer, leeway=LEEWAY_SECONDS,
                          options={"require": ["iss", "aud", "sub"]})

    try:
        return verified_with_provider_key(settings, endpoints.jwks_uri,
                                          kid if isinstance(kid, str) else None, decode)
    except InvalidIdToken as exc:
        raise InvalidUserInfo("the UserInfo answer is signed with a key the provider does not "
                              "publish") from exc
    except jwt.InvalidTokenError as exc:
        raise InvalidUserInfo(f"the signed UserInfo answer is not valid: {exc}") from exc
