"""psycopg's waits yield to the gevent hub in gunicorn's gevent worker: two requests whose
queries PostgreSQL holds back are both inside the database at once, from ONE worker, and the
worker still answers meanwhile.

psycopg picks its wait function when it is imported: its C `wait_c` polls the socket from C,
which gevent cannot switch away from, so a worker would serve one query at a time. It uses a
Python wait on the (patched) `select` when gevent has monkey-patched it first, which gunicorn's
gevent worker does before it loads the app. This test keeps that order honest: a `preload_app`
or an early import of psycopg in gunicorn.conf.py would serialise every worker's queries
(checked: with `PSYCOPG_WAIT_FUNC=wait_c` in its environment the worker fails this test).

The queries are held back with a table lock (the stand-in for a slow query such as
`pg_sleep(1)` that the app has no endpoint for): while the test holds `platform_settings`
locked, each `GET /auth/sso-status` waits inside PostgreSQL, where `pg_stat_activity` shows
it."""

from __future__ import annotations

import os
import signal
import subprocess
import threading

import pytest
import requests
from sqlalchemy import text

from tests.conftest import PG_URL
from tests.processes import BIN, ROOT, free_port, process_env, wait_for_http, wait_until

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not PG_URL, reason="needs the PostgreSQL + Redis backend")]

WAITING = text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
               "AND query LIKE '%FROM platform_settings%' AND pid <> pg_backend_pid()")


@pytest.fixture
def one_worker(settings, engine, tmp_path):
    """`burnbox web` (gunicorn, ONE gevent worker) on the test database; its base URL."""
    port = free_port()
    env = process_env(
        BURNBOX_ENV="test", BURNBOX_DATA_DIR=str(tmp_path),
        BURNBOX_DATABASE__URL=settings.database_url, BURNBOX_REDIS__URL=settings.redis.url,
        BURNBOX_AUTH__JWT_SECRET=settings.auth.jwt_secret, BURNBOX_LOG__LEVEL="WARNING",
        WEB_CONCURRENCY="1")
    web = subprocess.Popen([str(BIN / "burnbox"), "web", "--host", "127.0.0.1", "--port",
                            str(port)], cwd=ROOT, env=env, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(base + "/healthz")
        yield base
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)


def test_two_queries_held_in_the_database_overlap_in_one_gevent_worker(one_worker, engine):
    answers: list[int] = []

    def read() -> None:
        answers.append(requests.get(one_worker + "/api/v1/auth/sso-status", timeout=30)
                       .status_code)

    with (engine.connect() as locker,
          engine.connect().execution_options(isolation_level="AUTOCOMMIT") as observer):
        locker.execute(text("LOCK TABLE platform_settings IN ACCESS EXCLUSIVE MODE"))
        readers = [threading.Thread(target=read) for _ in range(2)]
        for reader in readers:
            reader.start()
        # Both queries wait in PostgreSQL at the same time: the worker sent the second while
        # the first was still waiting, so the first wait yielded to the hub. (The observer
        # autocommits: pg_stat_activity is read once per transaction.)
        wait_until(lambda: observer.execute(WAITING).scalar() == 2, timeout=15)
        # And the worker answers other requests meanwhile.
        assert requests.get(one_worker + "/healthz", timeout=2).status_code == 200
        locker.rollback()
    for reader in readers:
        reader.join(timeout=30)
    assert answers == [200, 200]
