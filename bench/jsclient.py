"""The JavaScript client's `waitForEmail` against the Python client's `wait_for_email`, in the
same run, on the same `burnbox serve`: both must stay one request away from the store.

For each client in turn, `ROUNDS` rounds (after `WARM_UP` uncounted ones), alternating which
client goes first: a wait for a subject of its own is made, `WAIT_LEAD` seconds later an
e-mail with that subject is sent over one kept SMTP connection, and the delay is from the
SMTP 250 (when `sendmail` returns) to the wait resolving in the client: in a node process
(bench/js_waiter.mjs, `performance.timeOrigin + performance.now()`) for JavaScript, in a
thread here (`time.time()`) for Python; both read the same wall clock. Reported: p50 and p90
of each, as the JavaScript figure against the Python one (a ratio near 1 means the JS client
adds nothing of its own).

The shape is the embedded one (`burnbox serve`: SQLite, in-process store), with a
bootstrapped team API key; the server is the same for both clients, so it cancels out.
clients/js is built (`npm ci`) first when its `dist/` is missing. Run alone with
`python -m bench.jsclient`.
"""

from __future__ import annotations

import secrets
import smtplib
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from burnbox_client import Burnbox
from burnbox_client.models import Inbox

from bench.events import running, start
from bench.harness import Comparison
from tests.factories.mail import message
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http, wait_until

ROUNDS = 60
WARM_UP = 3
WAIT_LEAD = 0.3  # seconds between making the wait and sending its e-mail
API_KEY = "bb_" + "be" * 32
DOMAIN = "burnbox.test"
PACKAGE = ROOT / "clients" / "js"


@dataclass
class Service:
    """The running server, a client of it, an inbox, and an SMTP connection to send with."""

    url: str
    client: Burnbox
    inbox: Inbox
    smtp: smtplib.SMTP

    def send(self, subject: str) -> float:
        """Mail the inbox; the wall-clock time of the 250 (sendmail returns once it is read)."""
        self.smtp.sendmail("bench@sender.example", [self.inbox.address],
                           message(self.inbox.address, subject=subject))
        return time.time()


@contextmanager
def _service() -> Iterator[Service]:
    http_port, smtp_port = free_port(), free_port()
    env = process_env(BURNBOX_DATA_DIR=tempfile.mkdtemp(prefix="burnbox-bench-"),
                      BURNBOX_BOOTSTRAP__ENABLED="true", BURNBOX_BOOTSTRAP__API_KEY=API_KEY,
                      BURNBOX_LOG__LEVEL="WARNING", BURNBOX_RATE_LIMITS__ENABLED="false")
    url = f"http://127.0.0.1:{http_port}"
    server = start([str(BIN / "burnbox"), "serve", "--port", str(http_port), "--smtp-port",
                    str(smtp_port)], env)
    with running([server]):
        wait_for_http(f"{url}/readyz", timeout=60)
        client = Burnbox(url, API_KEY, domain=DOMAIN)
        wait_until(lambda: client.http.get(f"{client.api}/my/domains", timeout=5).ok)
        smtp = smtplib.SMTP("127.0.0.1", smtp_port, timeout=30)
        try:
            yield Service(url, client, client.inboxes.create(ttl="1h"), smtp)
        finally:
            smtp.quit()
            client.close()


def _js_round(service: Service, waiter: subprocess.Popen[str], subject: str) -> float:
    waiter.stdin.write(f"{service.inbox.id} {subject}\n")  # type: ignore[union-attr]
    waiter.stdin.flush()  # type: ignore[union-attr]
    time.sleep(WAIT_LEAD)
    accepted = service.send(subject)
    answer = waiter.stdout.readline().strip()  # type: ignore[union-attr]
    if answer.startswith("error") or not answer:
        raise RuntimeError(f"the JavaScript waiter said {answer!r}")
    return float(answer) / 1000 - accepted


def _python_round(service: Service, subject: str) -> float:
    resolved: list[float] = []

    def wait() -> None:
        service.inbox.wait_for_email(subject=subject, timeout=30)
        resolved.append(time.time())

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(WAIT_LEAD)
    accepted = service.send(subject)
    thread.join()
    if not resolved:
        raise RuntimeError("the Python wait did not return")
    return resolved[0] - accepted


def _built() -> None:
    """clients/js/dist, built by `npm ci` when missing."""
    if not (PACKAGE / "dist" / "index.js").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True,
                       env=process_env(PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1"), timeout=600)


def _percentile(delays: list[float], tenth: int) -> float:
    return statistics.quantiles(delays, n=10, method="inclusive")[tenth - 1] * 1000


def run() -> list[Comparison]:
    """p50 and p90 of both clients' delays, measured in one run."""
    _built()
    with _service() as service:
        waiter = subprocess.Popen(["node", str(ROOT / "bench" / "js_waiter.mjs")], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=process_env(BURNBOX_URL=service.url,
                                                  BURNBOX_API_KEY=API_KEY))
        try:
            rounds: dict[str, Callable[[str], float]] = {
                "js": lambda subject: _js_round(service, waiter, subject),
                "python": lambda subject: _python_round(service, subject)}
            delays: dict[str, list[float]] = {"js": [], "python": []}
            for number in range(WARM_UP + ROUNDS):
                for name in (("js", "python") if number % 2 else ("python", "js")):
                    delay = rounds[name](f"{name} {number} {secrets.token_hex(4)}")
                    if number >= WARM_UP:
                        delays[name].append(delay)
        finally:
            waiter.stdin.close()  # type: ignore[union-attr]
            waiter.wait(timeout=30)
    return [Comparison(f"SMTP 250 -> waitForEmail (JS) vs wait_for_email (Py), p{tenth}0",
                       _percentile(delays["js"], tenth), _percentile(delays["python"], tenth),
                       "ms") for tenth in (5, 9)]


if __name__ == "__main__":
    for figure in run():
        print(figure.line())
