"""Burnbox's Prometheus metrics: every family, the registry a process serves, and the small
listener of the processes that have no HTTP server of their own (mailin, worker, clock).

Every family is defined here, once, whatever process records it. Every process exposes the
families without labels (at 0 where it records nothing: mailin shows the worker's in-flight
gauge as 0); a labelled series appears once recorded. Names follow Prometheus conventions
(`burnbox_` prefix, `_total` counters, `_seconds` and `_bytes` units) and every label takes a
value from a fixed set written in this module or in the code that records it (route templates,
actor and job names, reasons, outcomes): never an id, an address or anything a user typed, so
the number of series stays bounded however many inboxes and clients there are.

Processes that fork (gunicorn workers, `mailin --processes N` and its store processes,
Dramatiq's worker processes) use prometheus_client's multiprocess mode: each process writes
its own files under PROMETHEUS_MULTIPROC_DIR and a scrape merges them.
`burnbox.metrics_files.use_own_multiprocess_dir` gives a process group a folder of its own; it
must run before prometheus_client is imported, which picks its storage then. The gauges of
processes that are gone are dropped at each scrape (`registry`): live gauges sum or list only
the processes still running.

The scrape rule is /metrics's: loopback and private source addresses only (`may_scrape`).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from burnbox.metrics_files import MULTIPROC_ENV, drop_dead_processes
from burnbox.settings import Settings

log = logging.getLogger(__name__)

# --- mailin -------------------------------------------------------------------------------
SMTP_SESSIONS_OPEN = Gauge("burnbox_smtp_sessions_open", "SMTP sessions open now",
                           multiprocess_mode="livesum")
SMTP_CONNECTIONS_REFUSED = Counter(
    "burnbox_smtp_connections_refused_total",
    "SMTP connections answered 421 because smtp.max_connections were open")
SMTP_MESSAGES_ACCEPTED = Counter("burnbox_smtp_messages_accepted_total",
                                 "messages stored and answered 250")
# By reason, as docs/metrics.md lists them. No "rate": mailin has no per-sender rate limit (the
# connection cap is counted in burnbox_smtp_connections_refused_total).
SMTP_RECIPIENTS_REFUSED = Counter("burnbox_smtp_recipients_refused_total",
                                  "recipients refused, by reason", ["reason"])
SMTP_RECEIVED_BYTES = Counter("burnbox_smtp_received_bytes_total",
                              "bytes of message data received within the size limit")
SMTP_COMMIT_BATCH = Histogram("burnbox_smtp_commit_batch_size",
                              "messages stored per group-commit transaction",
                              buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256))
SMTP_REPLY_SECONDS = Histogram(
    "burnbox_smtp_data_reply_seconds", "time from the end of DATA to the 250",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
SMTP_STORE_RESTARTS = Counter("burnbox_smtp_store_process_restarts_total",
                              "store processes started again after one exited")

# --- worker -------------------------------------------------------------------------------
ACTOR_RUNS = Counter("burnbox_actor_runs_total", "actor messages processed, by outcome",
                     ["actor", "outcome"])
WEBHOOK_ATTEMPTS = Counter("burnbox_webhook_attempts_total",
                           "webhook delivery attempts, by outcome and attempt number",
                           ["outcome", "attempt"])
WEBHOOK_ATTEMPT_SECONDS = Histogram(
    "burnbox_webhook_attempt_duration_seconds", "duration of one webhook attempt",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
WEBHOOK_LAG_SECONDS = Histogram(
    "burnbox_webhook_delivery_lag_seconds",
    "time from the event's commit to the first attempt of its delivery",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
WEBHOOK_IN_FLIGHT = Gauge("burnbox_webhook_deliveries_in_flight",
                          "webhook attempts waiting on their target now",
                          multiprocess_mode="livesum")

# --- outbox, cleanup and clock jobs (they run in the worker) -------------------------------
OUTBOX_UNDISPATCHED = Gauge("burnbox_outbox_undispatched_events",
                            "events not yet handed to the fan-out, as the last sweep saw",
                            multiprocess_mode="mostrecent")
OUTBOX_OLDEST_AGE = Gauge("burnbox_outbox_oldest_age_seconds",
                          "age of the oldest undispatched event when the last sweep ran "
                          "(0: none)", multiprocess_mode="mostrecent")
CLEANUP_REMOVED = Counter("burnbox_cleanup_removed_rows_total", "rows the cleanup removed",
                          ["kind"])
JOB_LAST_SUCCESS = Gauge("burnbox_job_last_success_timestamp_seconds",
                         "Unix time a periodic job last ran to the end without failing",
                         ["job"], multiprocess_mode="max")

# --- clock --------------------------------------------------------------------------------
CLOCK_JOBS_SENT = Counter("burnbox_clock_jobs_sent_total", "periodic jobs the clock sent",
                          ["job"])
CLOCK_TICKS_FAILED = Counter("burnbox_clock_ticks_failed_total",
                             "clock ticks that could not reach the store or the broker")

# --- web ----------------------------------------------------------------------------------
WEBSOCKETS_OPEN = Gauge("burnbox_websockets_open", "WebSockets open now, by stream", ["stream"],
                        multiprocess_mode="livesum")
WAITS_IN_PROGRESS = Gauge("burnbox_wait_requests_in_progress",
                          "requests waiting for mail (GET .../emails/wait) now",
                          multiprocess_mode="livesum")
RATE_LIMIT_REFUSALS = Counter("burnbox_rate_limit_refusals_total",
                              "requests answered 429 by the rate limiter, by bucket", ["bucket"])
API_KEY_AUTHENTICATIONS = Counter("burnbox_api_key_authentications_total",
                                  "API-key authentications, by outcome", ["outcome"])


@contextmanager
def tracking(gauge: Gauge) -> Iterator[None]:
    """Count the block in `gauge` while it runs."""
    gauge.inc()
    try:
        yield
    finally:
        gauge.dec()


def attempt_label(number: int) -> str:
    """The attempt label: the number, with everything past the ninth as "10+" (the schedule
    has three attempts by default; the setting could raise it without bound)."""
    return str(number) if number < 10 else "10+"


def record_webhook_attempt(number: int, outcome: str, seconds: float,
                           lag_seconds: float | None) -> None:
    """One webhook attempt: its outcome (2xx, non_2xx, timeout, refused_address, error), its
    duration and, for the first attempt, the lag since its event committed."""
    WEBHOOK_ATTEMPTS.labels(outcome, attempt_label(number)).inc()
    WEBHOOK_ATTEMPT_SECONDS.observe(seconds)
    if lag_seconds is not None:
        WEBHOOK_LAG_SECONDS.observe(max(lag_seconds, 0.0))


def record_outbox(undispatched: int, oldest_age_seconds: float) -> None:
    """What the outbox sweep saw: undispatched events and the age of the oldest."""
    OUTBOX_UNDISPATCHED.set(undispatched)
    OUTBOX_OLDEST_AGE.set(max(oldest_age_seconds, 0.0))


# --- exposing -----------------------------------------------------------------------------

def registry() -> CollectorRegistry:
    """What this process serves: in multiprocess mode a registry merging the files of every
    process of the group (dead processes' live gauges dropped first), else the default one."""
    folder = os.environ.get(MULTIPROC_ENV)
    if not folder:
        return REGISTRY
    drop_dead_processes(folder)
    merged = CollectorRegistry()
    multiprocess.MultiProcessCollector(merged, folder)
    return merged


def may_scrape(ip: str) -> bool:
    """True for loopback and private (RFC 1918, unique-local, link-local) addresses, IPv4
    written as IPv6 (`::ffff:10.0.0.1`) included. The unspecified address is refused, though
    Python counts 0.0.0.0 as private: it is what an unknown peer (a Unix-socket proxy) resolves
    to, and an unknown peer must not unlock metrics."""
    try:
        address = ipaddress.ip_address(ip.strip())
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return not address.is_unspecified and (address.is_loopback or address.is_private)


FORBIDDEN_BODY = json.dumps({"error": "metrics are served to loopback and private addresses only",
                             "code": "forbidden"}).encode()
NOT_FOUND_BODY = json.dumps({"error": "not found", "code": "not_found"}).encode()


class _ScrapeHandler(BaseHTTPRequestHandler):
    """GET `path` answers the process's metrics to loopback and private peers, 403 to others
    (in the API's error envelope); anything else is 404."""

    path_served = "/metrics"

    def do_GET(self) -> None:
        if not may_scrape(self.client_address[0]):
            self._answer(403, "application/json", FORBIDDEN_BODY)
        elif self.path.partition("?")[0] != self.path_served:
            self._answer(404, "application/json", NOT_FOUND_BODY)
        else:
            self._answer(200, CONTENT_TYPE_LATEST, generate_latest(registry()))

    def _answer(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Scrapes come every few seconds: no access line for each."""


class MetricsListener:
    """The metrics endpoint of a process without an HTTP server: `host:port`, `path`, on a
    daemon thread. Port 0 picks a free one (`address` tells which)."""

    def __init__(self, host: str, port: int, path: str) -> None:
        handler = type("ScrapeHandler", (_ScrapeHandler,), {"path_served": path})
        self.server = ThreadingHTTPServer((host, port), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="metrics",
                                       daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) it listens on."""
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def start(self) -> MetricsListener:
        """Serve until `stop`."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()


def start_listener(settings: Settings, port: int) -> MetricsListener | None:
    """The process's metrics listener on metrics.host:`port`, started, when metrics are
    enabled and the port is not 0; else None. A port that cannot be bound (taken by another
    process) is logged as an error and the process runs on without its listener: metrics must
    never stop mail or deliveries."""
    if not settings.metrics.enabled or not port:
        return None
    try:
        listener = MetricsListener(settings.metrics.host, port, settings.metrics.path)
    except OSError as exc:
        log.error("metrics listener could not start",
                  extra={"address": f"{settings.metrics.host}:{port}", "reason": str(exc)})
        return None
    log.info("metrics listening", extra={"address": f"{settings.metrics.host}:{port}"})
    return listener.start()
