"""Garbage-collector tuning for long-running processes that allocate heavily per request.

CPython's cyclic collector runs a young-generation pass every 700 net allocations, and every
such pass walks all young objects. An SMTP session, a parsed message, an ORM statement are
thousands of short-lived objects: in `mailin` the collector ran hundreds of times a second,
and its older-generation passes also walked everything the process set up at start (modules,
settings, table metadata), which is never garbage. `tune_collector()` moves what exists at
that point to a permanent generation (`gc.freeze`) and runs the young pass every
`YOUNG_THRESHOLD` allocations. Cycles are still collected, so memory stays bounded; the
passes are rarer and shorter. Measured under the ingest benchmark (docs/mail.md, Benchmark):
less CPU per message and a lower p99.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000  # net allocations between young-generation passes (CPython: 700)
OLDER_THRESHOLD = 20  # passes of one generation between passes of the next (CPython: 10)


def tune_collector() -> None:
    """Freeze every object that exists now out of the collector's view, and collect less
    often. Call once, when the process has finished setting up."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD)
