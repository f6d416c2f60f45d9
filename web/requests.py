"""Per-request plumbing: request ids, the resolved client IP, and the structured access log."""

from __future__ import annotations

import logging
import re
import time
import uuid

from flask import Flask, Response, g, request

from burnbox.logs import request_id
from burnbox.settings import Settings, SettingsError
from web.client_ip import parse_networks, resolve_client_ip

log = logging.getLogger("burnbox.access")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def client_ip() -> str:
    """The client IP of the current request (resolved once, trusting only configured proxies)."""
    return g.client_ip


def init_app(app: Flask, settings: Settings) -> None:
    """Install the before/after request hooks."""
    try:
        proxies = parse_networks(settings.http.trusted_proxies)
    except ValueError as exc:
        raise SettingsError(f"setting http.trusted_proxies: {exc}") from exc

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
            log.info("%s %s %s", request.method, request.path, response.status_code, extra={
                "method": request.method, "path": request.path, "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "client_ip": g.get("client_ip"),
            })
        return response

    @app.teardown_request
    def forget(_exc: BaseException | None = None) -> None:
        request_id.set(None)
