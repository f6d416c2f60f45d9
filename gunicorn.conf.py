"""gunicorn settings of the `web` process: gevent workers, so one worker holds many WebSockets.

The address comes from Burnbox's settings (http.host, http.port: config file, environment, PORT,
or the flags of `burnbox web`, which passes them on in the environment). Every value can still be
overridden with GUNICORN_CMD_ARGS (e.g. `--bind`), which gunicorn reads after this file.
"""

import logging
import os
import tempfile

from gunicorn.glogging import Logger

from burnbox.logs import configure_logging
from burnbox.settings import load_settings

_settings = load_settings()
# Reading only BURNBOX_HTTP__HOST and PORT here once ignored an http.port in the config file.
bind = _settings.http.bind
# gunicorn's gevent worker, answering the requests gunicorn refuses itself (a URL over
# limit_request_line: 414) in the API's JSON error envelope instead of an HTML page.
worker_class = "burnbox.serving.GeventWorker"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_connections = 1000
timeout = 30
graceful_timeout = 30
keepalive = 5
# The app writes a structured access log of its own.
accesslog = None
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


class BurnboxLogger(Logger):
    """gunicorn's logger, configuring Burnbox's logging in the master (the workers inherit it
    when forked: `burnbox web` configured it too, but exec'ing gunicorn discarded that) and
    sending gunicorn's own lines through the same handler, in the same format, once each."""

    def setup(self, cfg) -> None:  # noqa: ANN001 (gunicorn's Config)
        super().setup(cfg)
        configure_logging(_settings)
        for log in (self.error_log, self.access_log):
            for handler in list(log.handlers):
                log.removeHandler(handler)
            log.propagate = True
        self.error_log.setLevel(logging.getLogger().level)


logger_class = BurnboxLogger

# prometheus_client's multiprocess mode: each worker writes metric files here and the metrics
# endpoint merges them. The folder must exist before any worker imports prometheus_client.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="burnbox-metrics-")


def child_exit(server, worker):  # noqa: ANN001, ANN201 (gunicorn hook signature)
    """Drop a dead worker's live gauges from the merged metrics."""
    from prometheus_flask_exporter.multiprocess import GunicornPrometheusMetrics

    GunicornPrometheusMetrics.mark_process_dead_on_child_exit(worker.pid)


def post_worker_init(worker):  # noqa: ANN001, ANN201 (gunicorn hook signature)
    """Once the worker has loaded the app, take what start-up made out of the garbage
    collector's view: a full collection of a worker that has imported the app walked ~120,000
    objects and cost 75-110 ms of CPU every few dozen requests, a request's worst case."""
    from burnbox.gc_tuning import tune_collector

    tune_collector()


def post_request(worker, req, environ, resp):  # noqa: ANN001, ANN201 (gunicorn hook signature)
    """Let the worker's other connections run before this one reads its next request.

    A gevent worker switches greenlets only when one would block. A keep-alive client that
    sends its next request at once (a polling test suite, a load generator) found it already
    read, so its greenlet served it without yielding, again and again, while the worker's other
    connections waited: at 32 connections half the requests took 0.3 ms and the slowest
    percent 150-400 ms, even for a bare Flask app. Yielding here serves ready connections in
    turn: the same throughput, p99 about 10 ms for that app (docs/performance.md)."""
    import gevent

    gevent.sleep(0)
