"""Fixtures for both backends.

Embedded (default): SQLite file + in-process store + StubBroker. PostgreSQL + Redis when
BURNBOX_TEST_DATABASE_URL and BURNBOX_TEST_REDIS_URL are set. The schema is migrated once per
session (per xdist worker, each with its own database); every test runs inside a transaction that
is rolled back (`runtime`), except tests that need real commits across threads or processes
(`committed_runtime`), which clean up after themselves.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from flask import Flask
from random_order.config import Config as RandomOrderConfig
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

import models
import tasks
from burnbox.kv import KeyValueStore, MemoryStore, RedisStore, StoreUnavailable
from burnbox.settings import Settings, load_settings
from burnbox.storage import FilesystemStorage, ObjectStorage
from models.db import Database, make_engine
from models.identity.users import User
from models.runtime import Runtime
from models.schema import upgrade
from tests.factories.identity import make_password_user
from tests.factories.mail import MailWorld, make_mail_world
from tests.factories.tenancy import OwnedTeam, World, make_owned_team, make_world
from tests.properties import load_profile
from web import context as web_context
from web import create_app, sockets

# The loopback DNS server, HTTP receiver and SpamAssassin daemon fixtures.
pytest_plugins = ["tests.dns_server", "tests.receiver", "tests.spamd_server"]

# The hypothesis profile: no per-example deadline; HYPOTHESIS_PROFILE=thorough for ten times the
# examples with fresh seeds (tests/properties.py).
load_profile()

# Rows the migrations seed (permissions and the grants of the built-in roles): tests that
# commit must not empty these tables, or every later test of the session loses its roles.
SEEDED_TABLES = frozenset({"permissions", "roles", "role_permissions"})



def _this_workers_redis(url: str) -> str:
    """`url` with its Redis database moved down by this pytest-xdist worker's number (gw0 keeps
    it, gw1 takes the one below, ...), so parallel workers never flush each other's keys; the
    URL unchanged outside xdist. Redis numbers its databases 0-15."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not url or not worker:
        return url
    parts = urlsplit(url)
    database = int(parts.path.strip("/") or 0) - int(worker.removeprefix("gw"))
    return urlunsplit(parts._replace(path=f"/{database % 16}"))


PG_URL = os.environ.get("BURNBOX_TEST_DATABASE_URL", "")
REDIS_URL = _this_workers_redis(os.environ.get("BURNBOX_TEST_REDIS_URL", ""))
# The Redis that tests needing one use on either backend (on SQLite, db 15 of a local Redis).
TEST_REDIS_URL = REDIS_URL or _this_workers_redis("redis://127.0.0.1:6379/15")
BACKEND = "postgres" if PG_URL else "sqlite"


