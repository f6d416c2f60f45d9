"""CPU time of groups of processes, read from /proc (Linux): what a benchmark's parties spend.

A throughput ratio says how far a candidate is from its baseline, not why. When every party
(clients, servers, the database) runs on the same few cores, the CPU each spends per operation
says which one bounds the result: with `cores` cores, no run can beat `cores / total CPU per
operation` operations per second. Elsewhere than Linux nothing is read and the figures are
absent (`available()` is False).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

PROC = Path("/proc")
T = TypeVar("T")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def available() -> bool:
    """True where process CPU times can be read (Linux's /proc)."""
    return (PROC / "self" / "stat").exists()


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (field 3 onwards), or None when
    the process is gone or unreadable."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    _, _, rest = text.rpartition(")")  # the command name may hold spaces and parentheses
    return rest.split()


def _command(pid: int) -> str:
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def _pids() -> Iterable[int]:
    return (int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit())


def parent(pid: int) -> int | None:
    """The process's parent's id; None when it is gone."""
    fields = _stat(pid)
    return None if fields is None else int(fields[1])


def _ticks(pids: Iterable[int]) -> dict[tuple[int, int], int]:
    """User plus system CPU clock ticks each process has used so far (all its threads), by
    (pid, start time): a pid the kernel gave to a new process is another key."""
    ticks = {}
    for pid in pids:
        fields = _stat(pid)
        if fields is not None:  # utime, stime; starttime
            ticks[pid, int(fields[19])] = int(fields[11]) + int(fields[12])
    return ticks


def command_line(pid: int) -> str:
    """The process's arguments joined by spaces ("" when it is gone)."""
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace").strip()
    except OSError:
        return ""


def in_group(pgid: int, where: Callable[[int], bool] | None = None
             ) -> Callable[[], list[int]]:
    """The processes of a process group (those for which `where(pid)` is true, when given),
    found anew at each call (forked workers included)."""

    def find() -> list[int]:
        return [pid for pid in _pids() if (fields := _stat(pid)) and int(fields[2]) == pgid
                and (where is None or where(pid))]

    return find


def named(command: str) -> Callable[[], list[int]]:
    """The processes whose command name is `command` (e.g. every "postgres" process, server
    and backends), found anew at each call."""

    def find() -> list[int]:
        return [pid for pid in _pids() if _command(pid) == command]

    return find


def fixed(pids: Iterable[int]) -> Callable[[], list[int]]:
    """A set of processes known in advance."""
    chosen = list(pids)
    return lambda: chosen


class Meter:
    """Accumulates the CPU seconds of named groups of processes over measured spans."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]) -> None:
        self.groups = groups
        self.seconds = dict.fromkeys(groups, 0.0)

    def measure(self, span: Callable[[], T]) -> T:
        """Run `span` (one measured round) and add what each group spent meanwhile; return what
        `span` returned."""
        members = {name: find() for name, find in self.groups.items()}
        before = {name: _ticks(pids) for name, pids in members.items()}
        result = span()
        for name, pids in members.items():
            # Only processes alive at both ends: one that exited meanwhile (its CPU is gone
            # with it) or whose pid now names another process would count negative time.
            spent = sum(ticks - before[name][key] for key, ticks in _ticks(pids).items()
                        if key in before[name])
            self.seconds[name] += spent / _TICKS
        return result

    def per_operation(self, operations: int) -> dict[str, float]:
        """Milliseconds of CPU per operation of each group."""
        return {name: seconds * 1000 / operations if operations else 0.0
                for name, seconds in self.seconds.items()}
