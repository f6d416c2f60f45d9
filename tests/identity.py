"""Signing in through the API as a test would: the account the helpers default to, login,
tokens and headers. The users themselves come from `tests.factories.identity`."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from models.runtime import Runtime
from web import create_app

# The login helpers' default account: what `tests.factories.identity.make_password_user` makes.
EMAIL = "user@example.test"
PASSWORD = "correct horse battery"


def bearer(access_token: str) -> dict[str, str]:
    """The Authorization header for an access token."""
    return {"Authorization": f"Bearer {access_token}"}


def login(client: FlaskClient, email: str = EMAIL, password: str = PASSWORD, **body: Any) -> Any:
    """POST /auth/login; the response."""
    return client.post("/api/v1/auth/login", json={"email": email, "password": password, **body})


def sign_in(client: FlaskClient, email: str = EMAIL, password: str = PASSWORD) -> dict[str, Any]:
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
