"""The data verbs as a client of the API: HTTP requests with a team API key, as `gh` talks to
GitHub.

Which way a data verb (`inboxes ...`, `emails ...`) goes:
- with `BURNBOX_API_KEY` in the environment (as `burnbox.env` exports it) and neither `--as`
  nor `--team` given, over HTTP to the API, acting as that key (its team, its scopes);
- otherwise on the database, as an operator acting as a member of the org
  (`burnbox.cli.acting`): `--as` and `--team` name who and where, which a key already says.

Why HTTP: the API holds the rules, so the verb needs neither SQLAlchemy nor the models nor
Flask; importing them (every entity must be mapped before one row is read) was nearly all of
the 3 s each verb took. This module imports only the standard library and click (a test
checks what a verb that goes this way imports).

Where the API is: `BURNBOX_API` (`http://host:port/api/v1`, as `burnbox bootstrap` prints it),
else `BURNBOX_URL` (the base address), else this host's `http.host`:`http.port` (the address
`burnbox serve` and `burnbox web` bind). Nothing listening there is one sentence saying so,
never a fall-back to the database: the key would then not be who the verb acts as.
"""

from __future__ import annotations

import http.client
import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import quote, urlencode, urlsplit

from burnbox import __version__
from burnbox.cli.errors import detailed, fail, reason

API_PREFIX = "/api/v1"
KEY_ENV, API_ENV, URL_ENV, DOMAIN_ENV = ("BURNBOX_API_KEY", "BURNBOX_API", "BURNBOX_URL",
                                         "BURNBOX_DOMAIN")
# One request's deadline; a wait asks the server for less (see `wait_timeout`).
TIMEOUT = 30.0
# A wildcard bind address is not one to connect to: the loopback address instead.
WILDCARDS = {"", "0.0.0.0", "::"}  # noqa: S104 (compared with, never bound)


class Refused(Exception):
    """An error answer of the API: its status and envelope."""

    def __init__(self, status: int, envelope: dict[str, Any]) -> None:
        super().__init__(envelope.get("error", ""))
        self.status, self.envelope = status, envelope

    def fail(self) -> NoReturn:
        """End the command with the API's message, its code and details."""
        envelope = self.envelope
        message = detailed(str(envelope.get("error") or f"HTTP {self.status}"),
                           envelope.get("details"))
        if self.status == 401:
            message += f" (the key in {KEY_ENV})"
        fail(message, str(envelope.get("code") or "error"), envelope.get("details"))


@dataclass(frozen=True)
class Api:
    """The API at `base` (ending in /api/v1), called with the team API key `key`."""

    base: str
    key: str

    def call(self, method: str, path: str, query: dict[str, Any] | None = None,
             body: dict[str, Any] | None = None, timeout: float = TIMEOUT) -> Any:
        """The JSON answer of `method path`; an error answer raises Refused, and a server that
        cannot be reached (or is not Burnbox's API) ends the command saying so."""
        url = urlsplit(self.base)
        kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        connection = kind(url.hostname or "127.0.0.1", url.port, timeout=timeout)
        target = url.path.rstrip("/") + path
        query = {name: value for name, value in (query or {}).items() if value is not None}
        if query:
            target += "?" + urlencode(query)
        headers = {"Authorization": f"Bearer {self.key}", "Accept": "application/json",
                   "User-Agent": f"burnbox-cli/{__version__}"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, target, body=payload, headers=headers)
            response = connection.getresponse()
            answer = response.read()
        except (OSError, http.client.HTTPException) as exc:
            fail(f"cannot reach Burnbox at {self.base}: {reason(exc)} (is `burnbox serve` or "
                 f"`burnbox web` running there? {API_ENV} names the API's address)",
                 "unreachable")
        finally:
            connection.close()
        try:
            data = json.loads(answer) if answer else None
        except ValueError:
            data = None
        if response.status >= 400 and isinstance(data, dict) and "code" in data:
            raise Refused(response.status, data)
        if response.status >= 400 or (answer and data is None):
            fail(f"{self.base} answered {response.status} {response.reason} with something "
                 f"other than Burnbox's API ({API_ENV} names the API's address)", "not_the_api")
        return data

    def get(self, path: str, **query: Any) -> Any:
        """`GET path?query`, the error answer ending the command."""
        return self.checked("GET", path, query)

    def checked(self, method: str, path: str, query: dict[str, Any] | None = None,
                body: dict[str, Any] | None = None, timeout: float = TIMEOUT) -> Any:
        """`call`, an error answer ending the command with the API's message."""
        try:
            return self.call(method, path, query, body, timeout)
        except Refused as refused:
            refused.fail()

    def inbox(self, reference: str) -> dict[str, Any]:
        """The inbox named by its id or its address (any case), live or lapsed."""
        try:
            inbox_id = uuid.UUID(reference.strip())
        except ValueError:
            path = f"/inboxes/by-address/{quote(reference.strip(), safe='@')}"
        else:
            path = f"/inboxes/{inbox_id}"
        try:
            return self.call("GET", path)
        except Refused as refused:
            if refused.status == 404:
                fail(f"no inbox {reference!r}", "not_found")
            refused.fail()

    def email(self, email_id: uuid.UUID) -> dict[str, Any]:
        """The e-mail's detail."""
        try:
            return self.call("GET", f"/emails/{email_id}")
        except Refused as refused:
            if refused.status == 404:
                fail(f"no e-mail {email_id}", "not_found")
            refused.fail()


def through_api(acting: str | None = None, team_ref: str | None = None) -> Api | None:
    """The API to call when the verb goes over HTTP (a key in the environment, and neither
    `--as` nor `--team`), else None: the verb goes to the database (module docstring)."""
    key = os.environ.get(KEY_ENV, "").strip()
    if not key or acting is not None or team_ref is not None:
        return None
    return Api(base=api_address(), key=key)


def api_address() -> str:
    """Where the API is (module docstring), ending in /api/v1."""
    base = os.environ.get(API_ENV, "").strip() or os.environ.get(URL_ENV, "").strip()
    if not base:
        from burnbox.settings import SettingsError, load_settings

        try:
            http_settings = load_settings().http
        except SettingsError as exc:
            fail(f"configuration error: {exc}")
        host = "127.0.0.1" if http_settings.host in WILDCARDS else http_settings.host
        base = f"http://{host}:{http_settings.port}"
    base = base.rstrip("/")
    return base if base.endswith(API_PREFIX) else base + API_PREFIX


def only_domain(api: Api) -> str:
    """The domain new inboxes get: `BURNBOX_DOMAIN`, else the one domain the key's team can
    use (`GET /my/domains`); several or none end the command naming them."""
    named = os.environ.get(DOMAIN_ENV, "").strip()
    if named:
        return named
    names = sorted({item["domain_name"] for item in api.get("/my/domains", per_page=100)["data"]})
    if len(names) != 1:
        fail("the key's team has no domain to create inboxes on" if not names else
             f"the key's team has several domains ({', '.join(names)}): choose one with "
             f"--domain (or {DOMAIN_ENV})")
    return names[0]
