"""The API read path under load (issue #22): `burnbox web` (gunicorn, 2 gevent workers) on
PostgreSQL + Redis against a bare Flask app serving a 20-item JSON list under the same gunicorn
settings (bench/bare_app.py), in interleaved rounds of one run.

Load comes from wrk (`apt-get install wrk`): `THREADS` threads, `CONNECTIONS` connections,
`SECONDS` seconds per measurement, `ROUNDS` rounds; each round measures the bare app first,
then every endpoint with an API key and with a JWT. Reported per endpoint and credential: the
median req/s, p50 and p99 of the rounds, the ratio to the bare app's median req/s, and the key
against the JWT. The machine is shared, so each round prints its 1-minute load average.

Endpoints: the e-mails list (20 e-mails), an e-mail's detail, the inbox list, /auth/me (JWT
only: API keys are refused there by design) and POST /inboxes; and, with the key as HTTP Basic's
password, the MailHog- and Mailpit-compatible lists of the same 20 e-mails and message
(compat.mailhog, compat.mailpit; Mailpit's read marks the message read, which it is after the
first), each reported against its native twin (target: at least COMPAT_TARGET of its rate). The rate
limiter runs with a limit far above the load, so its cost is measured but it never refuses.

Needs BURNBOX_BENCH_DATABASE_URL and BURNBOX_BENCH_REDIS_URL (the database named there is
emptied). Run alone with `python -m bench.readpath`; BURNBOX_BENCH_READPATH_SECONDS and
BURNBOX_BENCH_READPATH_ROUNDS shorten or lengthen it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field

from bench.events import Shape, running, start
from bench.read_world import EMAILS, Request, seed_reads
from burnbox.settings import Settings
from models.runtime import Runtime
from models.schema import upgrade
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http

THREADS = 2
CONNECTIONS = 32
SECONDS = int(os.environ.get("BURNBOX_BENCH_READPATH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BURNBOX_BENCH_READPATH_ROUNDS", "3"))
TARGETS = {"ratio": 0.30, "p99_ms": 50.0, "key_vs_jwt": 0.10}
# A compat face's list and read against the native list and read, in the same run.
COMPAT_TARGET = 0.8
COMPAT_TWINS = {"mailhog list (20)": "e-mails list (20)", "mailhog message": "e-mail detail",
                "mailpit list (20)": "e-mails list (20)", "mailpit message": "e-mail detail"}
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


@dataclass
class Run:
    """One wrk measurement."""

    rate: float
    p50_ms: float
    p99_ms: float
    errors: int  # answers other than 2xx/3xx
    socket_errors: int


@dataclass
class Endpoint(Request):
    """One request to measure, and its measurements."""

    runs: list[Run] = field(default_factory=list)

    def median(self, attribute: str) -> float:
        return statistics.median(getattr(run, attribute) for run in self.runs)


@dataclass
class Line:
    """A report line of this benchmark."""

    text: str

    def line(self) -> str:
        return self.text


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS[unit]


def wrk(base: str, endpoint: Endpoint | None, seconds: int = SECONDS) -> Run:
    """Drive `base` (the bare app's list when `endpoint` is None) for `seconds` with wrk."""
    script = None
    args = ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency"]
    if endpoint is None:
        url = base + "/list"
    else:
        url = base + endpoint.path
        lines = [f"wrk.method = {json.dumps(endpoint.method)}"]
        lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}"
                  for k, v in endpoint.headers.items()]
        if endpoint.body is not None:
            lines += ['wrk.headers["Content-Type"] = "application/json"',
                      f"wrk.body = {json.dumps(endpoint.body)}"]
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
            handle.write("\n".join(lines) + "\n")
        script = handle.name
        args += ["-s", script]
    try:
        out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    finally:
        if script:
            os.unlink(script)
    latency = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.MULTILINE))
    if set(latency) != {"50", "99"}:
        raise RuntimeError(f"wrk gave no latency distribution for {url}:\n{out}")
    refused = re.findall(r"Non-2xx or 3xx responses: (\d+)", out)
    # wrk's own: connect, read and write errors, and requests past its 2 s timeout.
    socket_errors = re.findall(r"(?:connect|read|write|timeout) (\d+)", out)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    return Run(rate=rate, p50_ms=_ms(latency["50"]), p99_ms=_ms(latency["99"]),
               errors=sum(int(count) for count in refused),
               socket_errors=sum(int(count) for count in socket_errors))


