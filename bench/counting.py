"""Work counted instead of timed: the function calls (Python's and built-ins') a piece of
Burnbox makes, for this tree and for another checkout in the same run.

On a machine shared with other work, CPU per message or per request moves by several per cent
between two runs of the same commit, more than most changes cost or save. A count does not move
with the load: it is the same in every run of a tree, so a difference of a few per cent between
two trees is a difference in what they do. It weighs a call of `len` like a call of the
parser (it measures the code path, not time), so what it shows is confirmed in a profile before
it is acted on.

A counting benchmark is a module with a `count_here()` that measures the tree first on
`sys.path` and returns `{shape: {part: calls per operation}}`; `counts_of` runs it in a
process of its own for one tree (the module is run by its path, so the baseline checkout need
not have it), and `compare` for this tree and BURNBOX_BENCH_BASELINE's.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

BASELINE_TREE = os.environ.get("BURNBOX_BENCH_BASELINE", "")
ROOT = Path(__file__).resolve().parent.parent
Counts = dict[str, dict[str, float]]


@dataclass
class Calls:
    """One shape's calls per operation in one part, for the candidate and the baseline."""

    what: str  # e.g. "SMTP ingest 2 KB calls per message, thread mailin"
    candidate: float
    baseline: float | None

    def line(self) -> str:
        """The figures as one line of the report."""
        head = f"{self.what}: {self.candidate:.0f}"
        if self.baseline is None:
            return head
        return f"{head} | baseline {self.baseline:.0f} | ratio {self.candidate / self.baseline:.3f}"


class Counter:
    """Counts calls while on, per part: `part_of(frame)` names the part a call belongs to
    (None: not counted), between `start` and `stop`. Install with `threads()` (threads started
    later) or `here()` (this thread)."""

    def __init__(self, part_of: Callable[[], str | None]) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.on = threading.Event()
        self._part_of = part_of

    def _note(self, _frame: FrameType, event: str, _arg: Any) -> None:
        if self.on.is_set() and event in ("call", "c_call"):
            part = self._part_of()
            if part is not None:
                self.counts[part] += 1

    @contextmanager
    def threads(self) -> Iterator[Counter]:
        """Count in the threads started inside the block."""
        threading.setprofile(self._note)
        try:
            yield self
        finally:
            threading.setprofile(None)

    @contextmanager
    def here(self) -> Iterator[Counter]:
        """Count in this thread inside the block."""
        sys.setprofile(self._note)
        try:
            yield self
        finally:
            sys.setprofile(None)

    def start(self) -> None:
        """Count from now, afresh."""
        self.counts.clear()
        self.on.set()

    def stop(self) -> collections.Counter[str]:
        """Stop counting; the counts since `start`."""
        self.on.clear()
        return collections.Counter(self.counts)


def counts_of(module: str, tree: Path) -> Counts:
    """`module`'s `count_here()` in a process of its own with `tree` first on its path."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    answer = subprocess.run([sys.executable, str(ROOT / (module.replace(".", "/") + ".py")),
                             "--here"], cwd=tree, env=env, capture_output=True, text=True,
                            check=True)
    counts: Counts = json.loads(answer.stdout.splitlines()[-1])
    return counts


def compare(module: str, label: Callable[[str, str], str]) -> list[Calls]:
    """This tree's counts of `module`, beside BURNBOX_BENCH_BASELINE's when it names one;
    `label(shape, part)` words each line."""
    candidate = counts_of(module, ROOT)
    baseline = counts_of(module, Path(BASELINE_TREE).resolve()) if BASELINE_TREE else None
    return [Calls(label(shape, part), calls,
                  None if baseline is None else baseline.get(shape, {}).get(part))
            for shape, parts in candidate.items() for part, calls in parts.items()
            if calls >= 1]


def main(module: str, count_here: Callable[[], Counts], label: Callable[[str, str], str]
         ) -> None:
    """A counting module's command line: `--here` prints this process's counts as JSON (what
    `counts_of` reads), anything else the comparison."""
    if sys.argv[1:] == ["--here"]:
        sys.path.insert(0, os.getcwd())
        print(json.dumps(count_here()))
    else:
        for figure in compare(module, label):
            print(figure.line())
