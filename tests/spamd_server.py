"""A real SpamAssassin daemon for the spam engine tests: Debian's `spamd` on a free port of
127.0.0.1, with the rules the package ships and every network test off (`--local`: no DNS
blocklists, no sa-update), started once per test session on first use.

Without the program the tests that use it skip with the reason; under CI=true (or
BURNBOX_TEST_REQUIRE_SERVERS=1) they fail instead, so CI cannot go green without having run
them (`.ci/run` installs the `spamassassin` and `spamd` packages).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import free_port, terminate

SPAMD = os.environ.get("BURNBOX_TEST_SPAMD", "/usr/sbin/spamd")
START_TIMEOUT = 60.0  # the rules load in a few seconds; a cold, busy machine takes longer


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true" or os.environ.get("BURNBOX_TEST_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{reason} (required under CI)")
    pytest.skip(reason)


def _answers(port: int) -> bool:
    """Whether spamd answers PING on `port` (it listens before its rules are loaded)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(b"PING SPAMC/1.5\r\n\r\n")
            sock.shutdown(socket.SHUT_WR)
            return b"PONG" in sock.recv(256)
    except OSError:
        return False


@pytest.fixture(scope="session")
def spamd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a running spamd, `spamd://127.0.0.1:<port>`."""
    if shutil.which(SPAMD) is None:
        _missing(f"no SpamAssassin daemon at {SPAMD} (Debian: apt-get install spamassassin "
                 "spamd)")
    folder: Path = tmp_path_factory.mktemp("spamd")
    port = free_port()
    log = (folder / "spamd.log").open("wb")
    process = subprocess.Popen(
        [SPAMD, f"--listen=127.0.0.1:{port}", "--local", "--nouser-config", "--max-children=2",
         f"--pidfile={folder / 'spamd.pid'}", "--syslog=stderr"],
        stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(port):
            if process.poll() is not None:
                pytest.fail(f"spamd exited: {(folder / 'spamd.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"spamd did not answer within {START_TIMEOUT:g}s")
            time.sleep(0.2)
        yield f"spamd://127.0.0.1:{port}"
    finally:
        terminate(process)
        log.close()