def seed(settings: Settings) -> list[Endpoint]:
    """Migrate the emptied database, commit what `bench.read_world` reads; the endpoints to
    measure."""
    runtime = Runtime.from_settings(settings)
    with runtime.db.engine.begin() as connection:
        connection.exec_driver_sql("DROP SCHEMA public CASCADE")
        connection.exec_driver_sql("CREATE SCHEMA public")
    upgrade(runtime.db.engine)
    requests = seed_reads(runtime, settings)
    runtime.db.dispose()
    endpoints = [Endpoint(**vars(request)) for request in requests]
    # The MailHog and Mailpit faces' list and message of the same inbox, with the same key as
    # Basic's password (Mailpit's read marks the message read: read already after the first).
    by_name = {(request.name, request.auth): request for request in requests}
    inbox_id = by_name["e-mails list (20)", "key"].path.split("/")[4]
    email_id = by_name["e-mail detail", "key"].path.rsplit("/", 1)[1]
    key = by_name["e-mails list (20)", "key"].headers["Authorization"].removeprefix("Bearer ")
    basic = {"Authorization": "Basic " + base64.b64encode(f"bench:{key}".encode()).decode()}
    mailhog = f"/compat/mailhog/inboxes/{inbox_id}/api"
    mailpit = f"/compat/mailpit/inboxes/{inbox_id}/api"
    endpoints += [
        Endpoint("mailhog list (20)", "key", "GET", f"{mailhog}/v2/messages?limit={EMAILS}",
                 basic),
        Endpoint("mailhog message", "key", "GET", f"{mailhog}/v1/messages/{email_id}", basic),
        Endpoint("mailpit list (20)", "key", "GET", f"{mailpit}/v1/messages?limit={EMAILS}",
                 basic),
        Endpoint("mailpit message", "key", "GET", f"{mailpit}/v1/message/{email_id}", basic)]
    return endpoints


def run() -> list[Line]:
    """Measure, and report one line per endpoint and credential, then the targets."""
    shape = Shape()
    if not shape.scaled:
        return [Line("readpath: skipped (set BURNBOX_BENCH_DATABASE_URL and "
                     "BURNBOX_BENCH_REDIS_URL: it measures the PostgreSQL + Redis shape)")]
    if shutil.which("wrk") is None:
        return [Line("readpath: skipped (wrk is not installed: apt-get install wrk)")]
    endpoints = seed(shape.settings)
    api_port, bare_port = free_port(), free_port()
    api_env = shape.env(PORT=str(api_port), WEB_CONCURRENCY="2")
    api_env |= {"BURNBOX_RATE_LIMITS__ENABLED": "true",  # shape.env turns the limiter off
                "BURNBOX_RATE_LIMITS__AUTHENTICATED": "100000000/minute"}
    api = start([str(BIN / "burnbox"), "web"], api_env)
    bare = start([str(BIN / "gunicorn"), "-c", str(ROOT / "gunicorn.conf.py"),
                  "--bind", f"127.0.0.1:{bare_port}", "bench.bare_app:app"],
                 process_env(WEB_CONCURRENCY="2", BURNBOX_DATA_DIR=shape.data_dir,
                             BURNBOX_LOG__LEVEL="WARNING"))
    api_base, bare_base = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{bare_port}"
    lines: list[Line] = []
    bare_runs: list[Run] = []
    with running([api, bare]):
        wait_for_http(api_base + "/healthz")
        wait_for_http(bare_base + "/list")
        for endpoint in endpoints:  # warm both workers' caches and connection pools
            wrk(api_base, endpoint, seconds=1)
        for number in range(1, ROUNDS + 1):
            bare_runs.append(wrk(bare_base, None))
            for endpoint in endpoints:
                endpoint.runs.append(wrk(api_base, endpoint))
            load = os.getloadavg()[0]
            lines.append(Line(f"readpath round {number}/{ROUNDS}: load average {load:.2f} "
                              f"(1 min), bare {bare_runs[-1].rate:.0f} req/s"))
    bare_rate = statistics.median(run.rate for run in bare_runs)
    lines.append(Line(f"readpath bare Flask + gevent, 20-item list: {bare_rate:.0f} req/s, "
                      f"p99 {statistics.median(r.p99_ms for r in bare_runs):.1f} ms "
                      f"({CONNECTIONS} connections, {THREADS} wrk threads, {SECONDS}s x "
                      f"{ROUNDS} rounds, {os.cpu_count()} CPUs)"))
    for endpoint in endpoints:
        errors = sum(run.errors for run in endpoint.runs)
        socket_errors = sum(run.socket_errors for run in endpoint.runs)
        lines.append(Line(
            f"readpath {endpoint.name:<18} {endpoint.auth:<3} {endpoint.median('rate'):>7.0f} "
            f"req/s  p50 {endpoint.median('p50_ms'):6.1f} ms  p99 "
            f"{endpoint.median('p99_ms'):6.1f} ms  ratio {endpoint.median('rate') / bare_rate:5.2f}"
            + (f"  ({errors} non-2xx)" if errors else "")
            + (f"  ({socket_errors} socket errors/timeouts)" if socket_errors else "")))
    by_name: dict[str, dict[str, Endpoint]] = {}
    for endpoint in endpoints:
        by_name.setdefault(endpoint.name, {})[endpoint.auth] = endpoint
    for name, pair in by_name.items():
        if len(pair) == 2:
            lines.append(Line(f"readpath {name:<18} key/jwt "
                              f"{pair['key'].median('rate') / pair['jwt'].median('rate'):5.2f}"))
    for compat, native in COMPAT_TWINS.items():
        ratio = by_name[compat]["key"].median("rate") / by_name[native]["key"].median("rate")
        lines.append(Line(f"readpath {compat:<18} / {native}: {ratio:5.2f} (target "
                          f">= {COMPAT_TARGET})"))
    shutil.rmtree(shape.data_dir, ignore_errors=True)
    return lines


if __name__ == "__main__":
    for report in run():
        print(report.line())
