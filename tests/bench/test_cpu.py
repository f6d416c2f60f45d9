"""bench.cpu: the CPU time groups of processes spend, read from /proc."""

import os
import subprocess
import sys
import time

import pytest

from bench import cpu
from tests.processes import wait_until

pytestmark = pytest.mark.skipif(not cpu.available(), reason="needs Linux's /proc")


def _spin(seconds: float) -> float:
    deadline = time.process_time() + seconds
    while time.process_time() < deadline:
        pass
    return 1.0


def test_a_meter_adds_what_each_group_spends_during_its_spans():
    meter = cpu.Meter({"this process": cpu.fixed([os.getpid()]),
                       "gone": cpu.fixed([2 ** 22 + 1])})  # above any pid: never found
    assert meter.measure(lambda: _spin(0.2)) == 1.0
    meter.measure(lambda: _spin(0.1))
    spent = meter.per_operation(10)
    assert 25 <= spent["this process"] <= 40  # 0.3 s over 10 operations; 10 ms ticks
    assert spent["gone"] == 0


def test_groups_find_processes_by_process_group_and_by_name():
    pid = os.getpid()
    assert pid in cpu.in_group(os.getpgid(0))()
    name = (cpu.PROC / str(pid) / "comm").read_text().strip()
    assert pid in cpu.named(name)()
    assert cpu.named("no-such-command-name")() == []


def test_a_group_can_be_narrowed_by_command_line():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "marked"])
    try:
        wait_until(lambda: "marked" in cpu.command_line(child.pid))
        assert cpu.command_line(child.pid).endswith("time.sleep(30) marked")
        group = os.getpgid(child.pid)  # ours: the child did not start a group of its own
        marked = cpu.in_group(group, lambda pid: cpu.command_line(pid).endswith(" marked"))()
        assert marked == [child.pid]
        assert child.pid in cpu.in_group(group)()
    finally:
        child.kill()
        child.wait()
    assert cpu.command_line(child.pid) == ""


def test_a_process_that_exits_during_a_span_counts_nothing_rather_than_negative_time():
    script = ("import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end:"
              " pass\ntime.sleep(1)")
    child = subprocess.Popen([sys.executable, "-c", script])
    meter = cpu.Meter({"child": cpu.fixed([child.pid])})
    try:
        wait_until(lambda: _spent(child.pid) >= 0.15)  # spent, and asleep until it exits
    finally:
        meter.measure(lambda: float(child.wait()))
    assert meter.per_operation(1) == {"child": 0.0}


def _spent(pid: int) -> float:
    """CPU seconds the process has used (utime + stime from /proc)."""
    fields = (cpu.PROC / str(pid) / "stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
