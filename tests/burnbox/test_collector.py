"""burnbox.collector, in a fresh interpreter (the test process keeps its own collector): what
existed is frozen, the thresholds are raised, and garbage cycles made afterwards are still
collected without anyone calling gc.collect()."""

import subprocess
import sys

from tests.processes import ROOT

PROGRAM = """
import gc, weakref
from burnbox.collector import OLDER_THRESHOLD, YOUNG_THRESHOLD, tune_collector

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
