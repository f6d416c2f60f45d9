"""`burnbox mcp` and `burnbox mcp-http`: the MCP server for coding agents (mcp_server,
docs/mcp.md). The SDK is imported inside each verb, so the CLI's other verbs never load it."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import click

from burnbox.cli.errors import fail
from burnbox.cli.ready import load as _settings

if TYPE_CHECKING:
    from burnbox.settings import Settings


@click.command("mcp")
def mcp_stdio() -> None:
    """Serve MCP over stdio for a coding agent, acting with BURNBOX_API_KEY against the API at
    BURNBOX_URL (or BURNBOX_API)."""
    url = os.environ.get("BURNBOX_URL") or os.environ.get("BURNBOX_API")
    key = os.environ.get("BURNBOX_API_KEY", "").strip()
    if not url or not key:
        fail("set BURNBOX_URL (or BURNBOX_API) and BURNBOX_API_KEY: the service's address and "
             "a team API key (`burnbox bootstrap --env-file` writes both)")
    settings = _client_settings()
    quiet_client_logs()
    from mcp_server.server import stdio_server

    stdio_server(url, key, settings).run("stdio")


@click.command("mcp-http")
@click.option("--host", help="bind address (mcp.host)")
@click.option("--port", type=int, help="port (mcp.port)")
def mcp_http(host: str | None, port: int | None) -> None:
    """Serve MCP over Streamable HTTP at /mcp, each request authenticated by a team API key as
    its Bearer token (the scaled mode's process; `burnbox serve` runs one too)."""
    settings = _settings(**{"mcp.host": host, "mcp.port": port})
    quiet_client_logs()
    from mcp_server.http import serve_forever

    click.echo(f"MCP over HTTP at http://{settings.mcp.host}:{settings.mcp.port}/mcp, calling "
               f"{settings.mcp.api_url or settings.http.local_url}", err=True)
    serve_forever(settings)


def quiet_client_logs() -> None:
    """The HTTP client's one INFO line per API request (every tool call makes a few) is left
    out of the logs; its warnings stay."""
    logging.getLogger("httpx2").setLevel(logging.WARNING)


def _client_settings() -> Settings:
    """The settings of a process that is only a client of the API (`burnbox mcp`, started by
    an agent in any folder): read, and logging set up, but no signing secret resolved, which
    would create a data folder wherever the agent runs it."""
    from burnbox.logs import configure_logging
    from burnbox.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc
    configure_logging(settings)
    return settings
