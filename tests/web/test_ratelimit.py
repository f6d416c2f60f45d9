"""Rate limiting through real requests: headers, 429, buckets, spoofing, store outages."""

import time
import uuid

import pytest
from flask.views import MethodView

from burnbox.kv import RedisStore
from burnbox.security import encode_access_token
from burnbox.settings import SettingsError
from tests.metrics_scrape import counted
from web import create_app
from web.api import Blueprint
from web.ratelimit import Look, RateLimiter, rate_limited

LOW = {"rate_limits.anonymous": "3/minute", "rate_limits.auth": "2/minute",
       "rate_limits.authenticated": "4/minute"}


def _app(runtime, **changes):
    runtime.settings = runtime.settings.replace(**{**LOW, **changes})
    app = create_app(runtime=runtime)
    blp = Blueprint("limited", __name__, url_prefix="/api/v1/limited")

    @blp.route("/login")
    class Login(MethodView):
        @rate_limited("auth")
        @blp.response(200)
        def post(self):
            return {"ok": True}

    app.extensions["flask-smorest"]["apis"][""]["ext_obj"].register_blueprint(blp)
    return app


def _headers(response):
    return tuple(int(response.headers[f"X-RateLimit-{name}"])
                 for name in ("Limit", "Remaining", "Reset"))


def test_every_response_carries_the_three_headers_until_the_bucket_is_exhausted(runtime):
    client = _app(runtime).test_client()
    seen = []
    for _ in range(3):
        response = client.get("/api/v1/nothing-here")
        assert response.status_code == 404
        limit, remaining, reset = _headers(response)
        seen.append(remaining)
        assert limit == 3
        assert time.time() < reset <= time.time() + 61
    assert seen == [2, 1, 0]
    refused = client.get("/api/v1/nothing-here")
    assert refused.status_code == 429
    assert refused.get_json() == {"error": "rate limit exceeded", "code": "rate_limited"}
    assert _headers(refused)[:2] == (3, 0)
    assert 1 <= int(refused.headers["Retry-After"]) <= 61


def test_a_spoofed_forwarded_for_from_an_untrusted_peer_changes_nothing(runtime):
    client = _app(runtime).test_client()
    for n in range(3):
        client.get("/api/v1/x", headers={"X-Forwarded-For": f"203.0.113.{n}"})
    response = client.get("/api/v1/x", headers={"X-Forwarded-For": "198.51.100.7"})
    assert response.status_code == 429


def test_forwarded_for_from_a_trusted_proxy_gives_each_client_its_own_bucket(runtime):
    client = _app(runtime, **{"http.trusted_proxies": ("127.0.0.1",)}).test_client()
    for _ in range(3):
        client.get("/api/v1/x", headers={"X-Forwarded-For": "203.0.113.1"})
    assert client.get("/api/v1/x", headers={"X-Forwarded-For": "203.0.113.1"}).status_code == 429
    other = client.get("/api/v1/x", headers={"X-Forwarded-For": "203.0.113.2"})
    assert other.status_code == 404
    assert _headers(other)[1] == 2


def test_auth_entry_points_have_their_own_stricter_bucket(runtime):
    client = _app(runtime).test_client()
    refused = counted("burnbox_rate_limit_refusals_total", bucket="auth")
    assert [client.post("/api/v1/limited/login").status_code for _ in range(3)] == [200, 200, 429]
    assert _headers(client.get("/api/v1/x"))[:2] == (3, 2)
    assert counted("burnbox_rate_limit_refusals_total", bucket="auth") == refused + 1


def test_a_valid_token_counts_per_user_and_a_forged_one_counts_per_ip(runtime):
    client = _app(runtime).test_client()
    secret = runtime.settings.auth.jwt_secret
    token = encode_access_token(secret, user_id=uuid.uuid4(), session_id=uuid.uuid4(),
                                ttl=runtime.settings.auth.access_token_ttl)
    response = client.get("/api/v1/x", headers={"Authorization": f"Bearer {token}"})
    assert _headers(response)[:2] == (4, 3)
    forged = client.get("/api/v1/x", headers={"Authorization": "Bearer not.a.jwt"})
    assert _headers(forged)[:2] == (3, 2)