def pytest_report_header() -> str:
    return f"burnbox backend: {BACKEND}" + (f" ({PG_URL}, {REDIS_URL})" if PG_URL else "")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    """Under `--random-order`, the seed of the order, last: `make test` runs pytest with -q,
    which hides the header pytest-random-order prints it in, and a failing order is only
    worth finding if it can be repeated."""
    plugin = RandomOrderConfig(config)
    if plugin.is_enabled:
        terminalreporter.write_line(f"random order: --random-order-bucket={plugin.bucket_type} "
                                    f"--random-order-seed={plugin.seed}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip tests marked `postgres` unless the PostgreSQL + Redis backend is under test."""
    if PG_URL:
        return
    skip = pytest.mark.skip(reason="needs BURNBOX_TEST_DATABASE_URL (PostgreSQL + Redis backend)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


def _worker_database(worker: str) -> str:
    """The PostgreSQL database of this test session: the URL's own, or one per xdist worker;
    created when missing (so separate checkouts can each name a database of their own)."""
    url = make_url(PG_URL)
    name = f"{url.database}_{worker}" if worker != "master" else url.database
    admin = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        exists = connection.scalar(text("SELECT 1 FROM pg_database WHERE datname = :name"),
                                   {"name": name})
        if not exists:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(params=["memory", "redis"])
def any_store(request: pytest.FixtureRequest) -> Iterator[MemoryStore | RedisStore]:
    """Each KeyValueStore in turn, whatever the backend under test: a fresh MemoryStore, then a
    RedisStore on BURNBOX_TEST_REDIS_URL (default db 15 of a local Redis), skipped only when no
    Redis answers there. Tests must use keys of their own (they share the Redis database)."""
    if request.param == "memory":
        yield MemoryStore()
        return
    store = RedisStore(TEST_REDIS_URL)
    try:
        store.ping()
    except StoreUnavailable:
        pytest.skip("no Redis reachable for the RedisStore half of this test")
    yield store


@pytest.fixture(scope="session")
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="burnbox-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def settings(data_dir: Path, worker_id: str) -> Settings:
    """Settings of the backend under test, as a deployment would load them."""
    overrides = {
        "env": "test",
        "data_dir": str(data_dir),
        "log.format": "text",
        "auth.jwt_secret": "test-secret-" + "x" * 40,
        "webhooks.allow_private_targets": True,
        # The cheapest argon2id parameters: tests hash hundreds of passwords.
        "auth.argon2_time_cost": 1,
        "auth.argon2_memory_kib": 1024,
        # Limits far above what any test sends; tests of rate limiting set their own.
        **{f"rate_limits.{bucket}": "100000/minute" for bucket in
           ("authenticated", "anonymous", "auth", "refresh", "forgot_password", "demo")},
        "auth.argon2_parallelism": 1,
    }
    if PG_URL:
        overrides["database.url"] = _worker_database(worker_id)
        overrides["redis.url"] = TEST_REDIS_URL
    return load_settings(environ={}, overrides=overrides)


@pytest.fixture(scope="session")
def engine(settings: Settings) -> Iterator[Engine]:
    """The test database, emptied and migrated to head once per session."""
    engine = make_engine(settings)
    if engine.dialect.name == "postgresql":
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    upgrade(engine)
    yield engine
    engine.dispose()


def _store(settings: Settings) -> MemoryStore | RedisStore:
    if not settings.redis.url:
        return MemoryStore()
    store = RedisStore(settings.redis.url)
    store._client.flushdb()
    return store


@pytest.fixture
def runtime(settings: Settings, engine: Engine, tmp_path: Path) -> Iterator[Runtime]:
    """A runtime whose every session joins one outer transaction that is rolled back afterwards."""
    connection = engine.connect()
    outer = connection.begin()
    db = Database(settings, engine=engine)
    db.bind_to(connection)
    rt = Runtime(settings=settings, db=db, store=_store(settings),
                 storage=FilesystemStorage(tmp_path / "objects"))
    tasks.setup_broker(rt)
    yield rt
    outer.rollback()
    connection.close()


@pytest.fixture
def committed_runtime(settings: Settings, engine: Engine, tmp_path: Path) -> Iterator[Runtime]:
    """A runtime that really commits (worker threads, processes); tables are emptied after."""
    db = Database(settings, engine=engine)
    rt = Runtime(settings=settings, db=db, store=_store(settings),
                 storage=FilesystemStorage(tmp_path / "objects"))
    tasks.setup_broker(rt)
    yield rt
    with engine.begin() as connection:
        for table in reversed(models.Base.metadata.sorted_tables):
            if table.name == "roles":  # keep the built-in roles migration 0003 seeds
                connection.execute(table.delete().where(table.c.is_builtin.is_(False)))
            elif table.name not in SEEDED_TABLES:
                connection.execute(table.delete())


@pytest.fixture
def make_app(runtime: Runtime) -> Callable[..., Flask]:
    """Build an app on the test's runtime with dotted settings changed, e.g.
    `make_app(**{"metrics.enabled": True})`; `store=` and `storage=` swap those adapters."""

    def build(store: KeyValueStore | None = None, storage: ObjectStorage | None = None,
              **changes: object) -> Flask:
        rt = dataclasses.replace(runtime, settings=runtime.settings.replace(**changes),
                                 store=store or runtime.store, storage=storage or runtime.storage)
        app = create_app(runtime=rt)
        app.config["TESTING"] = True
        return app

    return build


@pytest.fixture(scope="session")
def shared_app(settings: Settings, engine: Engine, data_dir: Path) -> Flask:
    """The app built once per session: building one costs about half a second (the OpenAPI
    document), and the app holds no per-test state but its runtime, which `app` rebinds."""
    runtime = Runtime(settings=settings, db=Database(settings, engine=engine), store=MemoryStore(),
                      storage=FilesystemStorage(data_dir / "shared-objects"))
    app = create_app(runtime=runtime)
    app.config["TESTING"] = True
    return app


@pytest.fixture
def app(shared_app: Flask, runtime: Runtime) -> Flask:
    """The session's app serving this test's runtime. Tests that change settings, register
    blueprints or swap adapters build their own with `make_app`."""
    shared_app.extensions[web_context.EXTENSION] = runtime
    sockets.init_app(shared_app, runtime.store)
    return shared_app


@pytest.fixture
def client(app):
    return app.test_client()


# Composed fixtures: the factories (tests/factories) building what most tests start from, in the
# test's rolled-back transaction. Tests that commit call the same factories themselves.

@pytest.fixture
def user(runtime: Runtime) -> User:
    """The account the login helpers of tests.identity sign in as (EMAIL, PASSWORD)."""
    with runtime.db.transaction() as session:
        return make_password_user(session, runtime.settings)


@pytest.fixture
def world(runtime: Runtime) -> World:
    """Two orgs with a user in every role, signed in: see factories.tenancy.make_world."""
    with runtime.db.transaction() as session:
        return make_world(session, runtime.settings)


@pytest.fixture
def mail_world(runtime: Runtime) -> MailWorld:
    """Two orgs whose teams each have a verified domain: see factories.mail.make_mail_world."""
    with runtime.db.transaction() as session:
        return make_mail_world(session, runtime.settings)


@pytest.fixture
def owned_team(runtime: Runtime) -> OwnedTeam:
    """A user owning an org with one team: see factories.tenancy.make_owned_team."""
    with runtime.db.transaction() as session:
        return make_owned_team(session, runtime.settings)
