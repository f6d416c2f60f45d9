"""The API-key jobs on worker threads: the cleanup actor removes expired keys (the last state of
the key state table), the usage job writes the counted requests; the clock schedules both."""

from __future__ import annotations

from datetime import timedelta

from burnbox.timeutil import utcnow
from tasks.apikeys import flush_api_key_usage
from tasks.cleanup import cleanup
from tasks.clock import default_jobs
from tests.apikey_helpers import key_auth, make_key, stored
from tests.factories.apikeys import set_expiry
from tests.factories.tenancy import make_world
from tests.tasks.conftest import drain
from web import create_app


def test_the_clock_runs_the_cleanup_and_the_usage_flush_at_their_intervals(settings):
    jobs = {job.name: job for job in default_jobs(settings)}
    assert jobs["cleanup"].actor is cleanup
    assert jobs["cleanup"].every == settings.clock.cleanup_interval == timedelta(minutes=1)
    assert jobs["api_key_usage"].actor is flush_api_key_usage
    assert jobs["api_key_usage"].every == settings.clock.api_key_usage_interval
    assert settings.clock.api_key_usage_interval == timedelta(seconds=10)


def test_the_cleanup_worker_hard_deletes_an_expired_key_and_nothing_else(committed_runtime,
                                                                        broker, worker):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    client = create_app(runtime=runtime).test_client()
    expired, live, revoked = (make_key(client, world, expires_in="1h") for _ in range(3))
    client.delete(world.path("/orgs/{org}/teams/{team}/api-keys/") + revoked["id"],
                  headers=world.headers["lead"])
    with runtime.db.transaction() as session:
        for key in (expired, revoked):
            set_expiry(session, key["id"], utcnow() - timedelta(seconds=1))
    response = client.get(world.path("/orgs/{org}/teams/{team}"),
                          headers=key_auth(expired["raw_key"]))
    assert response.get_json()["error"] == "API key expired"

    cleanup.send()
    drain(broker, "clock")

    assert stored(runtime, expired["id"]) is None
    assert stored(runtime, live["id"]) is not None
    assert stored(runtime, revoked["id"]).revoked_at is not None  # kept for audit
    response = client.get(world.path("/orgs/{org}/teams/{team}"),
                          headers=key_auth(expired["raw_key"]))
    assert response.get_json() == {"error": "invalid API key", "code": "unauthenticated"}


def test_the_usage_job_writes_the_counted_requests_to_the_key(committed_runtime, broker,
                                                              worker):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_world(session, runtime.settings)
    client = create_app(runtime=runtime).test_client()
    created = make_key(client, world)
    for _ in range(12):
        client.get(world.path("/orgs/{org}/teams/{team}"), headers=key_auth(created["raw_key"]))

    flush_api_key_usage.send()
    drain(broker, "clock")

    row = stored(runtime, created["id"])
    assert (row.request_count, row.last_used_ip) == (12, "127.0.0.1")
