"""The Streamable HTTP transport under uvicorn: its own asyncio loop, in its own process
(`burnbox mcp-http`) or in a thread of `burnbox serve`.

It is not served by the web process: the SDK's transport is an ASGI (asyncio) application,
and the web process is WSGI, under gunicorn's gevent workers (scaled) or Werkzeug's threads
(embedded). Mounting one in the other would mean running asyncio inside gevent's patched
world, or a WSGI-to-ASGI bridge holding a thread per long wait. A port of its own keeps each
server on the concurrency model it was written for; the MCP process reaches the API over
loopback (or `mcp.api_url`), like any client.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import uvicorn

from mcp_server.server import http_app

if TYPE_CHECKING:
    from burnbox.settings import Settings


def _server(settings: Settings) -> uvicorn.Server:
    # log_config=None: uvicorn's records go through Burnbox's own logging (burnbox.logs).
    return uvicorn.Server(uvicorn.Config(http_app(settings), host=settings.mcp.host,
                                         port=settings.mcp.port, log_config=None,
                                         access_log=False, lifespan="on"))


def serve_forever(settings: Settings) -> None:
    """Serve until SIGTERM or SIGINT (uvicorn's own handling of them)."""
    _server(settings).run()


class McpHttpThread:
    """The transport in a daemon thread of `burnbox serve`; `stop()` ends it."""

    def __init__(self, settings: Settings) -> None:
        self.server = _server(settings)
        self.thread = threading.Thread(target=self.server.run, name="mcp-http", daemon=True)

    def start(self) -> McpHttpThread:
        """Start serving; returns once the port listens, or raises OSError when it cannot."""
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise OSError(f"the MCP HTTP server could not listen on "
                              f"{self.server.config.host}:{self.server.config.port}")
            self.thread.join(0.05)
        return self

    def stop(self) -> None:
        """Ask uvicorn to finish its requests and stop; wait a little for it."""
        self.server.should_exit = True
        self.thread.join(10)
