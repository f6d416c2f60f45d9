"""A tiny benchmark harness: time a callable, interleaving candidate and baseline rounds."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import tasks
from burnbox.settings import load_settings
from models.runtime import Runtime
from models.schema import upgrade


@dataclass
class Comparison:
    """Operations per second of a candidate and its baseline, measured in the same run."""

    name: str
    candidate: float
    baseline: float
    unit: str = "ops/s"

    @property
    def ratio(self) -> float:
        """Candidate throughput as a fraction of the baseline's."""
        return self.candidate / self.baseline if self.baseline else 0.0

    def line(self) -> str:
        """One report line."""
        digits = 1 if self.unit == "ms" else 0  # a 0.4 ms baseline is not "0 ms"
        return (f"{self.name:<48} {self.candidate:>10.{digits}f} vs "
                f"{self.baseline:>10.{digits}f} {self.unit}  ratio {self.ratio:5.2f}")


def rate(fn: Callable[[], object], seconds: float,
         clock: Callable[[], float] = time.perf_counter) -> float:
    """Calls of `fn` per second of `clock` over about `seconds` of it (wall time by default;
    `time.thread_time` counts only this thread's CPU, which other processes' load does not
    inflate)."""
    calls, started = 0, clock()
    deadline = started + seconds
    while clock() < deadline:
        fn()
        calls += 1
    return calls / (clock() - started)


def compare(name: str, candidate: Callable[[], object], baseline: Callable[[], object],
            rounds: int = 5, seconds: float = 0.4,
            clock: Callable[[], float] = time.perf_counter) -> Comparison:
    """Interleave `rounds` timed rounds of each, alternating which goes first, and compare their
    medians (rates per second of `clock`, see `rate`)."""
    return compare_rounds(name, lambda: rate(candidate, seconds, clock),
                          lambda: rate(baseline, seconds, clock), rounds)


def compare_rounds(name: str, candidate: Callable[[], float], baseline: Callable[[], float],
                   rounds: int = 5, unit: str = "ops/s") -> Comparison:
    """Interleave `rounds` rounds of each, alternating which goes first, where one round
    measures and returns its own rate (for workloads such as several client processes), and
    compare the medians."""
    candidate_rates, baseline_rates = [], []
    for round_number in range(rounds):
        if round_number % 2:
            candidate_rates.append(candidate())
            baseline_rates.append(baseline())
        else:
            baseline_rates.append(baseline())
            candidate_rates.append(candidate())
    return Comparison(name, statistics.median(candidate_rates), statistics.median(baseline_rates),
                      unit)


def embedded_runtime() -> Runtime:
    """A runtime of the embedded backend in a fresh data folder, migrated, its broker set up,
    with a rate limit far above what a benchmark sends (the limiter runs, never refuses)."""
    settings = load_settings(environ={}, overrides={
        "data_dir": tempfile.mkdtemp(prefix="burnbox-bench-"), "log.level": "WARNING",
        "auth.jwt_secret": "bench-" + "x" * 40,
        "rate_limits.authenticated": "100000000/minute"})
    runtime = Runtime.from_settings(settings)
    upgrade(runtime.db.engine)
    tasks.setup_broker(runtime)
    return runtime
