"""`python -m bench` (or `make bench`): run every benchmark module and print the ratios."""

from __future__ import annotations

import logging

from bench import (
    analytics,
    apikeys,
    audit,
    cli,
    compat,
    delivery,
    events,
    extract,
    foundation,
    ingest,
    ingest_calls,
    jsclient,
    loop,
    outbox,
    readpath,
    readpath_calls,
    ui,
    waiters,
)

MODULES = [foundation, apikeys, extract, ingest, ingest_calls, events, outbox, delivery, audit,
           analytics, readpath, readpath_calls, waiters, jsclient, loop, ui, cli, compat]


def main() -> None:
    """Run each module's benchmarks and print one line per comparison."""
    logging.disable(logging.INFO)
    for module in MODULES:
        print(f"== {module.__name__}")
        for comparison in module.run():
            print(comparison.line())


if __name__ == "__main__":
    main()
