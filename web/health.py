"""Liveness, readiness and Prometheus metrics, at the root (outside /api/v1)."""

from __future__ import annotations

import logging
import os
from typing import Any

from flask import Flask, Response
from flask.views import MethodView
from marshmallow import Schema, fields
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from sqlalchemy import text

from burnbox import metrics
from burnbox.settings import Settings
from models.errors import Forbidden
from web.api import Api, Blueprint
from web.context import runtime
from web.per_request import client_ip
from web.ratelimit import rate_exempt

log = logging.getLogger(__name__)

blp = Blueprint("health", __name__, description="Liveness, readiness and metrics")


class HealthSchema(Schema):
    status = fields.String(required=True, metadata={"example": "ok"})


class ReadinessSchema(Schema):
    status = fields.String(required=True, metadata={"description": "ok or unavailable"})
    checks = fields.Dict(keys=fields.String(), values=fields.String(), required=True,
                         metadata={"description": "each dependency: ok, or why it failed"})


@blp.route("/healthz")
class Liveness(MethodView):
    @rate_exempt
    @blp.response(200, HealthSchema)
    def get(self) -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}


def readiness_checks() -> dict[str, str]:
    """Probe the database, Redis (when configured) and object storage; 'ok' or the failure."""
    rt = runtime()
    checks: dict[str, str] = {}
    probes: dict[str, Any] = {
        "database": lambda: _probe_database(rt),
        "storage": rt.storage.probe,
    }
    if rt.settings.redis.url:
        probes["redis"] = rt.store.ping
    for name, probe in probes.items():
        try:
            probe()
            checks[name] = "ok"
        except Exception as exc:  # a readiness probe reports every failure instead of raising
            log.warning("readiness check failed", extra={"dependency": name, "reason": str(exc)})
            checks[name] = f"unavailable: {type(exc).__name__}"
    return checks


def _probe_database(rt: Any) -> None:
    # Through Database.session(), the path every request takes, rather than a bare engine
    # connection: a runtime bound to one connection (tests) is then probed on that connection.
    with rt.db.session() as session:
        session.execute(text("SELECT 1"))


@blp.route("/readyz")
class Readiness(MethodView):
    @rate_exempt
    @blp.response(200, ReadinessSchema)
    @blp.alt_response(503, schema=ReadinessSchema, description="a dependency is unavailable")
    def get(self) -> Any:
        """Readiness: database, Redis (when configured) and storage answer; 503 names failures."""
        checks = readiness_checks()
        ready = all(value == "ok" for value in checks.values())
        return {"status": "ok" if ready else "unavailable", "checks": checks}, 200 if ready else 503


def register_metrics(app: Flask, api: Api, settings: Settings) -> None:
    """Collect request metrics and serve them at metrics.path to loopback and private peers only,
    with Burnbox's own families (burnbox.metrics: sockets, waits, rate limits, API keys, and in
    the embedded mode mail, worker and clock too).

    Under gunicorn (PROMETHEUS_MULTIPROC_DIR set by gunicorn.conf.py) every worker writes its own
    files and the endpoint merges them; otherwise the app keeps its request metrics in its own
    registry (one per app: tests build many) and the endpoint adds the process's default one.
    """
    if not settings.metrics.enabled:
        return
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_flask_exporter.multiprocess import GunicornPrometheusMetrics

        GunicornPrometheusMetrics(app, group_by="url_rule")
        registry = None
    else:
        from prometheus_flask_exporter import PrometheusMetrics

        registry = CollectorRegistry()
        PrometheusMetrics(app, path=None, registry=registry, group_by="url_rule")

    metrics_blp = Blueprint("metrics", __name__, description="Prometheus metrics")

    @metrics_blp.route(settings.metrics.path)
    class Metrics(MethodView):
        @rate_exempt
        @metrics_blp.response(200, description="Prometheus text exposition",
                              content_type=CONTENT_TYPE_LATEST)
        @metrics_blp.alt_response(403, description="source address is not loopback or private")
        def get(self) -> Response:
            """Prometheus metrics; only loopback and private source addresses are served."""
            if not metrics.may_scrape(client_ip()):
                raise Forbidden("metrics are served to loopback and private addresses only")
            body = generate_latest(metrics.registry())
            if registry is not None:
                body = generate_latest(registry) + body
            # content_type, not mimetype: Flask would append a second charset to a text/* mimetype,
            # and Prometheus 3 fails a scrape whose Content-Type repeats a parameter.
            return Response(body, content_type=CONTENT_TYPE_LATEST)

    api.register_blueprint(metrics_blp)