def test_health_probes_answer_after_the_client_overspent_its_anonymous_budget(runtime):
    # The exempt routes only look at the anonymous window, which refused requests push past
    # its limit: looking must never refuse.
    client = _app(runtime).test_client()
    statuses = [client.get("/api/v1/nothing-here").status_code for _ in range(5)]
    assert statuses == [404, 404, 404, 429, 429]
    probe = client.get("/healthz")
    assert probe.status_code == 200
    assert _headers(probe)[:2] == (3, 0)


def test_health_probes_are_never_limited(runtime):
    client = _app(runtime).test_client()
    statuses = {client.get("/healthz").status_code for _ in range(10)}
    assert statuses == {200}


@pytest.fixture
def unreachable_redis_runtime(runtime):
    runtime.settings = runtime.settings.replace(**{"redis.url": "redis://127.0.0.1:1/0"})
    runtime.store = RedisStore("redis://127.0.0.1:1/0")
    return runtime


def test_when_the_store_is_down_general_traffic_passes_uncounted(unreachable_redis_runtime):
    client = _app(unreachable_redis_runtime).test_client()
    responses = [client.get("/api/v1/x") for _ in range(5)]
    assert {response.status_code for response in responses} == {404}
    assert "X-RateLimit-Limit" not in responses[0].headers


def test_when_the_store_is_down_login_works_but_stays_limited_in_process_memory(
        unreachable_redis_runtime):
    client = _app(unreachable_redis_runtime).test_client()
    statuses = [client.post("/api/v1/limited/login").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_random_api_keys_spend_the_client_ip_budget(runtime):
    client = _app(runtime).test_client()
    for _ in range(3):
        answer = client.get("/api/v1/auth/me",
                            headers={"Authorization": f"Bearer bb_{uuid.uuid4().hex * 2}"})
        assert answer.status_code == 401
    refused = counted("burnbox_rate_limit_refusals_total", bucket="anonymous")
    another_key = client.get("/api/v1/auth/me",
                             headers={"Authorization": f"Bearer bb_{uuid.uuid4().hex * 2}"})
    assert another_key.status_code == 429
    assert client.get("/api/v1/x").status_code == 429
    assert counted("burnbox_rate_limit_refusals_total", bucket="anonymous") == refused + 2


def test_a_malformed_rate_is_refused_at_start_naming_the_key(runtime):
    runtime.settings = runtime.settings.replace(**{"rate_limits.anonymous": "lots"})
    with pytest.raises(SettingsError, match=r"rate_limits\.anonymous"):
        create_app(runtime=runtime)


def test_a_spent_window_only_looked_at_refuses_before_the_windows_after_it_are_counted(
        runtime):
    # Redis answers every window of a request in one round trip (a key's own count and its
    # client's anonymous budget); one that refuses must not count the key all the same.
    limiter = RateLimiter(runtime.settings.replace(**LOW))
    ip, key = f"ip:{uuid.uuid4()}", f"key:{uuid.uuid4()}"
    spent, counted = limiter.look([Look("anonymous", ip, count=False), Look("authenticated", key)])
    assert (spent.remaining, counted.remaining, counted.allowed) == (3, 3, True)
    for _ in range(3):
        limiter.hit("anonymous", ip)
    refused = limiter.look([Look("anonymous", ip, count=False), Look("authenticated", key)])
    assert [(window.limit, window.remaining) for window in refused] == [(3, 0)]
    assert limiter.peek("authenticated", key).remaining == 3, "the refused request not counted"
    assert time.time() < refused[0].reset <= time.time() + 61
