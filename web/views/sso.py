"""Single sign-on with OpenID Connect: /api/v1/auth/sso/... and the user's identities,
/api/v1/auth/me/sso.

The start and the callback are browser navigations, so they answer with redirects: the
callback always redirects (to `/login?sso_code=...`, `/login#session_conflict=true&...`,
`/login#error=...`, or for a link `/profile?sso_linked=...` / `/profile?sso_error=...`), never
with a JSON error a person would be left looking at. Starting a link is the exception: the
signed-in page asks for it with its bearer token (a header a navigation cannot send), so it
answers JSON with the address to go to. See models.sso.signin for the flow and its checks.

Rate limits: the start and the callback count in the general anonymous bucket (a sign-in is
two of them; the auth bucket's 10 a minute would stop a few colleagues behind one address),
the exchange in the auth bucket like the other sign-in endpoints.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from flask import Response, after_this_request, redirect, request
from flask.views import MethodView
from marshmallow import Schema, fields, validate
from werkzeug.routing import BaseConverter

from burnbox.secretbox import SecretBox
from models.errors import DomainError, Forbidden, NotFound
from models.identity.sessions import SessionLimitReached, lock_user
from models.sso import signin
from models.sso.identities import identity_view, unlink_identity, user_identities
from models.sso.providers import NAME, RESERVED_NAMES
from models.sso.signin import Linked, SsoFailed
from web.api import Blueprint, MessageSchema
from web.auth import (
    BEARER,
    REFRESH_COOKIE_PATH,
    current_principal,
    current_session_id,
    current_user,
    origin,
    protected,
)
from web.context import db, runtime
from web.fields import JsonBoolean, Line, Timestamp
from web.ratelimit import rate_limited
from web.views.auth import SignedInSchema, signed_in_body

blp = Blueprint("sso", __name__, url_prefix="/api/v1/auth",
                description="Single sign-on with OpenID Connect, and linked identities")


class ProviderConverter(BaseConverter):
    """A provider's segment in /sso/<provider>: any segment but the static ones of this
    blueprint. Werkzeug, finding `/sso/exchange` registered for POST only, went on to the next
    rule, so `GET /sso/exchange` started a sign-in at a provider named "exchange" instead of
    answering 405; such a name cannot be created either (models.sso.providers)."""

    # Only what a provider's name can be (models.sso.providers.NAME): anything else, a NUL or
    # another control character among them, is an unknown route (404), never a name handed to
    # the database (PostgreSQL refuses NUL in text and JSON: a refused callback's audit entry
    # names the provider, and its commit failed with a 500).
    regex = "(?!(?:" + "|".join(RESERVED_NAMES) + ")$)" + NAME.pattern


# Registered before the routes below are added: their rules look the converter up by name.
blp.record_once(lambda state: state.app.url_map.converters.setdefault("sso_provider",
                                                                       ProviderConverter))

# The browser binding of a sign-in (models.sso.signin), one cookie per flow named
# `bb_sso_<flow id>`: httpOnly, sent back only to the SSO routes. SameSite=Lax: the provider's
# redirect to the callback is a top-level GET, which Lax cookies accompany; Strict ones would
# not.
BINDING_COOKIE_PREFIX = "bb_sso_"
BINDING_PATH = REFRESH_COOKIE_PATH + "/sso"
LOGIN_PAGE = "/login"
PROFILE_PAGE = "/profile"


class StartQuerySchema(Schema):
    link = fields.Boolean(load_default=False, metadata={
        "description": "link the provider to the signed-in caller (bearer token required); "
                       "the answer is then JSON with the address to go to"})


class StartedSchema(Schema):
    authorization_url = fields.String(required=True, metadata={
        "description": "send the browser here to continue at the provider"})


class CallbackQuerySchema(Schema):
    # Plain strings, no validation here: a refused parameter would answer a JSON 400 to a
    # browser navigation. models.sso.signin checks them and the view redirects with the reason.
    state = fields.String(load_default="", metadata={
        "description": f"the state of the sign-in (at most {signin.MAX_STATE} characters)"})
    code = fields.String(load_default="", metadata={
        "description": f"the authorization code (at most {signin.MAX_CODE} characters)"})
    error = fields.String(load_default="", metadata={
        "description": "the provider's OAuth error code, when it refused"})


class ExchangeSchema(Schema):
    code = Line(required=True, validate=validate.Length(min=1, max=512))
    use_cookie = JsonBoolean(load_default=False)


class IdentitySchema(Schema):
    """A provider account linked to the caller."""

    id = fields.UUID(required=True)
    provider = fields.String(required=True)
    provider_type = fields.String(required=True)
    subject = fields.String(required=True, metadata={"description": "the provider's user id"})
    email = fields.String(required=True)
    display_name = fields.String(required=True)
    linked_at = Timestamp(required=True)
    last_used_at = Timestamp(required=True, allow_none=True)


def _binding_cookie(state: str) -> str:
    return BINDING_COOKIE_PREFIX + signin.flow_id(state)


def _set_binding(started: signin.Started) -> None:
    secure = request.is_secure or runtime().settings.http.url.startswith("https://")

    @after_this_request
    def set_cookie(response: Response) -> Response:
        response.set_cookie(BINDING_COOKIE_PREFIX + started.flow, started.binding,
                            max_age=int(signin.STATE_TTL.total_seconds()), path=BINDING_PATH,
                            secure=secure, httponly=True, samesite="Lax")
        return response


def _back(location: str, cookie: str | None) -> Response:
    """Redirect to `location`, deleting the binding `cookie` of the flow that ended (only that
    one: other sign-ins of the browser go on)."""
    response = redirect(location, 302)
    if cookie is not None:
        response.delete_cookie(cookie, path=BINDING_PATH, httponly=True, samesite="Lax")
    return response


def _login_error(message: str, cookie: str | None = None) -> Response:
    return _back(f"{LOGIN_PAGE}#error={quote(message, safe='')}", cookie)


def _profile(cookie: str | None, **query: str) -> Response:
    return _back(f"{PROFILE_PAGE}?{urlencode(query)}", cookie)


@blp.route("/sso/<sso_provider:provider>")
class SsoStart(MethodView):
    @blp.arguments(StartQuerySchema, location="query")
    @blp.response(302, description="to the provider's authorization endpoint (or, on an "
                  "error, to /login#error=...)")
    @blp.alt_response(200, schema=StartedSchema, description="link=true: where to go")
    @blp.alt_response(401, description="link=true without a valid bearer token")
    @blp.alt_response(403, description="link=true with an API key")
    @blp.alt_response(404, description="link=true: no such enabled provider")
    @blp.doc(security=[*BEARER, {}])  # the bearer token only with link=true
    def get(self, query: dict[str, Any], provider: str) -> Any:
        """Start signing in with an SSO provider (or, with link=true, linking it)"""
        rt = runtime()
        if query["link"]:
            principal = current_principal()
            if principal.api_key is not None:
                raise Forbidden("API keys cannot be used on this endpoint")
            try:
                started = signin.start(db(), rt.store, rt.settings, provider,
                                       link_user_id=principal.user.id,
                                       link_session_id=current_session_id())
            except SsoFailed as exc:
                raise Forbidden(str(exc)) from exc
            _set_binding(started)
            return {"authorization_url": started.authorization_url}, 200
        try:
            started = signin.start(db(), rt.store, rt.settings, provider)
        except NotFound:
            return _login_error("no such SSO provider")
        except SsoFailed as exc:
            return _login_error(str(exc))
        _set_binding(started)
        return redirect(started.authorization_url, 302)


@blp.route("/sso/<sso_provider:provider>/callback")
class SsoCallback(MethodView):
    @blp.arguments(CallbackQuerySchema, location="query")
    @blp.response(302, description="to /login?sso_code=..., /login#session_conflict=true&"
                  "pending_token=...&limit=N, /login#error=..., or for a link "
                  "/profile?sso_linked=<provider> or /profile?sso_error=...")
    def get(self, query: dict[str, Any], provider: str) -> Response:
        """Where the provider sends the browser back: finish the sign-in or link"""
        rt = runtime()
        link = False
        # No state names no flow: a stray callback then leaves every binding alone.
        cookie = _binding_cookie(query["state"]) if query["state"] else None
        try:
            intent = signin.take_intent(rt.store, query["state"],
                                        request.cookies.get(cookie) if cookie else None)
            link = intent.link_user_id is not None
            outcome = signin.finish(db(), rt.store, rt.settings,
                                    SecretBox.from_settings(rt.settings), provider, intent,
                                    code=query["code"], error=query["error"], origin=origin())
            if isinstance(outcome, Linked):
                return _profile(cookie, sso_linked=outcome.provider)
            code = signin.stash_code(rt.store, outcome)
        except SessionLimitReached as limited:
            # A redirect, so the identity linked or the account provisioned stands (committed).
            extra = limited.extra
            fragment = urlencode({"session_conflict": "true",
                                  "pending_token": extra["pending_token"],
                                  "limit": extra["limit"]})
            return _back(f"{LOGIN_PAGE}#{fragment}", cookie)
        except (SsoFailed, DomainError) as exc:
            # DomainError: what sign_in itself refuses (a disabled account), said the same way.
            db().rollback()
            signin.record_failure(db(), provider, str(exc), origin())
            return _profile(cookie, sso_error=str(exc)) if link else _login_error(str(exc), cookie)
        return _back(f"{LOGIN_PAGE}?{urlencode({'sso_code': code})}", cookie)


@blp.route("/sso/exchange")
class SsoExchange(MethodView):
    @rate_limited("auth")
    @blp.arguments(ExchangeSchema)
    @blp.response(200, SignedInSchema)
    @blp.alt_response(401, description="invalid or expired code")
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Trade the one-time code of an SSO sign-in for tokens, as a login answers"""
        rt = runtime()
        signed_in = signin.exchange(db(), rt.store, rt.settings, body["code"])
        return signed_in_body(signed_in, body["use_cookie"])


@blp.route("/me/sso")
class MyIdentities(MethodView):
    @protected(blp)
    @blp.response(200, IdentitySchema(many=True))
    def get(self) -> list[dict[str, Any]]:
        """The provider accounts linked to the caller"""
        return [identity_view(identity, provider)
                for identity, provider in user_identities(db(), current_user().id)]


@blp.route("/me/sso/<string:provider>")
class MyIdentity(MethodView):
    @protected(blp)
    @blp.response(200, MessageSchema)
    @blp.alt_response(404, description="no identity linked at this provider")
    @blp.alt_response(409, description="it is the last way to sign in to the account")
    def delete(self, provider: str) -> dict[str, str]:
        """Unlink a provider account (refused when it is the last way to sign in)"""
        user = lock_user(db(), current_user().id)
        if user is None:
            raise NotFound("no identity linked at this provider")
        unlink_identity(db(), user, provider, origin())
        return {"message": "SSO identity deleted"}
