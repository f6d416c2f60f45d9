"""OpenID providers the SSO tests sign in against, both real HTTP servers on 127.0.0.1.

- `mock_provider`: `oidc-provider-mock` (PyPI), a complete provider built on Authlib; a
  person's "sign-in" there is the form POST its authorization page makes. As it ships, it
  copies the user's claims into the ID token; with `claims_in_id_token=False` it behaves as a
  conformant provider does by default (panva's certified `oidc-provider`, OpenID Connect
  Core 5.4): the ID token carries `sub` and the protocol claims only, and e-mail and name
  come from its UserInfo endpoint.
- `OwnProvider`: a small provider of ours for what the mock cannot do on purpose: ID tokens
  with a wrong audience, issuer or nonce, expired, unsigned, signed by an unpublished key, and
  key rotation; UserInfo answers about another subject, signed (application/jwt), or failing.
  It checks the PKCE verifier and the client secret like a real one, and signs with a test
  RSA key through PyJWT.

`SsoBrowser` plays the browser: it follows Burnbox's redirect to the provider, signs in there,
and brings the provider's redirect back to the callback through the Flask test client (whose
cookie jar carries the sign-in's browser binding).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import flask
import jwt
import oidc_provider_mock
import requests
import werkzeug.serving
from authlib.oidc.core import OpenIDCode
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

CLIENT_ID = "burnbox-app"
CLIENT_SECRET = "test client secret, 32+ characters long"


@contextlib.contextmanager
def mock_provider(*, claims_in_id_token: bool = True) -> Iterator[str]:
    """oidc-provider-mock on a free port of localhost until the block ends; its issuer URL.
    `claims_in_id_token=False`: ID tokens without the scope claims (see the module
    docstring)."""
    app = oidc_provider_mock.app()
    if not claims_in_id_token:
        _protocol_claims_only(app)
    server = werkzeug.serving.make_server("localhost", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def _protocol_claims_only(app: flask.Flask) -> None:
    """Make the mock's ID tokens carry no user claim but `sub`. The mock has no option for
    it: its OpenIDCode extension fills ID tokens with `generate_user_info`, while its UserInfo
    endpoint reads the user's claims itself. This app's own extension object (reached through
    the authorization server its before-request hook publishes) gets a `generate_user_info`
    naming the subject alone; other mock servers are untouched."""
    with app.test_request_context():
        app.preprocess_request()
        server = flask.g._authlib_authorization_server
    extensions = [extension for _, found in server._token_grants for extension in found or ()
                  if isinstance(extension, OpenIDCode)]
    assert extensions, "oidc-provider-mock no longer registers an OpenIDCode extension"
    for extension in extensions:
        extension.generate_user_info = lambda user, scope: {"sub": user.sub}


def set_mock_user(issuer: str, sub: str, **claims: Any) -> None:
    """Give the mock provider's user `sub` these claims (email, email_verified, name...)."""
    response = requests.put(f"{issuer}/users/{sub}", json=claims, timeout=5)
    assert response.status_code == 204, response.text


def mock_sign_in(authorization_url: str, sub: str) -> str:
    """Sign in as `sub` at the mock provider's authorization page; the redirect it answers
    (to the callback, with code and state)."""
    response = requests.post(authorization_url, data={"sub": sub}, allow_redirects=False,
                             timeout=5)
    assert response.status_code == 302, response.text
    return response.headers["Location"]


def _key() -> tuple[Any, dict[str, Any], str]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = secrets.token_hex(4)
    public = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    return private, {**public, "kid": kid, "use": "sig", "alg": "RS256"}, kid


@dataclass
class _Grant:
    client_id: str
    redirect_uri: str
    nonce: str
    challenge: str
    sub: str


