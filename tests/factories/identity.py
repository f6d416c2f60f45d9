"""Identity factories: users (without a password, or signing in with one) and their sessions."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from burnbox.settings import Settings
from models.identity.sessions import Tokens, open_session
from models.identity.users import User, new_user, password_hasher
from models.platform.audit import Origin
from tests.identity import EMAIL, PASSWORD, bearer

# The fields new_user validates and sets itself; any other override is set on the row after.
_NEW_USER_FIELDS = ("email", "display_name", "password_hash", "is_system_admin")


def make_user(session: Session, name: str = "test_user", **overrides: Any) -> User:
    """A user without a password (signed in by opening a session directly): address
    "<name>-<random>@example.test", display name `name` in title case, and any column in
    `overrides` (email and display name validated as registration does). Flushed."""
    fields: dict[str, Any] = {"email": f"{name}-{uuid.uuid4().hex[:8]}@example.test",
                              "display_name": name.replace("_", " ").title(),
                              "password_hash": None, "is_system_admin": False}
    fields.update({key: overrides.pop(key) for key in _NEW_USER_FIELDS if key in overrides})
    user = new_user(**fields)
    for column, value in overrides.items():
        setattr(user, column, value)
    session.add(user)
    session.flush()
    return user


def make_password_user(session: Session, settings: Settings, *, email: str = EMAIL,
                       password: str = PASSWORD, **overrides: Any) -> User:
    """A user who logs in with `password`, hashed with the argon2 parameters of `settings` (as
    registration hashes it); by default the account the login helpers of tests.identity use.
    Flushed."""
    password_hash = password_hasher(settings).hash(password)
    return make_user(session, email=email, password_hash=password_hash, **overrides)


def make_tokens(session: Session, settings: Settings, user: User) -> Tokens:
    """A session for `user` opened directly (as SSO will sign users in); its tokens. Flushed."""
    tokens = open_session(session, settings, session.merge(user), Origin()).tokens
    session.flush()
    return tokens


def auth_headers(session: Session, settings: Settings, user: User) -> dict[str, str]:
    """The Authorization header of a new session of `user` (see `make_tokens`)."""
    return bearer(make_tokens(session, settings, user).access_token)
