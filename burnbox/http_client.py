"""Outbound HTTP for webhooks: one POST to an address checked by the SSRF guard, and nothing the
target could use to go elsewhere.

- The host is resolved once (`burnbox.netguard.resolve_target`) and the connection goes to that
  checked address; the real host name is still used for the Host header, TLS SNI and the
  certificate check, so https targets are verified as usual. Connecting by name again would
  let a rebinding DNS server send the request to an address that was never checked.
- Redirects are never followed (a 3xx is simply the answer), and no proxy is taken from the
  environment: `http.client` reads neither.
- One deadline covers resolution, connect, TLS, sending and the response head; a watchdog shuts
  the socket when it passes, so a server that drips bytes cannot hold the worker past it.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

from burnbox.netguard import AddressResolver, resolve_target

DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundError(Exception):
    """The request got no HTTP answer: a timeout or a failed connection (refused addresses raise
    `burnbox.netguard.TargetRefused` instead)."""


class OutboundTimeout(OutboundError):
    """No answer within the deadline."""


@dataclass(frozen=True)
class Reply:
    """The head of an HTTP answer: status, the Location of a redirect, and the time it took."""

    status: int
    location: str | None
    elapsed_ms: int


@dataclass(frozen=True)
class Target:
    """The parts of an http(s) URL a request needs."""

    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        """Split `url`; raise ValueError when it is not an absolute http(s) URL with a host."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS or not parts.hostname:
            raise ValueError("not an absolute http or https URL")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(scheme, parts.hostname, parts.port or DEFAULT_PORTS[scheme], path)


class _Watchdog:
    """Shuts the current socket down when the deadline passes (it may be replaced by its TLS
    wrapper meanwhile, hence the indirection)."""

    def __init__(self, seconds: float) -> None:
        self.sock: socket.socket | None = None
        self.fired = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self.sock is not None:
                # Already closed means there is nothing left to stop.
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self.sock = sock

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()


def post(url: str, body: bytes, headers: Mapping[str, str], *, timeout: float,
         allow_private: bool, resolver: AddressResolver | None = None,
         ca_file: str = "") -> Reply:
    """POST `body` to `url` and return the answer's head (any status, 3xx included).

    Raise TargetRefused when the host does not resolve or resolves to an address the guard
    refuses, OutboundTimeout when no answer came within `timeout` seconds, and OutboundError when
    the connection failed (refused, reset, TLS or certificate failure, malformed answer)."""
    target = Target.parse(url)
    started = time.monotonic()
    deadline = started + timeout
    address = resolve_target(target.host, target.port, allow_private=allow_private,
                             resolver=resolver)
    with _Watchdog(deadline - time.monotonic()) as watchdog:
        try:
            reply = _exchange(target, address, body, headers, deadline, watchdog, ca_file)
        except (OSError, http.client.HTTPException) as exc:
            if watchdog.fired or time.monotonic() >= deadline or isinstance(exc, TimeoutError):
                raise OutboundTimeout(f"no answer within {timeout:g}s") from exc
            raise OutboundError(_describe(exc)) from exc
        if watchdog.fired:
            # The shutdown can read as a clean end of the headers: the answer is incomplete.
            raise OutboundTimeout(f"no complete answer within {timeout:g}s")
    elapsed_ms = round((time.monotonic() - started) * 1000)
    return Reply(status=reply[0], location=reply[1], elapsed_ms=elapsed_ms)


def _exchange(target: Target, address: str, body: bytes, headers: Mapping[str, str],
              deadline: float, watchdog: _Watchdog, ca_file: str) -> tuple[int, str | None]:
    remaining = max(deadline - time.monotonic(), 0.001)
    sock = socket.create_connection((address, target.port), timeout=remaining)
    watchdog.watch(sock)
    connection: http.client.HTTPConnection
    try:
        if target.scheme == "https":
            context = _tls_context(ca_file)
            sock = context.wrap_socket(sock, server_hostname=target.host)
            watchdog.watch(sock)
            connection = http.client.HTTPSConnection(target.host, target.port, context=context)
        else:
            connection = http.client.HTTPConnection(target.host, target.port)
        # The socket is already connected to the checked address: http.client uses it as it is
        # and only writes the Host header from the name.
        connection.sock = sock
        connection.request("POST", target.path, body=body, headers=dict(headers))
        response = connection.getresponse()
        return response.status, response.getheader("Location")
    finally:
        sock.close()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not accepted: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failure: {exc.reason or exc}"
    return f"connection failed: {exc or type(exc).__name__}"


@cache
def _tls_context(ca_file: str) -> ssl.SSLContext:
    # Built once per CA file: loading a trust store takes milliseconds, and a context is safe to
    # share between threads.
    return ssl.create_default_context(cafile=ca_file or None)
