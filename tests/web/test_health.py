"""Liveness, readiness with named dependency checks, and the metrics endpoint's access rule."""

from prometheus_client import CONTENT_TYPE_LATEST

from burnbox.kv import RedisStore
from burnbox.storage import FilesystemStorage

PUBLIC = {"REMOTE_ADDR": "8.8.8.8"}
METRICS_ON = {"metrics.enabled": True}


def test_liveness_answers_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}


def test_readiness_names_every_dependency_it_checked(client, runtime):
    expected = {"database": "ok", "storage": "ok"}
    if runtime.settings.redis.url:
        expected["redis"] = "ok"
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok", "checks": expected}


def test_readiness_is_503_naming_unwritable_storage(make_app, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder")
    app = make_app(storage=FilesystemStorage(blocker / "objects"))
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    assert body["checks"]["storage"].startswith("unavailable")
    assert body["checks"]["database"] == "ok"


def test_readiness_is_503_naming_an_unreachable_redis(make_app):
    closed = "redis://127.0.0.1:1/0"
    app = make_app(store=RedisStore(closed), **{"redis.url": closed})
    response = app.test_client().get("/readyz")
    assert response.status_code == 503
    checks = response.get_json()["checks"]
    assert checks["redis"].startswith("unavailable")
    assert checks["database"] == "ok"
    assert closed not in response.get_data(as_text=True)


def test_metrics_are_not_served_when_disabled(client):
    assert client.get("/metrics").status_code == 404


def test_metrics_are_served_as_prometheus_text_to_loopback(make_app):
    client = make_app(**METRICS_ON).test_client()
    client.get("/healthz")
    response = client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == CONTENT_TYPE_LATEST
    text = response.get_data(as_text=True)
    assert "# TYPE flask_http_request_duration_seconds histogram" in text
    assert 'url_rule="/healthz"' in text


def test_metrics_are_served_to_private_addresses(make_app):
    client = make_app(**METRICS_ON).test_client()
    for address in ("10.1.2.3", "192.168.0.7", "::1", "fd00::5"):
        response = client.get("/metrics", environ_base={"REMOTE_ADDR": address})
        assert response.status_code == 200, address


def test_metrics_are_forbidden_to_a_public_address(make_app):
    response = make_app(**METRICS_ON).test_client().get("/metrics", environ_base=PUBLIC)
    assert response.status_code == 403
    assert response.get_json()["code"] == "forbidden"


def test_metrics_are_forbidden_to_a_peer_of_unknown_address(make_app):
    response = make_app(**METRICS_ON).test_client().get("/metrics",
                                                        environ_base={"REMOTE_ADDR": ""})
    assert response.status_code == 403


def test_a_spoofed_forwarded_for_from_an_untrusted_peer_is_ignored(make_app):
    client = make_app(**METRICS_ON, **{"http.trusted_proxies": ("203.0.113.0/24",)}).test_client()
    response = client.get("/metrics", environ_base=PUBLIC,
                          headers={"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1"})
    assert response.status_code == 403


def test_a_forwarded_for_from_a_trusted_proxy_is_believed(make_app):
    # The proxy has a public address, so only a believed header can make the client internal.
    client = make_app(**METRICS_ON, **{"http.trusted_proxies": ("8.8.4.4",)}).test_client()
    proxy = {"REMOTE_ADDR": "8.8.4.4"}
    inside = client.get("/metrics", environ_base=proxy, headers={"X-Forwarded-For": "10.0.0.7"})
    assert inside.status_code == 200
    outside = client.get("/metrics", environ_base=proxy, headers={"X-Forwarded-For": "1.1.1.1"})
    assert outside.status_code == 403


def test_the_metrics_path_follows_the_setting(make_app):
    client = make_app(**METRICS_ON, **{"metrics.path": "/internal/prom"}).test_client()
    assert client.get("/internal/prom").status_code == 200
    assert client.get("/metrics").status_code == 404
    assert "/internal/prom" in client.get("/api/v1/docs/openapi.json").get_json()["paths"]
