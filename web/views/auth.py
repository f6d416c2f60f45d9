"""Accounts, sign-in and tokens: /api/v1/auth/...

Sign-in answers `{user, tokens}`; with `use_cookie: true` the refresh token travels as the
httpOnly `bb_refresh_token` cookie instead of in the JSON (login, register, login/resolve,
refresh), and refresh/logout read that cookie when the body has no token.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from models.errors import Forbidden, Unauthenticated
from models.identity import accounts, sessions
from models.identity.sessions import SignedIn, session_summary
from models.identity.users import DATE_FORMATS, THEMES, TIME_FORMATS, update_profile
from models.lifecycle import users as user_lifecycle
from models.sso import enforcement as sso_enforcement
from models.tenancy import invites
from tasks.mail import send_mails
from web.api import Blueprint, MessageSchema
from web.auth import (
    clear_refresh_cookie,
    current_principal,
    current_session_id,
    current_user,
    origin,
    protected,
    refresh_token_from,
    token_body,
)
from web.context import db, reads_only, runtime
from web.fields import Email, JsonBoolean, Line, Timestamp
from web.ratelimit import rate_limited

blp = Blueprint("auth", __name__, url_prefix="/api/v1/auth",
                description="Accounts, sign-in, tokens and the session limit")

# Generous bounds on raw input; the password policy applies its own limits to new passwords.
PASSWORD = validate.Length(min=1, max=4096)
TOKEN = validate.Length(min=1, max=512)


class UserSchema(Schema):
    """A user account."""

    id = fields.UUID(required=True)
    email = fields.String(required=True)
    display_name = fields.String(required=True)
    is_system_admin = fields.Boolean(required=True)
    email_verified = fields.Boolean(required=True)
    timezone = fields.String(required=True)
    date_format = fields.String(required=True)
    time_format = fields.String(required=True)
    theme = fields.String(required=True, metadata={
        "enum": list(THEMES), "description": "the web UI's colour scheme; system follows the "
                                             "device's preference"})
    max_sessions = fields.Integer(required=True, allow_none=True,
                                  metadata={"description": "own session limit; null: default"})
    created_at = Timestamp(required=True)
    updated_at = Timestamp(required=True)
    last_login_at = Timestamp(required=True, allow_none=True)


class TokensSchema(Schema):
    """An access token and, unless the cookie carries it, the refresh token."""

    access_token = fields.String(required=True)
    refresh_token = fields.String(metadata={"description": "absent in cookie mode"})
    token_type = fields.String(required=True, metadata={"example": "Bearer"})
    expires_in = fields.Integer(required=True, metadata={"description": "seconds"})


class SignedInSchema(Schema):
    user = fields.Nested(UserSchema, required=True)
    tokens = fields.Nested(TokensSchema, required=True)


class TokensOnlySchema(Schema):
    tokens = fields.Nested(TokensSchema, required=True)


class SessionSchema(Schema):
    """A session (signed-in device)."""

    id = fields.UUID(required=True)
    ip_address = fields.String(required=True)
    user_agent = fields.String(required=True)
    last_used_at = fields.String(required=True, metadata={"format": "date-time"})
    created_at = fields.String(required=True, metadata={"format": "date-time"})


class SessionLimitSchema(Schema):
    """409 session_limit: revoke one of `sessions` with POST /auth/login/resolve."""

    error = fields.String(required=True)
    code = fields.String(required=True, metadata={"example": "session_limit"})
    pending_token = fields.String(required=True)
    sessions = fields.List(fields.Nested(SessionSchema), required=True)
    limit = fields.Integer(required=True)


class PendingSessionsSchema(Schema):
    sessions = fields.List(fields.Nested(SessionSchema), required=True)
    limit = fields.Integer(required=True)


class RegisterSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=254))
    password = Line(required=True, validate=PASSWORD)
    display_name = Line(required=True, validate=validate.Length(min=1, max=200))
    invite_token = Line(validate=TOKEN, metadata={
        "description": "an org invite to accept at once when it names this address"})
    use_cookie = JsonBoolean(load_default=False)


class LoginSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=254))
    password = Line(required=True, validate=PASSWORD)
    use_cookie = JsonBoolean(load_default=False)


class ResolveSchema(Schema):
    pending_token = Line(required=True, validate=TOKEN)
    revoke_session_id = fields.UUID(required=True)
    use_cookie = JsonBoolean(load_default=False)


class PendingQuerySchema(Schema):
    token = Line(required=True, validate=TOKEN)


class RefreshSchema(Schema):
    refresh_token = Line(validate=TOKEN, metadata={
        "description": "else the bb_refresh_token cookie is used"})
    use_cookie = JsonBoolean(metadata={
        "description": "default: true when the token came from the cookie"})


class LogoutSchema(Schema):
    refresh_token = Line(validate=TOKEN, metadata={
        "description": "else the cookie, else the session of the bearer token"})


class ProfileSchema(Schema):
    display_name = Line(validate=validate.Length(min=1, max=200))
    timezone = Line(validate=validate.Length(min=1, max=64),
                             metadata={"description": "IANA name, e.g. Europe/Berlin"})
    date_format = Line(validate=validate.OneOf(DATE_FORMATS))
    time_format = Line(validate=validate.OneOf(TIME_FORMATS))
    theme = Line(validate=validate.OneOf(THEMES), metadata={
        "description": "the web UI's colour scheme: system, light or dark"})


class PasswordChangeSchema(Schema):
    current_password = Line(required=True, validate=PASSWORD)
    new_password = Line(required=True, validate=PASSWORD)


class DeleteAccountSchema(Schema):
    password = Line(validate=PASSWORD, metadata={
        "description": "required when the account has a password"})


class ForgotPasswordSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=254))


class ResetPasswordSchema(Schema):
    token = Line(required=True, validate=TOKEN)
    password = Line(required=True, validate=PASSWORD)


class VerifiedSchema(Schema):
    email_verified = fields.Boolean(required=True)


class DatetimeSettingsSchema(Schema):
    timezone = fields.String(required=True)
    date_format = fields.String(required=True)
    time_format = fields.String(required=True)
    date_formats = fields.List(fields.String(), required=True)
    time_formats = fields.List(fields.String(), required=True)


class PasswordPolicySchema(Schema):
    min_length = fields.Integer(required=True)
    max_length = fields.Integer(required=True)
    require_uppercase = fields.Boolean(required=True)
    require_lowercase = fields.Boolean(required=True)
    require_digit = fields.Boolean(required=True)
    require_symbol = fields.Boolean(required=True)


class SsoProviderLinkSchema(Schema):
    """An enabled provider, as a sign-in page shows it."""

    name = fields.String(required=True)
    provider_type = fields.String(required=True)
    label = fields.String(required=True)
    enabled = fields.Boolean(required=True)
    login_url = fields.String(required=True, metadata={
        "description": "where the sign-in button sends the browser"})


class SsoStatusSchema(Schema):
    sso_enabled = fields.Boolean(required=True)
    enabled = fields.Boolean(required=True, metadata={"description": "the same as sso_enabled"})
    providers = fields.List(fields.Nested(SsoProviderLinkSchema), required=True)
    enforce_sso = fields.Boolean(required=True, metadata={
        "description": "the platform refuses password sign-in where a mapping covers the "
                       "domain (orgs may enforce it for their own mapped domains too)"})
    registration_enabled = fields.Boolean(required=True)
    allow_registration = fields.Boolean(required=True, metadata={
        "description": "the same as registration_enabled"})
    password_policy = fields.Nested(PasswordPolicySchema, required=True)


def signed_in_body(signed_in: SignedIn, use_cookie: bool) -> dict[str, Any]:
    """The `{user, tokens}` answer of every sign-in."""
    return {"user": signed_in.user, "tokens": token_body(signed_in.tokens, use_cookie)}


@blp.route("/register")
class Register(MethodView):
    @rate_limited("auth")
    @blp.arguments(RegisterSchema)
    @blp.response(201, SignedInSchema)
    @blp.alt_response(403, description="registration is disabled, or single sign-on is "
                      "enforced for the address's domain")
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create an account and sign in (a taken address gets the same answer)"""
        rt = runtime()
        sso_enforcement.check_password_registration(db(), rt.settings, body["email"])
        result = accounts.register(db(), rt.settings, email=body["email"],
                                   password=body["password"], display_name=body["display_name"],
                                   origin=origin())
        if body.get("invite_token"):
            invites.accept_after_registration(db(), result.signed_in.user.id,
                                              body["invite_token"], origin())
        send_mails(result.mails)
        return signed_in_body(result.signed_in, body["use_cookie"])


