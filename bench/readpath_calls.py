"""The API's read path, counted instead of timed: the function calls the web app makes per
request for the endpoints `bench.readpath` times (the e-mails list of 20, an e-mail's detail,
the inbox list, `POST /inboxes`, each with an API key and with a JWT, and `/auth/me`), for this
tree and for another checkout in the same run (why count, and how: bench/counting.py).

Each tree: SQLite in a temporary folder, what bench/read_world.py seeds (this tree's, for the
baseline too), the app served in process by Flask's test client with the rate limiter on; each
endpoint asked 5 times to warm up, then REQUESTS times counted. Every answer must be a success.

    BURNBOX_BENCH_BASELINE=/path/to/other/checkout .venv/bin/python -m bench.readpath_calls
"""

from __future__ import annotations

import os
import tempfile

if __package__:
    from bench.counting import Calls, Counter, Counts, compare, main
else:  # run by path in a tree's own process (bench.counting.counts_of): this folder is first
    from counting import Calls, Counter, Counts, compare, main  # type: ignore[no-redef]

REQUESTS = int(os.environ.get("BURNBOX_BENCH_CALL_REQUESTS", "50"))
WARM_UP = 5


def count_here() -> Counts:
    """The calls per request of each endpoint and credential, in this process, for the tree
    first on `sys.path`."""
    from burnbox.settings import load_settings
    from models.runtime import Runtime
    from models.schema import upgrade
    from web import create_app

    if __package__:
        from bench.read_world import seed_reads
    else:  # this folder's, as `counting` above
        from read_world import seed_reads  # type: ignore[no-redef]

    settings = load_settings(environ={}, overrides={
        "data_dir": tempfile.mkdtemp(prefix="burnbox-calls-"), "log.level": "WARNING",
        "auth.jwt_secret": "bench-" + "x" * 40, "rate_limits.enabled": True,
        "rate_limits.authenticated": "100000000/minute"})
    runtime = Runtime.from_settings(settings)
    upgrade(runtime.db.engine)
    requests = seed_reads(runtime, settings)
    client = create_app(runtime=runtime).test_client()
    counter = Counter(lambda: "app")
    figures: Counts = {}

    with counter.here():
        for request in requests:
            for number in range(WARM_UP + REQUESTS):
                if number == WARM_UP:
                    counter.start()
                answer = client.open(request.path, method=request.method, data=request.body,
                                     headers=request.headers,
                                     content_type="application/json" if request.body else None)
                assert answer.status_code < 300, (request.path, answer.status_code)
            figures[f"{request.name}, {request.auth}"] = {"app": counter.stop()["app"] / REQUESTS}
    runtime.db.dispose()
    return figures


def _label(endpoint: str, _part: str) -> str:
    return f"readpath {endpoint} calls per request"


def run() -> list[Calls]:
    """This tree's calls per request, and the baseline checkout's when one is named."""
    return compare("bench.readpath_calls", _label)


if __name__ == "__main__":
    main("bench.readpath_calls", count_here, _label)
