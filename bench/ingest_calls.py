"""SMTP ingest's work per message, counted instead of timed: the Python function calls (and calls
of built-in functions) each thread of an in-process `mailin` makes per message, for this tree
and for another checkout in the same run.

Why count, and how two trees are compared: bench/counting.py. Each tree is measured with
SQLite in a temporary folder, the
benchmark's user, team, domain and four inboxes (`bench.ingest`'s seeding), `MailinThread`
(the committer as a thread of the same process), and one SMTP connection sending 20 messages
to warm up, then MESSAGES more of each shape (`bench.ingest`'s 2 KB and 50 KB), counted with
`threading.setprofile` from the first to the last reply. The threads: `mailin` (the event
loop: the SMTP session, and parsing a message of up to mailin's inline size), `mailin-commit`
(the committer: the store's transaction) and `mailin-store` (look-ups and larger parses).

    BURNBOX_BENCH_BASELINE=/path/to/other/checkout .venv/bin/python -m bench.ingest_calls

Without BURNBOX_BENCH_BASELINE it prints this tree's counts alone.
"""

from __future__ import annotations

import os
import smtplib
import tempfile
import threading
import time

if __package__:
    from bench.counting import Calls, Counter, Counts, compare, main
else:  # run by path in a tree's own process (bench.counting.counts_of): this folder is first
    from counting import Calls, Counter, Counts, compare, main  # type: ignore[no-redef]

MESSAGES = int(os.environ.get("BURNBOX_BENCH_CALL_MESSAGES", "300"))
WARM_UP = 20
THREADS = ("mailin", "mailin-commit", "mailin-store")


def _thread() -> str | None:
    """The mailin thread a call is made in (None for the client's)."""
    name = threading.current_thread().name.split("_")[0]
    return name if name in THREADS else None


def count_here() -> Counts:
    """The calls per message of each shape and mailin thread, in this process, for the tree
    first on `sys.path`."""
    import bench.ingest as ingest
    import tasks
    from burnbox.settings import load_settings
    from mailin.server import MailinThread
    from models.runtime import Runtime
    from models.schema import upgrade

    settings = load_settings(environ={}, overrides={
        "data_dir": tempfile.mkdtemp(prefix="burnbox-calls-"), "log.level": "WARNING",
        "smtp.hostname": "bench.example", "auth.jwt_secret": "bench-" + "x" * 40})
    runtime = Runtime.from_settings(settings)
    upgrade(runtime.db.engine)
    tasks.setup_broker(runtime)
    ingest.INBOXES = 4
    addresses = ingest._inboxes(runtime)
    counter = Counter(_thread)
    figures: Counts = {}
    # Every thread mailin starts, now or later (its executor's start on first use), counts.
    with counter.threads():
        server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
        try:
            for shape, make in (("2 KB", ingest.small), ("50 KB", ingest.with_attachment)):
                messages = [make(addresses[number % 4]) for number in range(WARM_UP + MESSAGES)]
                with smtplib.SMTP(*server.address, timeout=30) as smtp:
                    smtp.ehlo("client.example")
                    for number, raw in enumerate(messages):
                        if number == WARM_UP:
                            time.sleep(0.2)  # the warm-up's last commits and look-ups are done
                            counter.start()
                        smtp.sendmail("sender@bench.example", [addresses[number % 4]], raw)
                counts = counter.stop()
                figures[shape] = {thread: counts[thread] / MESSAGES for thread in THREADS}
        finally:
            server.stop()
            runtime.db.dispose()
    return figures


def _label(shape: str, thread: str) -> str:
    return f"SMTP ingest {shape} calls per message, thread {thread}"


def run() -> list[Calls]:
    """This tree's calls per message, and the baseline checkout's when one is named."""
    return compare("bench.ingest_calls", _label)


if __name__ == "__main__":
    main("bench.ingest_calls", count_here, _label)
