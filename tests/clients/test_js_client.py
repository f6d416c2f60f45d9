"""The JavaScript client (clients/js, `burnbox-client`) and its Playwright fixtures, against a
real `burnbox serve` started here with a bootstrapped API key and real SMTP.

The package is installed and built as its developers do (`npm ci`, then `npm run build`, which
runs `tsc`), from the npm registry, once per module. Then, each as its own test:
- its own tests, with Node's test runner (`npm test`), mailing Burnbox over SMTP;
- its own Playwright suite (Debian's Chromium), with Burnbox named in the config's `use` block,
  against its sign-up application; every inbox a test of it got must be gone afterwards, the
  one of the test that failed included;
- the tarball `npm pack` makes (which builds first): it holds no script npm runs on install, so
  an install of it prints no warning; installed into a fresh npm project the way a user
  installs it, both entry points import, the README's Playwright example type-checks and runs
  there as written, in a CommonJS project and in an ES module one, and without settings only
  the test that asks for a fixture fails.

Without npm the tests skip, except under CI=true, where they fail: CI must run them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from burnbox_client import Burnbox

from tests.clients.conftest import API_KEY, DOMAIN, Service, assert_inboxes_gone
from tests.processes import ROOT, process_env, terminate

pytestmark = pytest.mark.slow

PACKAGE = ROOT / "clients" / "js"
CHROMIUM = os.environ.get("BURNBOX_TEST_CHROMIUM", "/usr/bin/chromium")
BLOCK = re.compile(r"^```ts playwright:([\w./-]+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
INSTALL_SECONDS = 600
RUN_SECONDS = 300


def missing(reason: str) -> None:
    """Skip for want of a tool; fail under CI=true, where these tests must run."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: the JavaScript client's tests must run)")
    pytest.skip(reason)


