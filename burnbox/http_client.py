"""Outbound HTTP for webhooks (one POST), for small documents such as an OpenID provider's
discovery and JWKS (one GET) or its token answer (one form POST), and for the link check's
probes (a HEAD or GET whose body is never read), to an address checked by the SSRF guard, and
nothing the target could use to go elsewhere.

- The host is resolved once (`burnbox.netguard.resolve_target`) and the connection goes to that
  checked address; the real host name is still used for the Host header, TLS SNI and the
  certificate check, so https targets are verified as usual. Connecting by name again would
  let a rebinding DNS server send the request to an address that was never checked.
- Redirects are never followed (a 3xx is simply the answer), and no proxy is taken from the
  environment: `http.client` reads neither.
- One deadline covers resolution, connect, TLS, sending and the response head; a watchdog (one
  thread per process watches every request) shuts the socket when it passes, so a server that
  drips bytes cannot hold the worker past it.
- Connections are kept alive and reused, per thread and per (scheme, host, port, guard mode, CA
  file), for up to `IDLE_TTL`: a webhook receiver gets a stream of POSTs, and a new TCP (and
  TLS) connection for each cost more than the request itself. A kept connection goes on to
  the address that was checked when it was opened; every new connection resolves and checks
  again. One kept connection that the server closed meanwhile is replaced once by a new one.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import os
import select
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlencode, urlsplit

from burnbox.netguard import AddressResolver, resolve_target
from burnbox.outbound_guard import HTTP, check_outbound

DEFAULT_PORTS = {"http": 80, "https": 443}
# How long an idle connection is kept. Short: servers close idle keep-alive connections on their
# own schedule (gunicorn after 2 s, Node after 5 s), and one closed under us costs a retry.
IDLE_TTL = 2.0
# Idle connections one thread keeps (to as many targets); the oldest is closed beyond that.
IDLE_PER_THREAD = 8
# A reply body longer than this is not read: the connection is closed instead of kept.
DRAIN_LIMIT = 64 * 1024


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
class Document:
    """A whole HTTP answer to a GET: status, body (at most the limit asked for), time, its
    media type (the Content-Type without parameters, lower-case; empty when none was given)
    and the Location header when there was one."""

    status: int
    body: bytes
    elapsed_ms: int
    media_type: str = ""
    location: str | None = None


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
    wrapper meanwhile, hence the indirection). One shared thread (`_Deadlines`) watches every
    request's deadline."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + max(seconds, 0.0)
        self.sock: socket.socket | None = None
        self.fired = False
        self.done = False
        self._lock = threading.Lock()

    def fire(self) -> None:
        """Shut the socket down, unless the request already ended."""
        with self._lock:
            if self.done:
                return
            self.fired = True
            if self.sock is not None:
                # Already closed means there is nothing left to stop.
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self.sock = sock

    def __enter__(self) -> _Watchdog:
        _deadlines.add(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self.done = True
            self.sock = None  # the deadline thread holds this watchdog until its time comes


class _Deadlines:
    """One thread per process that fires each watchdog whose deadline passed. A timer thread
    per request cost the delivery worker more CPU than the rest of the HTTP exchange; a
    finished request only marks its watchdog done, and the thread drops it when its time
    comes."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Watchdog]] = []
        self._added = threading.Condition()
        self._count = 0
        self._owner = 0  # the pid whose thread runs: a forked child starts its own

    def add(self, watchdog: _Watchdog) -> None:
        with self._added:
            if self._owner != os.getpid():
                self._owner = os.getpid()
                self._heap.clear()
                threading.Thread(target=self._run, name="http-deadlines", daemon=True).start()
            self._count += 1
            heapq.heappush(self._heap, (watchdog.deadline, self._count, watchdog))
            if self._heap[0][2] is watchdog:  # a new earliest deadline: wake the thread
                self._added.notify()

    def _run(self) -> None:
        while True:
            with self._added:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._added.wait(self._heap[0][0] - time.monotonic() if self._heap
                                     else None)
                due = heapq.heappop(self._heap)[2]
            due.fire()


_deadlines = _Deadlines()


@dataclass(frozen=True)
class _PoolKey:
    """What a kept connection may be reused for: the same origin, checked by the same rule
    (a connection opened while private targets were allowed never serves a call that refuses
    them), verified with the same CAs."""

    scheme: str
    host: str
    port: int
    allow_private: bool
    ca_file: str