@blp.route("/login")
class Login(MethodView):
    @rate_limited("auth")
    @blp.arguments(LoginSchema)
    @blp.response(200, SignedInSchema)
    @blp.alt_response(401, description="wrong e-mail or password")
    @blp.alt_response(403, description="single sign-on is enforced for this account, or the "
                      "address is not verified yet")
    @blp.alt_response(409, schema=SessionLimitSchema, description="session limit reached")
    @blp.alt_response(429, description="locked after repeated failures")
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Sign in with e-mail and password"""
        rt = runtime()
        signed_in = sso_enforcement.password_login(db(), rt.store, rt.settings, email=body["email"],
                                              password=body["password"], origin=origin())
        return signed_in_body(signed_in, body["use_cookie"])


@blp.route("/login/resolve")
class LoginResolve(MethodView):
    @rate_limited("auth")
    @blp.arguments(ResolveSchema)
    @blp.response(200, SignedInSchema)
    @blp.alt_response(401, description="pending token unknown, used or expired")
    @blp.alt_response(409, schema=SessionLimitSchema,
                      description="still at the limit: a fresh pending token")
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Complete a pending sign-in by revoking one session"""
        rt = runtime()
        signed_in = sessions.resolve_login(db(), rt.store, rt.settings,
                                           pending_token=body["pending_token"],
                                           revoke_session_id=body["revoke_session_id"],
                                           origin=origin())
        return signed_in_body(signed_in, body["use_cookie"])