@dataclass
class OwnProvider:
    """A provider on 127.0.0.1 (see the module docstring). The user claims of the next ID
    token come from `users[sub]` (none with `claims_in_id_token` false); `tamper` changes the
    next token (claims to override, or the header's `alg`/`kid`, or `"unsigned": True`).
    UserInfo answers `users[sub]` for a valid access token, as JSON or, with
    `userinfo_as="jwt"`, a JWT signed like the ID token (issuer and audience included);
    `userinfo_tamper` overrides its claims, `userinfo_status` its HTTP status."""

    server: ThreadingHTTPServer
    issuer: str
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    tamper: dict[str, Any] = field(default_factory=dict)
    grants: dict[str, _Grant] = field(default_factory=dict)
    claims_in_id_token: bool = True
    access_tokens: dict[str, _Grant] = field(default_factory=dict)
    userinfo_as: str = "json"
    userinfo_tamper: dict[str, Any] = field(default_factory=dict)
    userinfo_status: int = 200
    jwks_fetches: int = 0
    token_requests: int = 0
    userinfo_requests: int = 0

    def __post_init__(self) -> None:
        self.private, self.public, self.kid = _key()

    def rotate(self) -> None:
        """A new signing key under a new kid; only it is published from now on."""
        self.private, self.public, self.kid = _key()

    def id_token(self, grant: _Grant) -> str:
        now = int(time.time())
        user = self.users.get(grant.sub, {}) if self.claims_in_id_token else {}
        claims = {"iss": self.issuer, "aud": grant.client_id, "sub": grant.sub, "iat": now,
                  "exp": now + 300, "nonce": grant.nonce, **user}
        tamper = dict(self.tamper)
        unsigned = tamper.pop("unsigned", False)
        header = {"kid": tamper.pop("kid", self.kid)}
        claims.update(tamper)
        if unsigned:
            return jwt.encode(claims, None, algorithm="none", headers=header)
        return jwt.encode(claims, self.private, algorithm="RS256", headers=header)

    def userinfo(self, grant: _Grant) -> tuple[str, bytes]:
        """The media type and body of the UserInfo answer for `grant`'s access token."""
        claims = {"sub": grant.sub, **self.users.get(grant.sub, {}), **self.userinfo_tamper}
        if self.userinfo_as == "jwt":
            signed = {"iss": self.issuer, "aud": grant.client_id, **claims}
            token = jwt.encode(signed, self.private, algorithm="RS256",
                               headers={"kid": self.kid})
            return "application/jwt", token.encode()
        return "application/json", json.dumps(claims).encode()


def _handler(provider_ref: list[OwnProvider]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _json(self, status: int, body: Any) -> None:
            self._send(status, "application/json", json.dumps(body).encode())

        def _send(self, status: int, media_type: str, raw: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", media_type)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            op = provider_ref[0]
            parts = urlsplit(self.path)
            if parts.path == "/.well-known/openid-configuration":
                self._json(200, {"issuer": op.issuer,
                                 "authorization_endpoint": f"{op.issuer}/authorize",
                                 "token_endpoint": f"{op.issuer}/token",
                                 "userinfo_endpoint": f"{op.issuer}/userinfo",
                                 "jwks_uri": f"{op.issuer}/jwks"})
            elif parts.path == "/userinfo":
                op.userinfo_requests += 1
                scheme, _, token = self.headers.get("Authorization", "").partition(" ")
                grant = op.access_tokens.get(token) if scheme == "Bearer" else None
                if grant is None:
                    self._json(401, {"error": "invalid_token"})
                elif op.userinfo_status != 200:
                    self._json(op.userinfo_status, {"error": "server_error"})
                else:
                    self._send(200, *op.userinfo(grant))
            elif parts.path == "/jwks":
                op.jwks_fetches += 1
                self._json(200, {"keys": [op.public]})
            elif parts.path == "/authorize":
                # The person signs in as the `login_hint` user (the tests' shortcut).
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                assert query["code_challenge_method"] == "S256"
                code = secrets.token_urlsafe(16)
                op.grants[code] = _Grant(query["client_id"], query["redirect_uri"],
                                         query["nonce"], query["code_challenge"],
                                         query.get("login_hint", "alice"))
                target = f"{query['redirect_uri']}?" + urlencode(
                    {"code": code, "state": query["state"]})
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            op = provider_ref[0]
            op.token_requests += 1
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            expected = "Basic " + base64.b64encode(
                f"{CLIENT_ID}:{urlencode({'': CLIENT_SECRET})[1:]}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                self._json(401, {"error": "invalid_client"})
                return
            grant = op.grants.pop(form.get("code", ""), None)  # codes are single use
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(
                hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if (grant is None or grant.redirect_uri != form.get("redirect_uri")
                    or grant.challenge != challenge):
                self._json(400, {"error": "invalid_grant"})
                return
            access_token = secrets.token_urlsafe(16)
            op.access_tokens[access_token] = grant
            self._json(200, {"access_token": access_token, "token_type": "Bearer",
                             "expires_in": 300, "id_token": op.id_token(grant)})

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextlib.contextmanager
def own_provider() -> Iterator[OwnProvider]:
    """An OwnProvider serving on a free port of 127.0.0.1 until the block ends."""
    ref: list[OwnProvider] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(ref))
    server.daemon_threads = True
    ref.append(OwnProvider(server=server, issuer=f"http://127.0.0.1:{server.server_port}"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield ref[0]
    finally:
        server.shutdown()
        server.server_close()


def authorize_at(authorization_url: str, sub: str) -> str:
    """Sign in as `sub` at an OwnProvider; the redirect to the callback it answers."""
    response = requests.get(authorization_url + "&" + urlencode({"login_hint": sub}),
                            allow_redirects=False, timeout=5)
    assert response.status_code == 302, response.text
    return response.headers["Location"]
