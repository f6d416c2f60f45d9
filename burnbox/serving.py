"""The HTTP servers' own answers in the error envelope, and no version banner.

Some requests never reach the app: a request line longer than the server reads (gunicorn's
`limit_request_line`, 4094 bytes; http.server's 65536), too many or too long header lines, a
malformed request line. Each server then answers by itself, with an HTML page, outside the
`{"error": ..., "code": ...}` envelope every client of the API reads. The two adapters here make
those answers JSON envelopes too:

- `EmbeddedRequestHandler`, the request handler of `burnbox serve` (Werkzeug's, over
  http.server): its `send_error` writes the envelope, and the `Server` header says "Burnbox"
  where Werkzeug announced its own and Python's versions on every answer.
- `GeventWorker`, the worker class of gunicorn.conf.py: gunicorn decides the status, logs the
  refusal and writes its access line as usual; only the bytes it would send are replaced.

This module is in `burnbox`, not `web`: gunicorn's master loads the worker class, and importing
the `web` package there would import Flask, SQLAlchemy and the models before the gevent
worker patches threading and sockets.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from gunicorn.workers.ggevent import GeventWorker as _GunicornGeventWorker
from werkzeug.serving import WSGIRequestHandler

SERVER_NAME = "Burnbox"
# The envelope's code where the app answers the same status with a code of its own
# (web.errors.CODES; a test keeps the two the same); any other status's code is its reason
# phrase in snake case ("request_header_fields_too_large").
CODES = {400: "validation_error", 403: "forbidden", 500: "internal_error"}
# RFC 9110's name; Python 3.11's HTTPStatus still says "Request-URI Too Long".
_PHRASES = {414: "URI Too Long"}


def refusal(status: int) -> bytes:
    """The envelope of a request the server refused before the app saw it, as JSON bytes:
    the status's reason phrase ("URI Too Long") and its code ("uri_too_long")."""
    phrase = _PHRASES.get(status) or HTTPStatus(status).phrase
    code = CODES.get(status) or phrase.lower().replace(" ", "_").replace("-", "_")
    return json.dumps({"error": phrase, "code": code}).encode()


class EmbeddedRequestHandler(WSGIRequestHandler):
    """Werkzeug's request handler, answering http.server's own errors in the envelope and
    naming no versions."""

    def version_string(self) -> str:
        """The `Server` header: the product, no version (Werkzeug sent
        "Werkzeug/<version> Python/<version>", a list of what to look up exploits for)."""
        return SERVER_NAME

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """http.server's error answer (414 for a request line over 65536 bytes, 431, 400 for
        a malformed line...) with the envelope as its body instead of an HTML page."""
        self.log_error("code %d, message %s", code, message or HTTPStatus(code).phrase)
        body = refusal(code)
        self.send_response(code, message)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _KeptAnswer:
    """The part of a socket gunicorn's error writer uses; it keeps what would be sent."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0

    def setblocking(self, _flag: bool) -> None:
        pass

    def sendall(self, data: bytes) -> None:
        self.data += data


class GeventWorker(_GunicornGeventWorker):
    """gunicorn's gevent worker, answering the requests gunicorn refuses by itself (414 for a
    request line over `limit_request_line`, 431, 400...) in the envelope."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """gunicorn's handling (status, log, access line), then its answer's status line with
        the envelope as the body. gunicorn writes its HTML page through a socket's
        gettimeout, setblocking and sendall: a stand-in keeps it here."""
        kept = _KeptAnswer()
        super().handle_error(req, kept, addr, exc)
        status_line = kept.data.split(b"\r\n", 1)[0]
        status = int(status_line.split()[1])
        body = refusal(status)
        head = (status_line + b"\r\nConnection: close\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode())
        try:
            client.sendall(head + body)
        except OSError:
            self.log.debug("Failed to send error message.")
