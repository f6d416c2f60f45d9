"""The MCP server's one way into Burnbox: the REST API, called with the caller's own API key.

Every tool is a handful of requests to `/api/v1`, sent with the key of the MCP caller (stdio:
`BURNBOX_API_KEY`; Streamable HTTP: the Bearer key of the MCP request). So the API's own
checks decide every call: authentication, the key's team and scopes, its IP allowlist, rate
limits, usage counters (`request_count`, `last_used_at`) and audit entries, exactly as for any
client; this package holds no rule of its own.

Over HTTP the MCP process is one more proxy hop in front of the API: it forwards the client's
address in `X-Forwarded-For` (the chain it received, then its peer), which the API believes
only when this process's address is one of `http.trusted_proxies`, by the API's own rule.

Two things are learnt from the API and kept for a short while, per process:
- what a key may do (`GET /api/v1/auth/key`: its team and scopes), so the tools a key may not
  use are not listed; kept `KEY_TTL` seconds, since every call is checked by the API anyway;
- which permission each REST operation needs (`x-required-permission` in the OpenAPI
  document), so a tool's permissions are derived from the operations it calls, never copied.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import httpx2

API_PREFIX = "/api/v1"
OPENAPI_PATH = "/api/v1/docs/openapi.json"
# How long a key's scopes (and its validity for the HTTP transport's gate) are reused. A key
# revoked meanwhile still passes that gate for up to this long, but every tool call it makes
# is refused by the API itself, which checks the key on every request.
KEY_TTL = 30.0
KNOWN_KEYS = 1024  # keys remembered at most (the oldest forgotten first)
REQUEST_TIMEOUT = 30.0  # seconds, for every request but waits
WAIT_MARGIN = 15.0  # seconds a wait's request may take beyond the wait's own timeout
MAX_RAW_BYTES = 1_048_576  # the most of a raw message read for the raw-source resource


class ApiError(Exception):
    """The API refused or failed a request: its status and the `{error, code}` envelope."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({status} {code})")
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class Caller:
    """Who a tool acts for: the API key, and the client address to forward (HTTP only)."""

    key: str
    forwarded_for: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        """The headers every request for this caller carries."""
        headers = {"Authorization": f"Bearer {self.key}", "User-Agent": "burnbox-mcp"}
        if self.forwarded_for:
            headers["X-Forwarded-For"] = self.forwarded_for
        return headers


@dataclass(frozen=True)
class KeyInfo:
    """What `GET /auth/key` says about a key."""

    id: str
    org_id: str
    team_id: str
    scopes: frozenset[str]


def api_url(url: str) -> str:
    """`url` (the service's base address, or its API's, `.../api/v1`) as the API's base."""
    base = url.rstrip("/")
    return base if base.endswith(API_PREFIX) else base + API_PREFIX


def _error_of(response: httpx2.Response) -> ApiError:
    try:
        body = response.json()
        message, code = str(body["error"]), str(body["code"])
    except (ValueError, KeyError, TypeError):
        message, code = response.reason_phrase or "request failed", "http_error"
    return ApiError(response.status_code, code, message)


class Gateway:
    """The REST API at `api` (its `/api/v1` base), as the tools call it.

    `public_api` is the API's address as the caller's own programs reach it (attachment
    download links), when that differs from `api` (the HTTP transport calls over loopback)."""

    def __init__(self, api: str, public_api: str | None = None) -> None:
        self.api = api_url(api)
        self.public_api = api_url(public_api) if public_api else self.api
        self._keys: OrderedDict[str, tuple[float, KeyInfo | None]] = OrderedDict()
        self._permissions: dict[tuple[str, str], str | None] | None = None
        self._lock = asyncio.Lock()

    async def call(self, caller: Caller, method: str, path: str, *,
                   params: dict[str, Any] | None = None, json: Any = None,
                   timeout: float = REQUEST_TIMEOUT) -> Any:
        """Send one request to `path` under /api/v1 for `caller`; its JSON body, or raise
        ApiError. Parameters that are None are left out."""
        query = {name: value for name, value in (params or {}).items() if value is not None}
        async with httpx2.AsyncClient(timeout=timeout) as client:
            response = await client.request(method, self.api + path, params=query, json=json,
                                            headers=caller.headers)
        if response.status_code >= 400:
            raise _error_of(response)
        return response.json()

    async def read_bytes(self, caller: Caller, path: str, limit: int) -> tuple[bytes, bool]:
        """The first `limit` bytes of the body of GET `path`, and whether there was more."""
        kept = bytearray()
        async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as client, client.stream(
                "GET", self.api + path, headers=caller.headers) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _error_of(response)
            async for chunk in response.aiter_bytes():
                kept += chunk
                if len(kept) > limit:
                    return bytes(kept[:limit]), True
        return bytes(kept), False

    async def key_info(self, caller: Caller) -> KeyInfo | None:
        """What the API says `caller`'s key may do; None when it refuses the key (unknown,
        revoked, expired, disabled, or not allowed from the caller's address). Kept
        `KEY_TTL` seconds per key and address. Raise ApiError for any other refusal (429)
        and httpx2.HTTPError when the API does not answer."""
        # The answer depends on the address too (a key's IP allowlist).
        digest = hashlib.sha256(f"{caller.key}\0{caller.forwarded_for or ''}".encode()
                                ).hexdigest()
        now = time.monotonic()
        known = self._keys.get(digest)
        if known is not None and now - known[0] < KEY_TTL:
            return known[1]
        try:
            body = await self.call(caller, "GET", "/auth/key")
            info: KeyInfo | None = KeyInfo(id=body["id"], org_id=body["org_id"],
                                           team_id=body["team_id"],
                                           scopes=frozenset(body["scopes"]))
        except ApiError as refusal:
            if refusal.status not in (401, 403):
                raise
            info = None
        self._keys[digest] = (now, info)
        self._keys.move_to_end(digest)
        while len(self._keys) > KNOWN_KEYS:
            self._keys.popitem(last=False)
        return info

    async def permission_of(self, method: str, path: str) -> str | None:
        """The permission the API declares for the operation `method path` (an OpenAPI path
        such as `/api/v1/emails/{email_id}`), None when it declares none; KeyError for an
        operation the document does not have. The document is read once per process."""
        async with self._lock:
            if self._permissions is None:
                async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as client:
                    response = await client.get(self.api.removesuffix(API_PREFIX)
                                                + OPENAPI_PATH)
                response.raise_for_status()
                self._permissions = {
                    (verb.upper(), route): operation.get("x-required-permission")
                    for route, item in response.json()["paths"].items()
                    for verb, operation in item.items() if isinstance(operation, dict)}
        return self._permissions[(method, path)]
