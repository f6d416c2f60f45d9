"""SSO identities: the link between a user and their account at one provider (the ID token's
`sub`), which later sign-ins through that provider find them by.

Rules kept here: one identity per (provider, subject), so a provider account opens exactly one
Burnbox account; one identity per (user, provider), so `DELETE /auth/me/sso/:provider` names
exactly one. An identity goes with its user and with its provider (foreign keys ON DELETE
CASCADE): a user who signed in only through a deleted provider then needs a password (reset, or
an administrator's migrate-auth). Unlinking the last way to sign in (no password, no other
identity) is refused: the account would be unreachable. Unlinking ends the sessions opened
through that provider (the way in they came by is gone). Links and unlinks are audited.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, UniqueConstraint, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey
from models.errors import Conflict, NotFound
from models.identity.sessions import SSO_UNLINKED, UserSession, revoke_sessions_of
from models.identity.users import User
from models.platform.audit import Origin, record_audit
from models.sso.providers import SsoProvider

IDENTITY_LINKED = "auth.sso_link"
IDENTITY_UNLINKED = "auth.sso_unlink"


class SsoIdentity(UUIDKey, Base):
    """A user's account at one provider."""

    __tablename__ = "user_sso_identities"
    __table_args__ = (UniqueConstraint("provider_id", "subject"),
                      UniqueConstraint("user_id", "provider_id"))

    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"),
                                               index=True)
    provider_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("sso_providers.id", ondelete="CASCADE"), index=True)
    # The ID token's `sub`: stable and unique per provider (OpenID Connect Core 2), unlike
    # the e-mail address, which the provider's user can change.
    subject: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(254), default="")
    display_name: Mapped[str] = mapped_column(String(200), default="")
    linked_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None]


class SsoSession(Base):
    """A session opened through a provider, so that unlinking the provider can end it. (A
    session opened by resolving a pending SSO sign-in, POST /auth/login/resolve, is not
    marked: that endpoint does not know how the sign-in began.)"""

    __tablename__ = "sso_sessions"

    session_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True)
    provider_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("sso_providers.id", ondelete="CASCADE"), index=True)


def mark_session(session: Session, session_id: uuid.UUID, provider_id: uuid.UUID) -> None:
    """Record that the session was opened through the provider."""
    session.add(SsoSession(session_id=session_id, provider_id=provider_id))


def identity_view(identity: SsoIdentity, provider: SsoProvider) -> dict[str, Any]:
    """An identity as its user sees it (GET /auth/me/sso)."""
    return {"id": identity.id, "provider": provider.name, "provider_type": provider.provider_type,
            "subject": identity.subject, "email": identity.email,
            "display_name": identity.display_name, "linked_at": identity.linked_at,
            "last_used_at": identity.last_used_at}


def user_identities(session: Session, user_id: uuid.UUID
                    ) -> list[tuple[SsoIdentity, SsoProvider]]:
    """The user's identities with their providers, by provider name."""
    query = (select(SsoIdentity, SsoProvider)
             .join(SsoProvider, SsoProvider.id == SsoIdentity.provider_id)
             .where(SsoIdentity.user_id == user_id).order_by(SsoProvider.name))
    return [(identity, provider) for identity, provider in session.execute(query)]


def count_identities(session: Session, user_id: uuid.UUID) -> int:
    """How many identities the user has."""
    return session.scalar(select(func.count()).select_from(SsoIdentity)
                          .where(SsoIdentity.user_id == user_id)) or 0


def find_identity(session: Session, provider_id: uuid.UUID, subject: str) -> SsoIdentity | None:
    """The identity of `subject` at the provider, if one is linked."""
    return session.scalar(select(SsoIdentity).where(SsoIdentity.provider_id == provider_id,
                                                    SsoIdentity.subject == subject))


def link_identity(session: Session, user: User, provider: SsoProvider, *, subject: str,
                  email: str, display_name: str, origin: Origin) -> SsoIdentity:
    """Link `subject` at `provider` to `user`. Raise Conflict when that provider account is
    linked to another user, or the user already has another account at this provider;
    linking the same one again only refreshes it. Audited (`auth.sso_link`)."""
    found = find_identity(session, provider.id, subject)
    if found is not None and found.user_id != user.id:
        raise Conflict("this account at the provider is linked to another user")
    held = session.scalar(select(SsoIdentity).where(SsoIdentity.user_id == user.id,
                                                    SsoIdentity.provider_id == provider.id))
    if held is not None and held.subject != subject:
        raise Conflict(f"another account at {provider.name} is linked already: unlink it first")
    identity = found or SsoIdentity(id=uuid.uuid4(), user_id=user.id, provider_id=provider.id,
                                    subject=subject, linked_at=utcnow())
    identity.email, identity.display_name = email[:254], display_name[:200]
    try:
        with session.begin_nested():
            session.add(identity)
            session.flush()
    except IntegrityError as exc:  # a concurrent link of the same account won the race
        raise Conflict("this account at the provider is linked to another user") from exc
    if found is None:
        record_audit(session, IDENTITY_LINKED, actor_id=user.id, resource_type="user",
                     resource_id=user.id, ip=origin.ip, user_agent=origin.user_agent,
                     after={"provider": provider.name, "subject": subject, "email": email})
    return identity


def unlink_identity(session: Session, user: User, provider_name: str, origin: Origin) -> None:
    """Remove the user's identity at the provider named `provider_name` and end the sessions
    opened through it. Raise NotFound when there is none, Conflict when it is the last way to
    sign in (no password and no other identity). The caller holds the user row locked
    (`lock_user`), so two unlinks at once cannot each leave the other as the last one.
    Audited (`auth.sso_unlink`)."""
    query = (select(SsoIdentity).join(SsoProvider, SsoProvider.id == SsoIdentity.provider_id)
             .where(SsoIdentity.user_id == user.id, SsoProvider.name == provider_name))
    identity = session.scalar(query)
    if identity is None:
        raise NotFound("no identity linked at this provider")
    if user.password_hash is None and count_identities(session, user.id) <= 1:
        raise Conflict("this is the only way to sign in to the account: set a password or "
                       "link another provider first")
    opened = set(session.scalars(
        select(SsoSession.session_id).join(UserSession, UserSession.id == SsoSession.session_id)
        .where(UserSession.user_id == user.id, SsoSession.provider_id == identity.provider_id)))
    session.delete(identity)
    session.flush()
    ended = revoke_sessions_of(session, user.id, opened, reason=SSO_UNLINKED, origin=origin)
    record_audit(session, IDENTITY_UNLINKED, actor_id=user.id, resource_type="user",
                 resource_id=user.id, ip=origin.ip, user_agent=origin.user_agent,
                 before={"provider": provider_name, "subject": identity.subject,
                         "email": identity.email}, after={"sessions_ended": ended})
