"""The `burnbox` command's start-up: `burnbox --help` and every verb's help, against a bare
click program (one group, one command) started by the same interpreter in the same run. The
target is at most 4 times the bare program (ratio <= 4.0).

Each round starts the program as a person's shell does (a new process) and counts the CPU time
the child used (user + system, from the kernel's accounting of waited-for children): the load
other processes put on the machine stretches wall time, not that. The ratio is candidate time
over baseline time, so here lower is better.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from bench.harness import Comparison, compare_rounds

BURNBOX = str(Path(sys.executable).parent / "burnbox")
BARE = """
import click

@click.group()
def main():
    "A bare click program."

@main.command()
def verb():
    "A command."

main()
"""
STARTS = 10  # process starts per round


def _cpu_ms(argv: list[str]) -> float:
    """The mean CPU time, in ms, of STARTS runs of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(STARTS):
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used * 1000 / STARTS


def _verbs() -> list[list[str]]:
    """Every verb of the command, nested ones included, as arguments."""
    from burnbox.cli import main

    verbs: list[list[str]] = [[]]
    for name, command in sorted(main.commands.items()):
        verbs.append([name])
        for sub in sorted(getattr(command, "commands", {})):
            verbs.append([name, sub])
    return verbs


def run() -> list[Comparison]:
    """`burnbox [VERB] --help` vs the bare program's `--help`, CPU ms per start."""
    bare = [sys.executable, "-c", BARE, "--help"]
    return [compare_rounds(f"burnbox {' '.join([*verb, '--help'])} (target <= 4x)",
                           lambda verb=verb: _cpu_ms([BURNBOX, *verb, "--help"]),
                           lambda: _cpu_ms(bare), rounds=3, unit="ms")
            for verb in _verbs()]


if __name__ == "__main__":
    for comparison in run():
        print(comparison.line())
