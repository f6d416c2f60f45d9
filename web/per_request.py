"""Per-request plumbing: the request class, request ids, the resolved client IP, and the
structured access log."""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import IO

import flask
from flask import Flask, Response, g, request
from werkzeug.utils import cached_property
from werkzeug.wsgi import LimitedStream, get_input_stream

from burnbox.logs import access_log_level, request_id
from burnbox.settings import Settings, SettingsError
from web.client_ip import parse_networks, resolve_client_ip

log = logging.getLogger("burnbox.access")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class CappedBody(LimitedStream):
    """A body sent without Content-Length (chunked), capped at the size limit. Werkzeug's stream
    stops at the limit as though the body ended there, so an oversized JSON body read as cut-off
    JSON (400); read whole, this one raises 413 when more follows the limit."""

    def __init__(self, source: IO[bytes], limit: int) -> None:
        super().__init__(source, limit, is_max=True)
        self.source = source

    def readall(self) -> bytes:
        """The whole body; RequestEntityTooLarge when it goes on past the limit."""
        data = super().readall()
        if self.is_exhausted and self.source.read(1):
            self.on_exhausted()
        return data


class Request(flask.Request):
    """Flask's request, whose chunked body over `max_content_length` is a 413 like any other."""

    @cached_property
    def stream(self) -> IO[bytes]:
        """The body stream werkzeug guards, a chunked one read through `CappedBody`."""
        guarded = get_input_stream(self.environ, max_content_length=self.max_content_length)
        if isinstance(guarded, LimitedStream) and self.content_length is None:
            # Werkzeug caps a body of unknown length only when the server ends the stream.
            return CappedBody(self.input_stream, guarded.limit)
        return guarded


def client_ip() -> str:
    """The client IP of the current request (resolved once, trusting only configured proxies)."""
    return g.client_ip


def init_app(app: Flask, settings: Settings) -> None:
    """Install the request class and the before/after request hooks."""
    app.request_class = Request
    try:
        proxies = parse_networks(settings.http.trusted_proxies)
    except ValueError as exc:
        raise SettingsError(f"setting http.trusted_proxies: {exc}") from exc

    access_level = access_log_level(settings)

    @app.before_request
    def start() -> None:
        incoming = request.headers.get("X-Request-ID", "")
        g.request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        request_id.set(g.request_id)
        g.started = time.perf_counter()
        g.client_ip = resolve_client_ip(request.remote_addr,
                                        request.headers.get("X-Forwarded-For"), proxies)

    @app.after_request
    def finish(response: Response) -> Response:
        rid = g.get("request_id")
        if rid:
            response.headers["X-Request-ID"] = rid
        started = g.get("started")
        if started is not None:
            principal = g.get("principal")
            key = principal.api_key if principal is not None else None
            fields = {
                "method": request.method, "path": request.path,
                "route": request.url_rule.rule if request.url_rule is not None else None,
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "user_id": str(principal.user.id) if principal is not None else None,
                "api_key_id": str(key.id) if key is not None else None,
                "client_ip": g.get("client_ip"),
            }
            log.log(access_level, "%s %s %s", request.method, request.path,
                    response.status_code, extra=fields)
        return response

    @app.teardown_request
    def forget(_exc: BaseException | None = None) -> None:
        request_id.set(None)
