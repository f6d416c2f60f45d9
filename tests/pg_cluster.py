"""A private PostgreSQL cluster for fault tests: its own folder and port, so stopping and
starting it disturbs no other test. initdb refuses to run as root: the cluster then belongs to
the `postgres` user."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.processes import free_port, missing_server

PG_BIN = Path(os.environ.get("BURNBOX_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


class PrivateCluster:
    """One initdb'd cluster on 127.0.0.1:`port`, stopped and started at will."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.data = folder / "data"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self._as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, program: str, *args: str) -> None:
        subprocess.run([*self._as_owner, str(PG_BIN / program), *args], check=True,
                       capture_output=True, timeout=60)

    def init(self) -> None:
        """Create the cluster (trust authentication, no fsync: it holds test data only)."""
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-w",
                  "-t", "30", "-o", f"-p {self.port} -k {self.folder} "
                  "-c listen_addresses=127.0.0.1 -c fsync=off", "start")

    def stop(self) -> None:
        """Stop the server the way an operator's restart does: fast shutdown, which ends
        every session mid-query."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop")


@contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    """A started private cluster, stopped and removed afterwards; skip the test when the
    PostgreSQL server binaries are missing (see `missing_server`)."""
    if not (PG_BIN / "initdb").exists():
        missing_server(f"no PostgreSQL server binaries in {PG_BIN}")
    folder = Path(tempfile.mkdtemp(prefix="burnbox-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, user="postgres")
    cluster = PrivateCluster(folder)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        if (cluster.data / "postmaster.pid").exists():
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
