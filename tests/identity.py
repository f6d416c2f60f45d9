"""Helpers for identity tests: users made through the domain code, sign-ins through the API."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from models.identity.sessions import Tokens, open_session
from models.identity.users import User, new_user, password_hasher
from models.platform.audit import Origin
from models.runtime import Runtime
from web import create_app

PASSWORD = "correct horse battery"


def create_user(runtime: Runtime, email: str = "user@example.test", password: str | None = PASSWORD,
                display_name: str = "Test User", **fields: Any) -> User:
    """Commit a user with a hashed password (None: an SSO-only user) and any other fields."""
    user = new_user(email=email, display_name=display_name, password_hash=None)
    if password is not None:
        user.password_hash = password_hasher(runtime.settings).hash(password)
    for name, value in fields.items():
        setattr(user, name, value)
    with runtime.db.transaction() as session:
        session.add(user)
    return user


def session_tokens(runtime: Runtime, user: User) -> Tokens:
    """Open a session for `user` directly (how SSO will sign users in) and return its tokens."""
    with runtime.db.transaction() as session:
        return open_session(session, runtime.settings, session.merge(user), Origin()).tokens


def bearer(access_token: str) -> dict[str, str]:
    """The Authorization header for an access token."""
    return {"Authorization": f"Bearer {access_token}"}


def login(client: FlaskClient, email: str = "user@example.test", password: str = PASSWORD,
          **body: Any) -> Any:
    """POST /auth/login; the response."""
    return client.post("/api/v1/auth/login", json={"email": email, "password": password, **body})


def sign_in(client: FlaskClient, email: str = "user@example.test",
            password: str = PASSWORD) -> dict[str, Any]:
    """Log in and return the tokens object (asserting success)."""
    response = login(client, email, password)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["tokens"]


def app_with(runtime: Runtime, store: Any = None, **changes: Any) -> Flask:
    """An app on `runtime` with dotted settings changed and optionally another key-value store."""
    changed = dataclasses.replace(runtime, settings=runtime.settings.replace(**changes),
                                  store=store or runtime.store)
    app = create_app(runtime=changed)
    app.config["TESTING"] = True
    return app


def token_in(text: str, pattern: str) -> str:
    """The token a mail carries after `pattern` (a regex prefix)."""
    match = re.search(pattern + r"([A-Za-z0-9_\-]+)", text)
    assert match, text
    return match.group(1)
