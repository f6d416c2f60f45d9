"""`python -m bench` (or `make bench`): run every benchmark module and print the ratios."""

from __future__ import annotations

import logging

from bench import (
    analytics,
    apikeys,
    audit,
    cli,
    delivery,
    events,
    extract,
    foundation,
    ingest,
    jsclient,
    outbox,
    readpath,
    ui,
    waiters,
)

MODULES = [foundation, apikeys, extract, ingest, events, outbox, delivery, audit, analytics,
           readpath, waiters, jsclient, ui, cli]


def main() -> None:
    """Run each module's benchmarks and print one line per comparison."""
    logging.disable(logging.INFO)
    for module in MODULES:
        print(f"== {module.__name__}")
        for comparison in module.run():
            print(comparison.line())


if __name__ == "__main__":
    main()
