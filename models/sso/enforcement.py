"""SSO policy: who must sign in through SSO (`enforce_sso`), password sign-in under that rule,
and what GET /auth/sso-status tells a sign-in page.

`enforce_sso` refuses password sign-in to a user whose e-mail domain a mapping of an enabled
provider covers, when the platform enforces it (`sso.enforce_sso`, a runtime platform key) or
an org that mapping places users in does (its `enforce_sso` org setting). System administrators
are exempt unless `sso.enforce_sso_for_system_admins`: their password is the way in when the
identity provider is down. The check runs only after the password was right, so its answer
tells nothing to someone guessing (a different answer before would reveal which addresses
have an account, and which are administrators).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from burnbox.kv import KeyValueStore
from burnbox.settings import Settings
from models.errors import Forbidden
from models.identity.sessions import SignedIn, check_login, sign_in
from models.platform.audit import Origin
from models.platform.settings import current_platform
from models.sso.mappings import SsoDomainMapping, email_domain
from models.sso.providers import SsoProvider
from models.tenancy.settings_cascade import effective_settings


def enforcing_providers(session: Session, settings: Settings, email: str, *,
                        is_system_admin: bool = False) -> list[str]:
    """The names of the enabled providers the owner of `email` must sign in with instead of a
    password (empty: a password is allowed)."""
    live = current_platform(session, settings).settings
    if is_system_admin and not live.sso.enforce_sso_for_system_admins:
        return []
    query = (select(SsoProvider.name, SsoDomainMapping.org_id)
             .join(SsoDomainMapping, SsoDomainMapping.provider_id == SsoProvider.id)
             .where(SsoProvider.enabled.is_(True),
                    SsoDomainMapping.domain == email_domain(email)))
    names: set[str] = set()
    for name, org_id in session.execute(query):
        if live.sso.enforce_sso or effective_settings(session, settings, org_id).enforce_sso:
            names.add(name)
    return sorted(names)


def password_login(session: Session, store: KeyValueStore, settings: Settings, *, email: str,
                   password: str, origin: Origin) -> SignedIn:
    """Password sign-in under `enforce_sso`: as `models.identity.sessions.login`, and
    Forbidden (naming the providers to use) when SSO is enforced for this user."""
    user = check_login(session, store, settings, email=email, password=password, origin=origin)
    _refuse_password(enforcing_providers(session, settings, user.email,
                                         is_system_admin=user.is_system_admin))
    return sign_in(session, store, settings, user, origin)


def check_password_registration(session: Session, settings: Settings, email: str) -> None:
    """Forbidden when SSO is enforced for the address's domain: an account registered with a
    password there would sign in around the rule. The answer depends on the domain alone, so
    it tells nothing about which addresses have accounts."""
    _refuse_password(enforcing_providers(session, settings, email))


def _refuse_password(providers: list[str]) -> None:
    if providers:
        raise Forbidden("this account must sign in with single sign-on: "
                        + ", ".join(providers), extra={"sso_providers": providers})


def sso_status(session: Session, settings: Settings) -> dict[str, Any]:
    """How users can sign in: whether SSO is on (an enabled provider exists), the enabled
    providers (name, type, label), whether the platform enforces SSO, registration, and the
    password policy."""
    platform = current_platform(session, settings)
    providers = session.scalars(select(SsoProvider).where(SsoProvider.enabled.is_(True))
                                .order_by(SsoProvider.name))
    shown = [{"name": p.name, "provider_type": p.provider_type, "label": _label(p),
              "enabled": True, "login_url": f"/api/v1/auth/sso/{p.name}"} for p in providers]
    return {"sso_enabled": bool(shown), "enabled": bool(shown), "providers": shown,
            "enforce_sso": platform.settings.sso.enforce_sso,
            "registration_enabled": platform.registration_enabled,
            "allow_registration": platform.registration_enabled,
            "password_policy": platform.password_policy.as_dict()}


def _label(provider: SsoProvider) -> str:
    presets = {"google": "Google", "azure": "Microsoft", "okta": "Okta"}
    return presets.get(provider.provider_type, provider.name.replace("-", " ").title())