def npm(*args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = RUN_SECONDS) -> str:
    """Run an npm command; its output, or the test fails showing it."""
    done = subprocess.run(["npm", *args], cwd=cwd, env=env or node_env(), capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, (f"npm {' '.join(args)}:\n{done.stdout[-6000:]}"
                                  f"{done.stderr[-4000:]}")
    return done.stdout


def node_env(service: Service | None = None, **extra: str) -> dict[str, str]:
    """The environment for npm and node: no leftover BURNBOX_ settings; Burnbox's address, key,
    domain and SMTP server when `service` is given; and no browser download."""
    env = process_env(PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1", CHROMIUM=CHROMIUM, **extra)
    env.pop("BURNBOX_LOG__FORMAT")
    if service is not None:
        env.update(BURNBOX_URL=service.url, BURNBOX_API_KEY=API_KEY, BURNBOX_DOMAIN=DOMAIN,
                   BURNBOX_SMTP=f"127.0.0.1:{service.smtp_port}")
    return env


@pytest.fixture(scope="module")
def package() -> Path:
    """clients/js with its dependencies installed and `dist/` built."""
    if shutil.which("npm") is None:
        missing("no npm: the JavaScript client needs Node.js 18+ and npm")
    if not Path(CHROMIUM).exists():
        missing(f"no browser: {CHROMIUM} is missing (apt-get install -y chromium)")
    npm("ci", "--no-audit", "--no-fund", cwd=PACKAGE, timeout=INSTALL_SECONDS)
    npm("run", "build", cwd=PACKAGE)
    for built in ("index.js", "index.d.ts", "playwright.js", "playwright.d.ts"):
        assert (PACKAGE / "dist" / built).is_file(), f"npm run build did not build dist/{built}"
    return PACKAGE


@pytest.fixture(scope="module")
def signup_app(service: Service, package: Path) -> Iterator[str]:
    """The package's sign-up application (e2e/signup-app.mjs), mailing through Burnbox; its
    address."""
    process = subprocess.Popen(["node", "e2e/signup-app.mjs"], cwd=package,
                               env=node_env(service), stdout=subprocess.PIPE, text=True)
    try:
        address = process.stdout.readline().strip()  # type: ignore[union-attr]
        assert address.startswith("http://127.0.0.1:"), f"the sign-up app said {address!r}"
        yield address
    finally:
        terminate(process)


def test_the_clients_own_tests_pass_with_nodes_test_runner(service: Service, package: Path):
    output = npm("test", cwd=package, env=node_env(service))
    assert re.search(r"^# pass [1-9]\d*$", output, re.MULTILINE), output
    assert re.search(r"^# fail 0$", output, re.MULTILINE), output
    service.check_alive()


def test_the_playwright_suite_passes_and_every_tests_inbox_is_deleted(
        service: Service, package: Path, signup_app: str, client: Burnbox, tmp_path: Path):
    record = tmp_path / "inboxes.txt"
    # Burnbox named only in the config's use block (E2E_*): no BURNBOX_ variable is set.
    env = node_env(APP_URL=signup_app, E2E_RECORD=str(record), E2E_BURNBOX_URL=service.url,
                   E2E_BURNBOX_API_KEY=API_KEY)
    output = npm("run", "e2e", cwd=package, env=env)
    assert re.search(r"^\s*7 passed", output, re.MULTILINE), output
    assert_inboxes_gone(client, record, 7)


def playwright(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`npx playwright test` in `project`, its output captured."""
    return subprocess.run(["npx", "playwright", "test", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=RUN_SECONDS, check=False)


# The scripts npm runs when it installs a package (`prepare` too, for a tarball): npm 11 warns
# of each one no `allowScripts` of the installing project covers.
INSTALL_SCRIPTS = {"preinstall", "install", "postinstall", "prepare"}


@pytest.fixture(scope="module")
def tarball(package: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tarball `npm pack` makes of the package; checks that it holds the build, README and
    licence, and no script npm would run when it installs it."""
    folder = tmp_path_factory.mktemp("packed")
    npm("pack", "--pack-destination", str(folder), cwd=package)
    [packed_file] = folder.glob("burnbox-client-*.tgz")
    with tarfile.open(packed_file) as packed:
        names = set(packed.getnames())
        manifest = json.load(packed.extractfile("package/package.json"))  # type: ignore[arg-type]
    assert names == {f"package/{name}" for name in (
        "package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts",
        "dist/playwright.js", "dist/playwright.d.ts")}
    assert not INSTALL_SCRIPTS & set(manifest.get("scripts", {})), manifest["scripts"]
    return packed_file


def test_an_install_of_the_tarball_prints_no_npm_warning(tarball: Path, tmp_path: Path):
    # Alone, into a fresh project: nothing to fetch, so every line npm prints is about it.
    (tmp_path / "package.json").write_text('{"name": "app-tests", "private": true}\n')
    done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", str(tarball)],
                          cwd=tmp_path, env=node_env(), capture_output=True, text=True,
                          timeout=INSTALL_SECONDS, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "node_modules" / "burnbox-client" / "dist" / "index.js").is_file()
    assert "warn" not in (done.stdout + done.stderr).lower(), done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(package: Path, tarball: Path) -> Path:
    """A fresh npm project with the packed tarball and @playwright/test installed, as a user
    installs them."""
    project = tarball.parent / "app"
    project.mkdir()
    (project / "package.json").write_text('{"name": "app-tests", "private": true}\n')
    version = json.loads((package / "package.json").read_text())["devDependencies"][
        "@playwright/test"]
    npm("install", "--no-audit", "--no-fund", str(tarball), f"@playwright/test@{version}",
        cwd=project, timeout=INSTALL_SECONDS)
    return project


def test_the_installed_tarball_has_no_dependencies_and_both_entry_points_import(
        installed: Path):
    manifest = json.loads((installed / "node_modules" / "burnbox-client" / "package.json")
                          .read_text())
    assert "dependencies" not in manifest
    assert manifest["types"] == "./dist/index.d.ts"
    imported = subprocess.run(
        ["node", "--input-type=module", "-e",
         "import { Burnbox, BurnboxError, EmailNotReceived } from 'burnbox-client';"
         "import { test, expect, Burnbox as Again } from 'burnbox-client/playwright';"
         "console.log(typeof Burnbox, typeof BurnboxError, typeof EmailNotReceived,"
         " typeof test.extend, typeof expect, Again === Burnbox)"],
        cwd=installed, env=node_env(), capture_output=True, text=True, timeout=60, check=False)
    assert imported.stdout.split() == ["function"] * 5 + ["true"], imported.stderr


def test_the_readme_example_type_checks_and_runs_as_written(
        service: Service, package: Path, installed: Path, signup_app: str):
    blocks = dict(BLOCK.findall((package / "README.md").read_text(encoding="utf-8")))
    assert set(blocks) == {"playwright.config.ts", "tests/signup.spec.ts"}
    for name, body in blocks.items():
        (installed / name).parent.mkdir(parents=True, exist_ok=True)
        (installed / name).write_text(body)
    # Against the tarball's declarations, with the package's own tsc.
    checked = subprocess.run(
        ["node", str(package / "node_modules" / "typescript" / "bin" / "tsc"), "--noEmit",
         "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target",
         "es2022", "--skipLibCheck", "--typeRoots", str(package / "node_modules" / "@types"),
         "--types", "node", *blocks],
        cwd=installed, env=node_env(), capture_output=True, text=True, timeout=RUN_SECONDS,
        check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    env = node_env(APP_URL=signup_app, BURNBOX_URL=service.url, BURNBOX_API_KEY=API_KEY)
    # A CommonJS project, which loads the ES module package through Node's require(esm)
    # (Node 20.19+, 22.12+); then an ES module project with require(esm) turned off, as the
    # README tells users of older Node versions.
    manifest = json.loads((installed / "package.json").read_text())
    for kind, node_options in (("commonjs", ""), ("module", "--no-experimental-require-module")):
        (installed / "package.json").write_text(json.dumps({**manifest, "type": kind}))
        output = playwright(installed, {**env, "NODE_OPTIONS": node_options})
        assert output.returncode == 0, output.stdout[-6000:] + output.stderr[-3000:]
        assert re.search(r"^\s*1 passed", output.stdout, re.MULTILINE), output.stdout
    (installed / "package.json").write_text(json.dumps(manifest))


def test_an_unconfigured_fixture_fails_the_test_that_asks_for_it_and_nothing_else(
        installed: Path):
    (installed / "unconfigured").mkdir()
    (installed / "unconfigured" / "x.spec.ts").write_text(
        'import { expect, test } from "burnbox-client/playwright";\n'
        'test("a", async ({ inbox }) => { expect(inbox).toBeTruthy(); });\n'
        'test("b", async () => { expect(1).toBe(1); });\n')
    (installed / "unconfigured.config.ts").write_text(
        'import { defineConfig } from "@playwright/test";\n'
        'export default defineConfig({ testDir: "unconfigured" });\n')
    output = playwright(installed, node_env(), "-c", "unconfigured.config.ts")
    assert output.returncode == 1, output.stdout[-6000:] + output.stderr[-3000:]
    assert re.search(r"^\s*1 failed", output.stdout, re.MULTILINE), output.stdout
    assert re.search(r"^\s*1 passed", output.stdout, re.MULTILINE), output.stdout
    assert "burnbox: set BURNBOX_URL and BURNBOX_API_KEY" in output.stdout


def test_the_environment_wins_over_the_use_block(service: Service, installed: Path):
    (installed / "precedence").mkdir()
    (installed / "precedence" / "x.spec.ts").write_text(
        'import { expect, test } from "burnbox-client/playwright";\n'
        'test("a", async ({ inbox }) => { expect(inbox.address).toContain("@"); });\n')
    # The checked-in config names a closed port and a wrong key; the environment is right.
    (installed / "precedence.config.ts").write_text(
        'import { defineConfig } from "@playwright/test";\n'
        'import type { BurnboxTestOptions } from "burnbox-client/playwright";\n'
        'export default defineConfig<BurnboxTestOptions>({ testDir: "precedence", use: {\n'
        '  burnboxOptions: { url: "http://127.0.0.1:9", apiKey: "bb_wrong" } } });\n')
    env = node_env(BURNBOX_URL=service.url, BURNBOX_API_KEY=API_KEY)
    output = playwright(installed, env, "-c", "precedence.config.ts")
    assert output.returncode == 0, output.stdout[-6000:] + output.stderr[-3000:]