class _IdleConnections(threading.local):
    """This thread's idle kept-alive connections, least recently used first (no lock: a thread
    only ever touches its own)."""

    def __init__(self) -> None:
        self.connections: OrderedDict[_PoolKey, tuple[http.client.HTTPConnection, float]] = (
            OrderedDict())

    def take(self, key: _PoolKey) -> http.client.HTTPConnection | None:
        """The idle connection for `key`, unless it is too old or the server closed it."""
        kept = self.connections.pop(key, None)
        if kept is None:
            return None
        connection, idle_since = kept
        if time.monotonic() - idle_since > IDLE_TTL or _dropped(connection):
            connection.close()
            return None
        return connection

    def give_back(self, key: _PoolKey, connection: http.client.HTTPConnection) -> None:
        """Keep `connection` for the next call to the same key."""
        self.connections[key] = (connection, time.monotonic())
        while len(self.connections) > IDLE_PER_THREAD:
            self.connections.popitem(last=False)[1][0].close()


_idle = _IdleConnections()


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """True when the idle socket has something to read: the server closed it (or sent bytes
    nobody asked for); either way it cannot carry another request."""
    if connection.sock is None:
        return True
    poller = select.poll()
    poller.register(connection.sock, select.POLLIN)
    return bool(poller.poll(0))


def post(url: str, body: bytes, headers: Mapping[str, str], *, timeout: float,
         allow_private: bool, resolver: AddressResolver | None = None,
         ca_file: str = "") -> Reply:
    """POST `body` to `url` and return the answer's head (any status, 3xx included).

    Raise TargetRefused when the host does not resolve or resolves to an address the guard
    refuses, OutboundTimeout when no answer came within `timeout` seconds, and OutboundError when
    the connection failed (refused, reset, TLS or certificate failure, malformed answer)."""
    target = Target.parse(url)
    check_outbound(HTTP, target.host)
    key = _PoolKey(target.scheme, target.host, target.port, allow_private, ca_file)
    started = time.monotonic()
    deadline = started + timeout
    with _Watchdog(timeout) as watchdog:
        try:
            status, location = _send(key, target, body, headers, deadline, watchdog, resolver)
        except (OSError, http.client.HTTPException) as exc:
            if watchdog.fired or time.monotonic() >= deadline or isinstance(exc, TimeoutError):
                raise OutboundTimeout(f"no answer within {timeout:g}s") from exc
            raise OutboundError(_describe(exc)) from exc
    elapsed_ms = round((time.monotonic() - started) * 1000)
    return Reply(status=status, location=location, elapsed_ms=elapsed_ms)


def get(url: str, *, timeout: float, allow_private: bool, limit: int,
        headers: Mapping[str, str] | None = None, resolver: AddressResolver | None = None,
        ca_file: str = "") -> Document:
    """GET `url` on a new connection to the checked address and read the whole answer
    (`headers` added to the request: an OpenID provider's UserInfo needs the access token).

    No connection is kept: these reads are rare (a provider's discovery and keys), so pooling
    would only hold sockets open. Raise as `post` does, and OutboundError when the body is
    longer than `limit` bytes (a document that large is not what was asked for, and reading
    it all would let the target fill the memory)."""
    return _fetch("GET", url, None, {"Accept": "application/json", **(headers or {})},
                  timeout=timeout, allow_private=allow_private, limit=limit, resolver=resolver,
                  ca_file=ca_file)


