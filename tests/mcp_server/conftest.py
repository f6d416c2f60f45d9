"""A running Burnbox with its MCP server, for the SDK's own client to talk to, on the suite's
backend:

- SQLite: `burnbox serve` (the embedded default), its MCP HTTP transport a thread of it;
- PostgreSQL + Redis: `burnbox serve` on a database of its own and the test Redis, with the
  MCP HTTP transport as its own `burnbox mcp-http` process (the scaled mode's shape).

Both bootstrap a team API key holding every team scope (`API_KEY`) and write API-key usage to
the keys every second. `session(...)` opens an MCP session over stdio (`burnbox mcp`, a child
process) or Streamable HTTP.
"""

from __future__ import annotations

import signal
import smtplib
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
import requests
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import PG_URL, TEST_REDIS_URL
from tests.factories.mail import message
from tests.processes import (
    BIN,
    free_port,
    process_env,
    scratch_stores,
    wait_for_http,
    wait_for_port,
    wait_until,
)

API_KEY = "bb_" + "d2" * 32
DOMAIN = "burnbox.test"
TRANSPORTS = ("stdio", "http")


@dataclass
class Service:
    base: str
    smtp_port: int
    mcp_url: str
    logs: list[Path] = field(default_factory=list)

    @property
    def api(self) -> str:
        return self.base + "/api/v1"

    def call(self, method: str, path: str, key: str = API_KEY, **options: Any) -> Any:
        """One REST call with `key`; its JSON (the status must be below 400)."""
        response = requests.request(method, self.api + path, timeout=30,
                                    headers={"Authorization": f"Bearer {key}"}, **options)
        assert response.status_code < 400, response.text
        return response.json()

    def make_key(self, *scopes: str) -> dict[str, Any]:
        """A new key of the bootstrapped team with `scopes` (made with API_KEY)."""
        me = self.call("GET", "/auth/key")
        return self.call("POST", f"/orgs/{me['org_id']}/teams/{me['team_id']}/api-keys",
                         json={"name": "mcp-test", "scopes": list(scopes)})

    def key_row(self, key: dict[str, Any]) -> dict[str, Any]:
        """The key as the API shows it now (its usage counters)."""
        return self.call("GET", f"/orgs/{key['org_id']}/teams/{key['team_id']}/api-keys/"
                                f"{key['id']}")

    def send(self, to: str, subject: str, text: str, html: str | None = None,
             attachment: bytes | None = None) -> None:
        """Mail `to` through Burnbox's SMTP server, as an application would (an empty `text`
        with `html`: a message whose text part says nothing)."""
        raw = message(to, subject=subject, text=text, html=html, sender="app@shop.example",
                      attachments=(("report.csv", "text/csv", attachment),) if attachment
                      else ())
        with smtplib.SMTP("127.0.0.1", self.smtp_port, timeout=10) as smtp:
            smtp.sendmail("app@shop.example", [to], raw)

    def tail(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-3000:] for path in self.logs)


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(BIN / "burnbox"), *args], cwd=log.parent, env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    folder = tmp_path_factory.mktemp("mcp")
    http_port, smtp_port, mcp_port = free_port(), free_port(), free_port()
    base = f"http://127.0.0.1:{http_port}"
    env = process_env(
        BURNBOX_DATA_DIR=str(folder / "data"), BURNBOX_BOOTSTRAP__ENABLED="true",
        BURNBOX_BOOTSTRAP__API_KEY=API_KEY, BURNBOX_HTTP__PUBLIC_URL=base,
        BURNBOX_CLOCK__API_KEY_USAGE_INTERVAL="1s", BURNBOX_CLOCK__TICK="1s",
        BURNBOX_LOG__LEVEL="WARNING",
        # The MCP transport is a proxy hop: the API believes its X-Forwarded-For.
        BURNBOX_HTTP__TRUSTED_PROXIES="127.0.0.1")
    with ExitStack() as stack:
        service = Service(base, smtp_port, f"http://127.0.0.1:{mcp_port}/mcp")
        scaled = bool(PG_URL)
        if scaled:
            url = stack.enter_context(scratch_stores(PG_URL, TEST_REDIS_URL, "mcp"))
            env.update(BURNBOX_DATABASE__URL=url.render_as_string(hide_password=False),
                       BURNBOX_REDIS__URL=TEST_REDIS_URL,
                       BURNBOX_AUTH__JWT_SECRET="mcp-tests-" + "x" * 40)
        env["BURNBOX_MCP__PORT"] = "0" if scaled else str(mcp_port)
        serve_log = folder / "serve.log"
        service.logs.append(serve_log)
        serve = _start(["serve", "--port", str(http_port), "--smtp-port", str(smtp_port)],
                       env, serve_log)
        stack.callback(_stop, serve)
        wait_for_http(f"{base}/readyz", timeout=90)
        # serve bootstraps the key just after it starts answering: wait until it works.
        wait_until(lambda: requests.get(f"{service.api}/auth/key", timeout=5, headers={
            "Authorization": f"Bearer {API_KEY}"}).ok, timeout=60)
        if scaled:
            mcp_log = folder / "mcp-http.log"
            service.logs.append(mcp_log)
            mcp = _start(["mcp-http", "--port", str(mcp_port)],
                         {**env, "BURNBOX_MCP__API_URL": base}, mcp_log)
            stack.callback(_stop, mcp)
        wait_for_port(mcp_port)
        yield service


@asynccontextmanager
async def session(service: Service, transport: str, key: str = API_KEY
                  ) -> AsyncIterator[ClientSession]:
    """An initialised MCP session with `key`, over `transport` (stdio or http)."""
    async with AsyncExitStack() as stack:
        if transport == "stdio":
            params = StdioServerParameters(command=str(BIN / "burnbox"), args=["mcp"], env={
                "BURNBOX_URL": service.base, "BURNBOX_API_KEY": key,
                "BURNBOX_LOG__FORMAT": "text", "BURNBOX_LOG__LEVEL": "WARNING"})
            streams = await stack.enter_async_context(stdio_client(params))
        else:
            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {key}"}, timeout=120))
            streams = await stack.enter_async_context(
                streamable_http_client(service.mcp_url, http_client=http))
        client = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await client.initialize()
        yield client


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return request.param
