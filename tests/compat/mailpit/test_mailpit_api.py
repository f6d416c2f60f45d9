"""mailpit-api, Mailpit's TypeScript client from npm (pinned by tests/compat/mailpit/js's
package-lock.json, installed with `npm ci`), driven by Node's test runner against a Mailpit
scope of a running Burnbox (js/mailpit-api.test.mjs: every route the client offers that the
scope serves), after real SMTP delivered its mail here. Without npm the test skips, except
under CI=true, where it fails: CI must run it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.compat.mailpit.conftest import CSV, SUBJECT, Scoped
from tests.processes import process_env

pytestmark = pytest.mark.slow

PACKAGE = Path(__file__).resolve().parent / "js"


def _run(*command: str, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(command, cwd=PACKAGE, env=env or process_env(), capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-8000:]}{done.stderr[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed() -> Path:
    if shutil.which("npm") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no npm (CI=true: the mailpit-api tests must run)")
        pytest.skip("no npm: mailpit-api's tests need Node.js 20+ and npm")
    _run("npm", "ci", "--no-audit", "--no-fund", timeout=600)
    return PACKAGE


def test_mailpit_api_drives_every_route_it_offers(installed, scoped: Scoped):
    scoped.send(SUBJECT)
    scoped.send("Plain one", rich=False)
    scoped.send("Plain two", rich=False, tags="invoice")
    env = process_env(MAILPIT_URL=scoped.url, BURNBOX_URL=scoped.service.base,
                      BURNBOX_API_KEY=scoped.key, RICH_SUBJECT=SUBJECT, CSV=CSV.decode())
    output = _run("node", "--test", "--test-reporter=spec", env=env)
    assert output.count("✔") >= 9 and "✖" not in output, output
