"""burnbox.gc_tuning, in a fresh interpreter (the test process keeps its own collector): what
existed is frozen, the thresholds are raised, and garbage cycles made afterwards are still
collected without anyone calling gc.collect()."""

import os
import subprocess
import sys

from tests.processes import ROOT

PROGRAM = """
import gc, weakref
from burnbox.gc_tuning import OLDER_THRESHOLD, YOUNG_THRESHOLD, tune_collector

tune_collector()
assert gc.get_freeze_count() > 1000, gc.get_freeze_count()
assert gc.get_threshold() == (YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)

refs = [cycle() for _ in range(1000)]
junk = [[] for _ in range(3 * YOUNG_THRESHOLD)]  # allocations enough for young passes
assert sum(ref() is not None for ref in refs) < 1000, "no cycle was collected"
print("ok")
"""


def test_tuning_freezes_startup_raises_thresholds_and_still_collects_cycles():
    result = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def _frozen_after(program: str, env: dict[str, str] | None = None) -> int:
    """Run `program` in a fresh interpreter; the collector's freeze count it prints."""
    program += "\nimport gc\nprint(gc.get_freeze_count())"
    result = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip().splitlines()[-1])


def test_a_web_worker_tunes_its_collector_once_it_has_loaded_the_app():
    program = ("import runpy\n"
               "hooks = runpy.run_path('gunicorn.conf.py')\n"
               "from web import create_app\n"
               "hooks['post_worker_init'](None)\n")
    assert _frozen_after(program) > 1000


def test_the_worker_process_tunes_its_collector_once_set_up(tmp_path):
    env = {**os.environ, "BURNBOX_DATA_DIR": str(tmp_path)}
    env.pop("BURNBOX_DATABASE_URL", None)
    env.pop("BURNBOX_REDIS__URL", None)
    assert _frozen_after("import tasks.boot\n", env) > 1000
