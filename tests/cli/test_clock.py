"""`burnbox clock` waits for the schema before sending any job: under honcho it starts beside
`release`, and jobs sent before the migration reached the worker as missing-table tracebacks."""

import threading

from sqlalchemy import create_engine

from burnbox.cli.ready import wait_for_schema
from models.schema import upgrade


def test_the_clock_waits_until_the_database_is_migrated(tmp_path, caplog):
    engine = create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    stop, answers = threading.Event(), []
    waiter = threading.Thread(target=lambda: answers.append(
        wait_for_schema(engine, stop, interval=0.05)))
    waiter.start()
    try:
        waiter.join(0.5)
        assert waiter.is_alive()  # nothing migrated: still waiting
        upgrade(engine)
        waiter.join(10)
        assert answers == [True]
    finally:
        stop.set()
        waiter.join(10)
        engine.dispose()
    waits = [r.message for r in caplog.records if "waiting for the database schema" in r.message]
    assert len(waits) == 1  # said once, not once a poll
    assert "burnbox release" in waits[0]


def test_a_clock_stopped_while_it_waits_sends_nothing(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    stop = threading.Event()
    stop.set()
    assert wait_for_schema(engine, stop) is False
    engine.dispose()


def test_an_unreachable_database_is_waited_out_too(tmp_path):
    engine = create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert wait_for_schema(engine, stop, interval=0.05) is False