@blp.route("/login/pending-sessions")
class PendingSessions(MethodView):
    @blp.arguments(PendingQuerySchema, location="query")
    @blp.response(200, PendingSessionsSchema)
    @blp.alt_response(401, description="pending token unknown, used or expired")
    def get(self, query: dict[str, Any]) -> dict[str, Any]:
        """The sessions behind a pending sign-in (the token stays usable)"""
        rt = runtime()
        active, limit = sessions.pending_login_sessions(db(), rt.store, rt.settings,
                                                        query["token"])
        return {"sessions": [session_summary(s) for s in active], "limit": limit}


@blp.route("/refresh")
class Refresh(MethodView):
    # Not the `auth` bucket: a browser refreshes on every page load, and sharing login's
    # 10/minute signed a user out without a word at the 8th reload in a minute. A refresh token
    # is a long random value, so a generous limit of its own gives a guesser nothing.
    @rate_limited("refresh")
    @blp.arguments(RefreshSchema, required=False)
    @blp.response(200, TokensOnlySchema)
    @blp.alt_response(401, description="refresh token unknown, spent, expired or revoked")
    @blp.alt_response(403, description="the cookie was sent without the X-Burnbox-CSRF header")
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Exchange a refresh token for new tokens (it is rotated)"""
        token, from_cookie = refresh_token_from(body)
        if token is None:
            raise Unauthenticated("refresh token required")
        tokens = sessions.refresh(db(), runtime().settings, refresh_token=token, origin=origin())
        return {"tokens": token_body(tokens, body.get("use_cookie", from_cookie))}


@blp.route("/logout")
class Logout(MethodView):
    @blp.arguments(LogoutSchema, required=False)
    @blp.response(200, MessageSchema)
    @blp.alt_response(401, description="no refresh token and no bearer token")
    @blp.alt_response(403, description="the cookie was sent without the X-Burnbox-CSRF header")
    def post(self, body: dict[str, Any]) -> dict[str, str]:
        """End the current session"""
        token, _ = refresh_token_from(body)
        session_id = None if token else current_principal().session_id
        sessions.logout(db(), refresh_token=token, session_id=session_id, origin=origin())
        clear_refresh_cookie()
        return {"message": "Logged out"}


@blp.route("/me")
class Me(MethodView):
    @reads_only
    @protected(blp)
    @blp.response(200, UserSchema)
    def get(self) -> Any:
        """The signed-in user"""
        return current_user()

    @protected(blp)
    @blp.arguments(ProfileSchema)
    @blp.response(200, UserSchema)
    def patch(self, body: dict[str, Any]) -> Any:
        """Change the display name, the date and time preferences or the UI's theme"""
        user = update_profile(db(), current_user(), **body)
        return user

    @protected(blp)
    @blp.arguments(DeleteAccountSchema, required=False)
    @blp.response(200, MessageSchema)
    @blp.alt_response(403, description="wrong password")
    @blp.alt_response(409, description="last system administrator, or sole owner of an org")
    def delete(self, body: dict[str, Any]) -> dict[str, str]:
        """Delete the account (confirm with the password; SSO-only users by their session)"""
        rt = runtime()
        user_lifecycle.delete_account(db(), rt.store, rt.settings, current_user(),
                                      password=body.get("password"), origin=origin())
        return {"message": "Account deleted"}


