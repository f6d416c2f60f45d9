"""The outbound guard (burnbox.outbound_guard) as the database adapter feeds it: every outbound
adapter refuses to open a connection inside a write transaction of the test environment, and
opens it outside one or inside a read-only session; elsewhere it logs the violation once."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import Engine

from burnbox import http_client, mailer
from burnbox.dns import Resolver
from burnbox.netguard import resolve_target
from burnbox.outbound_guard import OutboundInTransaction
from burnbox.settings import Settings
from models.db import Database
from models.identity.users import User
from models.mail.checks.link_check import Outbound, check_links
from models.runtime import Runtime
from tests.dns_server import ZoneServer
from tests.receiver import Receiver
from tests.smtp_sink import SmtpSink


@pytest.fixture
def smtp_sink() -> Iterator[SmtpSink]:
    sink = SmtpSink().start()
    yield sink
    sink.stop()


@pytest.fixture(params=["joined", "committing"])
def database(request: pytest.FixtureRequest) -> Database:
    """The test's database both ways tests open it: sessions joined to a rolled-back outer
    transaction through savepoints, and sessions that really begin and commit."""
    name = "runtime" if request.param == "joined" else "committed_runtime"
    rt: Runtime = request.getfixturevalue(name)
    return rt.db


@pytest.fixture
def adapters(receiver: Receiver, dns_server: ZoneServer,
             smtp_sink: SmtpSink) -> dict[str, Callable[[], object]]:
    """One call per outbound adapter, each to a real local server."""
    dns_server.publish("guard.test. 60 IN TXT \"hello\"")
    relay = mailer.Relay("127.0.0.1", smtp_sink.port, starttls=False)

    def smtp() -> None:
        with mailer.connect(relay, timeout=5):
            pass

    return {
        "http probe": lambda: http_client.probe("HEAD", receiver.url, timeout=5,
                                                allow_private=True),
        "http post": lambda: http_client.post(receiver.url, b"{}", {}, timeout=5,
                                              allow_private=True),
        "http get": lambda: http_client.get(receiver.url, timeout=5, allow_private=True,
                                            limit=100),
        "dns": lambda: Resolver([dns_server.nameserver]).txt("guard.test"),
        "address resolution": lambda: resolve_target("localhost", 80, allow_private=True),
        "smtp relay": smtp,
        "link check threads": lambda: check_links([receiver.url],
                                                  Outbound(allow_private=True)),
    }


ADAPTERS = ["http probe", "http post", "http get", "dns", "address resolution", "smtp relay",
            "link check threads"]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_each_adapter_refuses_the_network_inside_a_write_transaction(
        database: Database, adapters: dict[str, Callable[[], object]], adapter: str) -> None:
    session = database.session()
    try:
        session.execute(select(User.id).limit(1))  # the transaction begins with a statement
        with pytest.raises(OutboundInTransaction, match="while a write transaction is open"):
            adapters[adapter]()
    finally:
        session.rollback()
        session.close()


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_each_adapter_connects_outside_a_transaction_and_inside_a_read_only_one(
        database: Database, adapters: dict[str, Callable[[], object]], adapter: str) -> None:
    with database.transaction() as session:
        session.execute(select(User.id).limit(1))
    adapters[adapter]()  # the transaction above has ended
    session = database.session()
    session.execute(select(User.id).limit(1))
    session.commit()  # ended by its commit, the session still open
    adapters[adapter]()
    session.close()
    with database.session(read_only=True) as reading:
        reading.execute(select(User.id).limit(1))
        adapters[adapter]()


def test_a_transaction_ended_for_slow_work_lets_it_run_then_the_write_begins_another(
        database: Database, adapters: dict[str, Callable[[], object]]) -> None:
    session = database.session()
    try:
        session.execute(select(User.id).limit(1))
        session.rollback()  # what models.db.end_read_only_transaction does
        adapters["http probe"]()
        session.execute(text("SELECT 1"))
        with pytest.raises(OutboundInTransaction):
            adapters["http probe"]()
    finally:
        session.rollback()
        session.close()


def test_outside_the_test_environment_a_violation_is_logged_once_and_the_call_goes_on(
        settings: Settings, engine: Engine, receiver: Receiver,
        caplog: pytest.LogCaptureFixture) -> None:
    database = Database(settings.replace(env="development"), engine=engine)
    caplog.set_level(logging.WARNING, logger="burnbox.outbound_guard")
    with database.session() as session:
        session.execute(select(User.id).limit(1))
        first = http_client.probe("HEAD", receiver.url, timeout=5, allow_private=True)
        second = http_client.probe("HEAD", receiver.url, timeout=5, allow_private=True)
        session.rollback()
    assert first.status == second.status == 200
    warnings = [record.getMessage() for record in caplog.records
                if record.name == "burnbox.outbound_guard"]
    assert warnings == ["HTTP request to 127.0.0.1 while a write transaction is open: end the "
                        "transaction before waiting on the network"]


def test_a_session_dropped_with_its_transaction_open_stops_counting(
        runtime: Runtime, adapters: dict[str, Callable[[], object]]) -> None:
    # Dropped without a rollback or close, a session never reports its transaction's end: the
    # guard asks whether it still exists, or its thread would refuse the network for good.
    session = runtime.db.session()
    session.execute(select(User.id).limit(1))
    del session
    gc.collect()
    adapters["http probe"]()