def post_form(url: str, fields: Mapping[str, str], *, timeout: float, allow_private: bool,
              limit: int, headers: Mapping[str, str] | None = None,
              resolver: AddressResolver | None = None, ca_file: str = "") -> Document:
    """POST `fields` form-encoded (an OAuth token request) and read the whole answer, as
    `get` does (a new connection to the checked address, the same errors and limit)."""
    body = urlencode(fields).encode()
    sent = {"Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
    return _fetch("POST", url, body, sent, timeout=timeout, allow_private=allow_private,
                  limit=limit, resolver=resolver, ca_file=ca_file)


def post_document(url: str, body: bytes, headers: Mapping[str, str], *, timeout: float,
                  allow_private: bool, limit: int) -> Document:
    """POST `body` (a spam engine's check) and read the whole answer, as `get` does (a new
    connection to the checked address, the same errors and limit)."""
    return _fetch("POST", url, body, headers, timeout=timeout, allow_private=allow_private,
                  limit=limit, resolver=None, ca_file="")


def probe(method: str, url: str, *, timeout: float, allow_private: bool,
          resolver: AddressResolver | None = None, ca_file: str = "") -> Reply:
    """Send `method` (HEAD or GET) to `url` on a new connection to the checked address and
    return the answer's head; the body is never read (the connection is closed instead), so
    a large or endless page costs nothing. Raise as `post` does."""
    document = _fetch(method, url, None, {"Accept": "*/*"}, timeout=timeout,
                      allow_private=allow_private, limit=None, resolver=resolver,
                      ca_file=ca_file)
    return Reply(status=document.status, location=document.location,
                 elapsed_ms=document.elapsed_ms)


def _fetch(method: str, url: str, body: bytes | None, headers: Mapping[str, str], *,
           timeout: float, allow_private: bool, limit: int | None,
           resolver: AddressResolver | None, ca_file: str) -> Document:
    """One request on a new connection; the body read up to `limit` bytes (None: not read)."""
    target = Target.parse(url)
    check_outbound(HTTP, target.host)
    started = time.monotonic()
    deadline = started + timeout
    with _Watchdog(timeout) as watchdog:
        try:
            address = resolve_target(target.host, target.port, allow_private=allow_private,
                                     resolver=resolver)
            connection = _connect(target, address, deadline, watchdog, ca_file)
            try:
                connection.sock.settimeout(max(deadline - time.monotonic(), 0.001))
                connection.request(method, target.path, body=body, headers=dict(headers))
                response = connection.getresponse()
                answer = b"" if limit is None else response.read(limit + 1)
            finally:
                connection.close()
            if watchdog.fired:
                raise TimeoutError("no complete answer within the deadline")
        except (OSError, http.client.HTTPException) as exc:
            if watchdog.fired or time.monotonic() >= deadline or isinstance(exc, TimeoutError):
                raise OutboundTimeout(f"no answer within {timeout:g}s") from exc
            raise OutboundError(_describe(exc)) from exc
    if limit is not None and len(answer) > limit:
        raise OutboundError(f"the answer is longer than {limit} bytes")
    media_type = (response.getheader("Content-Type") or "").split(";", 1)[0].strip().lower()
    return Document(status=response.status, body=answer, media_type=media_type,
                    elapsed_ms=round((time.monotonic() - started) * 1000),
                    location=response.getheader("Location"))


def _send(key: _PoolKey, target: Target, body: bytes, headers: Mapping[str, str],
          deadline: float, watchdog: _Watchdog, resolver: AddressResolver | None
          ) -> tuple[int, str | None]:
    """Make the exchange on a kept connection, or on a new one to a freshly checked address."""
    kept = _idle.take(key)
    if kept is not None:
        try:
            return _exchange(key, kept, target.path, body, headers, deadline, watchdog)
        except ConnectionError:
            # The server closed the idle connection as the request went out (a reset, a broken
            # pipe, or no answer at all): the usual end of a keep-alive, not the target's
            # answer, so it gets one new connection. Should the server have read the request
            # before closing, the receiver sees it twice with the same delivery id, which
            # at-least-once delivery allows.
            if watchdog.fired:
                raise
    address = resolve_target(target.host, target.port, allow_private=key.allow_private,
                             resolver=resolver)
    return _exchange(key, _connect(target, address, deadline, watchdog, key.ca_file),
                     target.path, body, headers, deadline, watchdog)


def _connect(target: Target, address: str, deadline: float, watchdog: _Watchdog,
             ca_file: str) -> http.client.HTTPConnection:
    """A connection to the checked `address`, named `target.host` (Host, SNI, certificate)."""
    sock = socket.create_connection((address, target.port),
                                    timeout=max(deadline - time.monotonic(), 0.001))
    # http.client writes a request's head and body in two sends, and sets TCP_NODELAY only in
    # its own connect(), which we bypass. With Nagle on, the body of every request after the
    # first on a kept connection waited for the receiver's delayed ACK: 40 ms more per
    # webhook (measured 44 ms a POST on loopback, 1 ms with this).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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
    except BaseException:
        sock.close()
        raise
    # The socket is already connected to the checked address: http.client uses it as it is and
    # only writes the Host header from the name. It never reconnects by name on its own: a
    # connection whose socket is closed is dropped, never reused (see _exchange).
    connection.sock = sock
    return connection


def _exchange(key: _PoolKey, connection: http.client.HTTPConnection, path: str, body: bytes,
              headers: Mapping[str, str], deadline: float, watchdog: _Watchdog
              ) -> tuple[int, str | None]:
    """POST on `connection`; read the head, then keep the connection when the whole answer was
    read in time and the server lets it stay open, else close it."""
    keep = False
    try:
        connection.sock.settimeout(max(deadline - time.monotonic(), 0.001))
        watchdog.watch(connection.sock)
        connection.request("POST", path, body=body, headers=dict(headers))
        response = connection.getresponse()
        if watchdog.fired:
            # The shutdown can read as a clean end of the headers: the answer is incomplete.
            raise TimeoutError("no complete answer within the deadline")
        head = response.status, response.getheader("Location")
        # The body is read only to free the connection for the next request; failing to read
        # it changes nothing about the answer already received.
        with contextlib.suppress(OSError, http.client.HTTPException):
            response.read(DRAIN_LIMIT)
            keep = response.isclosed() and not response.will_close and not watchdog.fired
        return head
    finally:
        if keep:
            _idle.give_back(key, connection)
        else:
            connection.close()


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
