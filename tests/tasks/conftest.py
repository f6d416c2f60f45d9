"""Fixtures for actor tests: in-process worker threads on the backend's broker, a fan-out table
of event handlers that record their calls, and waiting helpers."""

import threading
import time

import dramatiq
import pytest
from dramatiq.middleware import CurrentMessage

from tasks import start_worker
from tasks.events import fanning_out_to


def wait_until(predicate, timeout=10.0, interval=0.02):
    """Poll `predicate` until it is true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(interval)


def drain(broker, *queues):
    """Wait until every message on `queues` (the StubBroker or Redis ones) has been processed."""
    for queue in queues:
        broker.join(queue, timeout=10_000)


@pytest.fixture
def broker(committed_runtime):
    """The broker `committed_runtime` was set up with: StubBroker on SQLite, Redis on PostgreSQL."""
    return dramatiq.get_broker()


@pytest.fixture
def worker(broker):
    """Two worker threads consuming from `broker` for the length of the test."""
    running = start_worker(broker, threads=2)
    yield running
    running.stop()


class Recorder:
    """An event handler that notes the id of every event it was called for, with the broker
    message, and the run of events of each call."""

    def __init__(self):
        self.calls = []
        self.messages = []
        self.runs = []
        self._lock = threading.Lock()

    def __call__(self, session, events):
        message = CurrentMessage.get_current_message()
        with self._lock:
            self.runs.append([event.id for event in events])
            for event in events:
                self.calls.append(event.id)
                self.messages.append(message)

    def count(self, event_id):
        with self._lock:
            return self.calls.count(event_id)


@pytest.fixture
def handle():
    """Dispatch with a fan-out table of the test's own for the length of the test (so the real
    handlers do not run): `recorder = handle("name", ...)` adds a new Recorder for those event
    names and returns it; `handle("name", handler=fn)` adds `fn` instead."""
    table = {}

    def register(*names, handler=None):
        handler = handler or Recorder()
        for name in names:
            table[name] = (*table.get(name, ()), handler)
        return handler

    with fanning_out_to(table):
        yield register
