"""Where a process group keeps its Prometheus metric files (prometheus_client's multiprocess
mode), and dropping the live gauges of processes that are gone.

This module imports nothing of prometheus_client at load: `use_own_multiprocess_dir` must run
before prometheus_client is first imported, because that import picks the storage of every
value (files when PROMETHEUS_MULTIPROC_DIR is set, memory otherwise) once and for all.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# prometheus_client names a live gauge's file gauge_<mode>_<pid>.db (livesum, liveall, livemin,
# livemax, livemostrecent).
_LIVE_GAUGE_FILE = re.compile(r"gauge_live\w*?_(\d+)\.db")


def use_own_multiprocess_dir() -> str:
    """Point PROMETHEUS_MULTIPROC_DIR at a fresh folder for this process and the processes it
    starts, removed when this process exits; return it. A folder the environment names is not
    used itself but holds the new one (a tmpfs the operator chose, say): two process groups (a
    worker and a mailin) sharing one folder would each serve the other's counters. Raise
    RuntimeError when prometheus_client is imported already, since it would go on keeping this
    process's values in memory."""
    if "prometheus_client.values" in sys.modules:
        raise RuntimeError("use_own_multiprocess_dir() must run before prometheus_client is "
                           "imported")
    folder = tempfile.mkdtemp(prefix="burnbox-metrics-", dir=os.environ.get(MULTIPROC_ENV) or None)
    os.environ[MULTIPROC_ENV] = folder
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # a forked child that runs atexit leaves the folder alone
            shutil.rmtree(folder, ignore_errors=True)

    atexit.register(remove)
    return folder


def drop_dead_processes(folder: str) -> None:
    """Remove the live-gauge files of processes that no longer exist, so sessions, sockets and
    in-flight counts of a killed process stop adding up (counters and histograms stay: what a
    process counted before it died did happen). Run at each scrape, it serves every supervisor
    alike: gunicorn's, mailin's, Dramatiq's and the store processes' parent."""
    from prometheus_client import multiprocess

    dead = {int(match.group(1)) for path in Path(folder).glob("gauge_live*.db")
            if (match := _LIVE_GAUGE_FILE.fullmatch(path.name)) and not _alive(int(match.group(1)))}
    for pid in dead:
        multiprocess.mark_process_dead(pid, folder)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user's process
    return True
