"""README "First e-mail in one minute", run as written: every fenced block tagged
`first-email:<name>` in the README is run here, so the README and this test cannot drift.

Each test makes a fresh `git clone` of the committed HEAD (uncommitted changes are not in it) and
runs `make install` in it (the first half of the README's `make run`, whose second half then
finds everything installed). To keep that fast and offline, the
clone's venv is made without pip and reaches this venv's site-packages through a `.pth` file:
every locked dependency is then already installed (pip, with `PIP_NO_INDEX`, downloads nothing),
and `make install` installs only the clone itself, editable, so what runs is the clone's code.
The console scripts of the dependencies the README calls (`honcho`) or that Burnbox starts
(`gunicorn`, `dramatiq`) get small launchers in the clone's venv, as pip would write them.

Only the addresses differ from the README: its ports (8080, 2525, honcho's 5000, the MCP
server's 8081), database and Redis URLs are replaced by free ports and the test's own stores, so
parallel runs never meet. DNS points at a closed port: nothing here has a DNS server, and the
trusted local domain needs none.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.conftest import PG_URL, TEST_REDIS_URL
from tests.processes import ROOT, free_port, scratch_stores, stop_groups, wait_for_http

pytestmark = pytest.mark.slow

BLOCK = re.compile(r"^```\w+ first-email:([\w-]+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
LAUNCHED = ("honcho", "gunicorn", "dramatiq")
CODE = "code: 482913"
# The README's addresses, replaced by this run's own.
README_DATABASE = "postgresql://postgres@127.0.0.1:5432/burnbox"
README_REDIS = "redis://127.0.0.1:6379/0"


def readme_blocks() -> dict[str, str]:
    """The README's tagged blocks by name."""
    return dict(BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8")))


def test_the_readme_section_has_every_step():
    assert set(readme_blocks()) == {"serve", "bootstrap", "script", "run", "ci", "scaled"}


class Clone:
    """A fresh clone of HEAD, installed by the README's install block, with its own ports."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.http_port, self.smtp_port = free_port(), free_port()
        self.blocks = {name: self.adapt(body) for name, body in readme_blocks().items()}
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("BURNBOX_", "PIP_")) and k not in (
                        "DATABASE_URL", "REDIS_URL", "PORT", "VIRTUAL_ENV")}
        self.env.update(
            PATH=f"{root / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            BURNBOX_HTTP__PORT=str(self.http_port), BURNBOX_SMTP__PORT=str(self.smtp_port),
            BURNBOX_MCP__PORT=str(free_port()),
            BURNBOX_HTTP__PUBLIC_URL=f"http://127.0.0.1:{self.http_port}",
            BURNBOX_DNS__NAMESERVERS=f"127.0.0.1:{free_port()}", BURNBOX_LOG__FORMAT="text")
        self._started: list[subprocess.Popen[str]] = []

    def adapt(self, body: str, **more: str) -> str:
        """A README block with this run's addresses in place of the README's."""
        for old, new in {"127.0.0.1:8080": f"127.0.0.1:{self.http_port}",
                         "127.0.0.1:2525": f"127.0.0.1:{self.smtp_port}",
                         "127.0.0.1:5000": f"127.0.0.1:{self.http_port}", **more}.items():
            body = body.replace(old, new)
        return body

    def run(self, *names: str, timeout: float = 180) -> str:
        """Run the named blocks as one bash script (so exported variables carry over), in a
        session of its own; what it leaves running in the background is stopped at `stop`."""
        script = "set -euo pipefail\n" + "\n".join(self.blocks[name] for name in names)
        process = subprocess.Popen(["bash", "-c", script], cwd=self.root, env=self.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
        self._started.append(process)
        output, _ = process.communicate(timeout=timeout)
        assert process.returncode == 0, f"{names} failed:\n{output[-4000:]}\n{self.log()}"
        return output

    def start(self, name: str) -> None:
        """Start a block that keeps running (the service), in a session of its own."""
        log = (self.root.parent / "serve.log").open("w")
        self._started.append(subprocess.Popen(
            ["bash", "-c", self.blocks[name]], cwd=self.root, env=self.env, stdout=log,
            stderr=subprocess.STDOUT, text=True, start_new_session=True))

    def log(self) -> str:
        """The service logs the blocks wrote, for a failure message."""
        return "\n".join(path.read_text(errors="replace")[-3000:]
                         for path in (self.root.parent / "serve.log", self.root / "burnbox.log")
                         if path.exists())

    def stop(self) -> None:
        """Stop every process group started (the service and anything left in background),
        and wait until none of their processes is left."""
        stop_groups(self._started)


def _launcher(bin_dir: Path, name: str) -> None:
    """A console script of this venv's package `name`, run by the clone's interpreter."""
    [point] = [ep for ep in entry_points(group="console_scripts") if ep.name == name]
    module, _, attr = point.value.partition(":")
    script = bin_dir / name
    script.write_text(f"#!{bin_dir / 'python'}\nimport sys\nfrom {module} import "
                      f"{attr.split('.')[0]}\nsys.exit({attr}())\n")
    script.chmod(0o755)


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Clone]:
    root = tmp_path / "burnbox"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(root)], check=True, timeout=60)
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=60)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "burnbox-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for name in LAUNCHED:
        _launcher(venv / "bin", name)
    made = Clone(root)
    subprocess.run(["make", "install"], cwd=root, env={**made.env, "PIP_NO_INDEX": "1"},
                   check=True, timeout=300, capture_output=True)
    assert (venv / "bin" / "burnbox").exists()
    (root / "first_email.py").write_text(made.blocks["script"])
    yield made
    made.stop()


def test_on_a_laptop_serve_bootstrap_send_and_read_the_code(clone):
    assert not (clone.root / "data").exists()  # an empty data folder
    clone.start("serve")
    wait_for_http(f"http://127.0.0.1:{clone.http_port}/readyz", timeout=60)
    output = clone.run("bootstrap", "run")
    assert CODE in output, output
    env = (clone.root / "burnbox.env").read_text()
    assert "BURNBOX_API_KEY=bb_" in env and "BURNBOX_DOMAIN=burnbox.test" in env
    # The README's steps a second time: nothing new is made, and the key in burnbox.env
    # still works (a second `bootstrap > burnbox.env` once wrote the file without it).
    output = clone.run("bootstrap", "run")
    assert CODE in output and "nothing to do" in output, output
    assert (clone.root / "burnbox.env").read_text() == env
    # What the steps made is git-ignored, and the checkout is as cloned.
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone.root, check=True,
                            capture_output=True, text=True).stdout
    assert status == "", status


def test_in_ci_serve_bootstraps_with_a_fixed_key_and_the_script_reads_the_code(clone):
    output = clone.run("ci")
    assert CODE in output, output + clone.log()


@pytest.fixture
def stores() -> Iterator[tuple[str, str]]:
    """An empty database of its own and the test Redis db, emptied, as README URLs."""
    redis_url = TEST_REDIS_URL
    with scratch_stores(PG_URL, redis_url, "first_email") as url:
        yield url.set(drivername="postgresql").render_as_string(hide_password=False), redis_url


@pytest.mark.skipif(not PG_URL, reason="needs the PostgreSQL + Redis backend")
def test_scaled_under_honcho_with_two_gunicorn_workers(clone, stores):
    database, redis = stores
    clone.blocks["scaled"] = clone.adapt(readme_blocks()["scaled"], **{
        README_DATABASE: database, README_REDIS: redis})
    clone.env["PORT"] = str(clone.http_port)  # honcho's base port: web gets it
    output = clone.run("scaled")
    assert CODE in output, output + clone.log()
    log = (clone.root / "burnbox.log").read_text(errors="replace")
    for process in ("web.1", "worker.1", "clock.1", "mailin.1", "release.1"):
        assert f"{process} " in log, log[-3000:]
    assert log.count("Booting worker") >= 2, log[-3000:]  # WEB_CONCURRENCY=2
    assert "Traceback" not in log, log[-3000:]
