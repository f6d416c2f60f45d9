"""Checking an OpenID provider from here (POST /admin/sso/test): fetch its discovery document
and its JWKS through the outbound guard, and say what is wrong in words an administrator acts
on.

Both reads go through `burnbox.http_client.get`: the host is resolved once, internal addresses
are refused unless `sso.allow_private_issuers`, and the connection goes to the checked address.
The JWKS address comes from the provider's document, so it passes the same guard: a provider
(or whoever controls its document) cannot point this server at an internal address.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from jwt import PyJWKSet
from jwt.exceptions import PyJWKError, PyJWKSetError

from burnbox import http_client
from burnbox.netguard import InternalTarget, TargetRefused, refuse_internal_literal
from burnbox.settings import Settings

DISCOVERY_PATH = "/.well-known/openid-configuration"
# Discovery documents and key sets are a few KiB; a much larger answer is not one.
MAX_DOCUMENT = 512 * 1024
TIMEOUT = 10.0
# What the login part needs from the discovery document.
REQUIRED = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")


@dataclass(frozen=True)
class ProviderCheck:
    """The outcome of a check: `endpoint` is the last address tried, `status_code` its HTTP
    status (None: no answer), `response_time` milliseconds for the whole check."""

    success: bool
    endpoint: str
    status_code: int | None
    message: str
    response_time: int


class ProviderFailure(Exception):
    """One step of talking to a provider failed; the message says which and why, in words an
    administrator or user can act on (it never holds a secret)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def discovery_url(issuer: str) -> str:
    """Where the issuer's discovery document is (OpenID Connect Discovery 1.0, section 4)."""
    return issuer.rstrip("/") + DISCOVERY_PATH


@contextmanager
def provider_call(url: str) -> Iterator[None]:
    """Around one request to a provider's `url`: the guard's refusal, a bad URL and a request
    that failed become ProviderFailure, naming the URL."""
    try:
        yield
    except InternalTarget as exc:
        # Whoever reads this (the administrator testing an issuer, the server log of a refused
        # sign-in) needs to know which switch allows it: webhooks have a setting of their own.
        raise ProviderFailure(f"{url} refused: {exc} (sso.allow_private_issuers = true allows "
                              "identity providers on internal addresses, e.g. for tests)") from exc
    except (TargetRefused, ValueError) as exc:
        raise ProviderFailure(f"{url} refused: {exc}") from exc
    except http_client.OutboundError as exc:
        raise ProviderFailure(f"{url} did not answer: {exc}") from exc


def check_issuer_address(settings: Settings, issuer: str) -> None:
    """ProviderFailure, in the words a sign-in's discovery would use, for an issuer whose host
    is an internal address that needs no DNS look-up to see (an IP literal, localhost) while
    `sso.allow_private_issuers` is off: such a provider was stored, then failed every sign-in."""
    with provider_call(discovery_url(issuer)):
        refuse_internal_literal(urlsplit(issuer).hostname or "",
                                allow_private=settings.sso.allow_private_issuers)


def fetch_json(settings: Settings, url: str) -> tuple[int, Any]:
    """GET `url` through the guard and parse its JSON; ProviderFailure for every way that
    fails."""
    with provider_call(url):
        answer = http_client.get(url, timeout=TIMEOUT, limit=MAX_DOCUMENT,
                                 allow_private=settings.sso.allow_private_issuers,
                                 ca_file=settings.webhooks.ca_file)
    if answer.status != 200:
        raise ProviderFailure(f"{url} answered HTTP {answer.status}", answer.status)
    try:
        return answer.status, json.loads(answer.body)
    except ValueError as exc:
        raise ProviderFailure(f"{url} did not answer JSON", answer.status) from exc


def checked_document(issuer: str, document: Any) -> str:
    """The JWKS address of a valid discovery document of `issuer`; ProviderFailure
    otherwise."""
    if not isinstance(document, dict):
        raise ProviderFailure("the discovery document is not a JSON object", 200)
    missing = [name for name in REQUIRED if not isinstance(document.get(name), str)]
    if missing:
        raise ProviderFailure(f"the discovery document lacks {', '.join(missing)}", 200)
    # Discovery section 4.3: the issuer in the document must be exactly the one configured,
    # or ID tokens would later be checked against an issuer nobody chose.
    if document["issuer"].rstrip("/") != issuer.rstrip("/"):
        raise ProviderFailure(f"the discovery document names issuer {document['issuer']}, "
                      f"not {issuer}", 200)
    return str(document["jwks_uri"])


def check_provider(settings: Settings, issuer: str) -> ProviderCheck:
    """Fetch the discovery document of `issuer`, check it, then fetch its JWKS and check that
    it holds usable signing keys. Never raises for the provider's faults: they are the
    result."""
    started = time.monotonic()
    endpoint, status = discovery_url(issuer), None

    def result(success: bool, message: str) -> ProviderCheck:
        return ProviderCheck(success, endpoint, status, message,
                             round((time.monotonic() - started) * 1000))

    try:
        status, document = fetch_json(settings, endpoint)
        endpoint, status = checked_document(issuer, document), None
        status, keys = fetch_json(settings, endpoint)
        try:
            count = len(PyJWKSet.from_dict(keys).keys)
        except (PyJWKError, PyJWKSetError, TypeError, AttributeError) as exc:
            raise ProviderFailure(f"the JWKS holds no usable key: {exc}", status) from exc
    except ProviderFailure as failure:
        status = failure.status if failure.status is not None else status
        return result(False, str(failure))
    return result(True, f"discovery and JWKS are valid; {count} signing key(s)")
