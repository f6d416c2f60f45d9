"""Account e-mails (verification, password reset, registration notice) as values.

Actions return these instead of sending: they carry raw single-use tokens, which must never sit in
the database (not even in the outbox), and they may only leave after the action's transaction has
committed. The caller hands them to the `send_mail` actor once the action returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from burnbox.settings import Settings


@dataclass(frozen=True)
class OutgoingMail:
    """One plain-text message to one recipient."""

    to: str
    subject: str
    text: str


def _base(settings: Settings) -> str:
    return settings.http.url


def verification_mail(settings: Settings, to: str, display_name: str, token: str) -> OutgoingMail:
    """The message with the link that verifies `to`."""
    link = f"{_base(settings)}/api/v1/auth/verify-email/{quote(token)}"
    ttl = settings.auth.email_verification_ttl
    return OutgoingMail(to=to, subject="Verify your e-mail address", text=(
        f"Hello {display_name},\n\n"
        f"please confirm your address by opening this link:\n\n{link}\n\n"
        f"The link works once and expires in {_hours(ttl.total_seconds())}.\n"
        "If you did not create a Burnbox account, ignore this message.\n"))


def reset_mail(settings: Settings, to: str, token: str) -> OutgoingMail:
    """The message with the link (and token) that sets a new password."""
    link = f"{_base(settings)}/reset-password?token={quote(token)}"
    ttl = settings.auth.password_reset_ttl
    return OutgoingMail(to=to, subject="Reset your password", text=(
        "Someone asked to reset the password of your Burnbox account.\n\n"
        f"To choose a new password, open:\n\n{link}\n\n"
        f"(API clients: POST /api/v1/auth/reset-password with token {token})\n\n"
        f"The link works once and expires in {_hours(ttl.total_seconds())}.\n"
        "If it was not you, ignore this message: your password stays as it is.\n"))


def existing_account_mail(settings: Settings, to: str) -> OutgoingMail:
    """The notice sent when someone registers with an address that already has an account
    (the API answers exactly as for a new address, so only the owner learns of it)."""
    return OutgoingMail(to=to, subject="Your Burnbox account", text=(
        "Someone tried to create a Burnbox account with this address, which already has one.\n\n"
        f"If it was you, sign in at {_base(settings)}/login, or reset your password from there.\n"
        "If it was not, you can ignore this message.\n"))


def _hours(seconds: float) -> str:
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} minutes"
    hours = round(seconds / 3600)
    return "1 hour" if hours == 1 else f"{hours} hours"