class CallingKeySchema(Schema):
    """The API key that calls: what it may do, never its secret."""

    id = fields.UUID(required=True)
    org_id = fields.UUID(required=True)
    team_id = fields.UUID(required=True)
    scopes = fields.List(fields.String(), required=True, metadata={
        "description": "the team permissions the key may use (its creator's roles still "
                       "decide each request)"})
    expires_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "null: the key never expires"})


@blp.route("/key")
class CallingKey(MethodView):
    @reads_only
    @protected(blp, api_keys=True)
    @blp.response(200, CallingKeySchema)
    @blp.alt_response(403, description="a signed-in user's token, not an API key")
    def get(self) -> Any:
        """The calling API key's team and scopes (a Burnbox extension)

        For a client that holds only a key and must learn what it may do, such as the MCP
        server, which lists only the tools the key's scopes allow. Counted as a request of
        the key."""
        key = current_principal().api_key
        if key is None:
            raise Forbidden("this endpoint describes the API key that calls it")
        return {"id": key.id, "org_id": key.org_id, "team_id": key.team_id,
                "scopes": sorted(key.scopes), "expires_at": key.expires_at}


@blp.route("/me/password")
class MyPassword(MethodView):
    @protected(blp)
    @blp.arguments(PasswordChangeSchema)
    @blp.response(200, MessageSchema)
    @blp.alt_response(403, description="current password is wrong")
    @blp.alt_response(429, description="locked after repeated failures")
    def put(self, body: dict[str, Any]) -> dict[str, str]:
        """Change the password; every other session is revoked"""
        rt = runtime()
        accounts.change_password(db(), rt.store, rt.settings, current_user(),
                                 current_password=body["current_password"],
                                 new_password=body["new_password"],
                                 current_session=current_session_id(), origin=origin())
        return {"message": "Password changed"}


@blp.route("/forgot-password")
class ForgotPassword(MethodView):
    @rate_limited("forgot_password")
    @blp.arguments(ForgotPasswordSchema)
    @blp.response(200, MessageSchema)
    def post(self, body: dict[str, Any]) -> dict[str, str]:
        """Mail a password reset link (the answer is the same for any address)"""
        send_mails(accounts.request_password_reset(db(), runtime().settings, body["email"]))
        return {"message": "if an account uses this address, a reset link is on its way"}


@blp.route("/reset-password")
class ResetPassword(MethodView):
    @rate_limited("auth")
    @blp.arguments(ResetPasswordSchema)
    @blp.response(200, MessageSchema)
    def post(self, body: dict[str, Any]) -> dict[str, str]:
        """Set a new password with a mailed token; every session is revoked"""
        rt = runtime()
        accounts.reset_password(db(), rt.store, rt.settings, token=body["token"],
                                password=body["password"], origin=origin())
        return {"message": "Password reset"}


@blp.route("/verify-email/<string:token>")
class VerifyEmail(MethodView):
    @blp.response(200, VerifiedSchema)
    def get(self, token: str) -> dict[str, bool]:
        """Verify an e-mail address with the mailed token"""
        accounts.verify_email(db(), token, origin())
        return {"email_verified": True}


@blp.route("/datetime-settings")
class DatetimeSettings(MethodView):
    @protected(blp)
    @blp.response(200, DatetimeSettingsSchema)
    def get(self) -> dict[str, Any]:
        """The user's time zone and formats, with the formats to choose from"""
        user = current_user()
        return {"timezone": user.timezone, "date_format": user.date_format,
                "time_format": user.time_format, "date_formats": list(DATE_FORMATS),
                "time_formats": list(TIME_FORMATS)}


@blp.route("/sso-status")
class SsoStatus(MethodView):
    @blp.response(200, SsoStatusSchema)
    def get(self) -> dict[str, Any]:
        """How users can sign in: SSO providers, registration and the password policy"""
        return sso_enforcement.sso_status(db(), runtime().settings)
