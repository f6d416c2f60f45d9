"""Foundation costs: the app's request pipeline against a bare Flask app, and a commit that
records an outbox event against the same commit without one."""

from __future__ import annotations

import tempfile
import uuid

from flask import Flask

import tasks
from bench.harness import Comparison, compare
from burnbox.settings import load_settings
from models.events import Event, record_event
from models.runtime import Runtime
from models.schema import upgrade
from web import create_app


def run() -> list[Comparison]:
    """Run the foundation benchmarks on the embedded backend."""
    settings = load_settings(environ={}, overrides={
        "data_dir": tempfile.mkdtemp(prefix="burnbox-bench-"), "log.level": "WARNING"})
    runtime = Runtime.from_settings(settings)
    upgrade(runtime.db.engine)
    tasks.setup_broker(runtime)
    client = create_app(runtime=runtime).test_client()

    bare = Flask("bare")
    bare.get("/healthz")(lambda: {"status": "ok"})
    bare_client = bare.test_client()

    def commit_with_event() -> None:
        with runtime.db.transaction() as session:
            record_event(session, "bench", {"n": 1})

    def commit_without_event() -> None:
        with runtime.db.transaction() as session:
            session.add(Event(id=uuid.uuid4(), name="bench", data={"n": 1}))

    return [
        compare("GET /healthz: burnbox app vs bare Flask", lambda: client.get("/healthz"),
                lambda: bare_client.get("/healthz")),
        compare("commit + outbox enqueue vs plain commit (SQLite)", commit_with_event,
                commit_without_event),
    ]
