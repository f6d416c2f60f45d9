"""Fixtures of the web tests that need a real server: the app on Werkzeug's threaded server (as
`burnbox serve` runs it) and mail flowing into it over real SMTP through worker threads."""

import contextlib
import dataclasses
import smtplib
import threading
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
import requests
import websocket
from sqlalchemy import select
from werkzeug.serving import make_server

import tasks
from mailin.server import MailinThread
from models.platform.audit import AuditEntry
from tasks import start_worker
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.tenancy import world_caller
from web import create_app, sockets


@dataclasses.dataclass
class Live:
    base: str
    runtime: object

    def ws_url(self, path, ticket):
        return f"{self.base.replace('http', 'ws', 1)}/api/v1/ws/{path}?ticket={ticket}"

    def ticket(self, headers):
        response = requests.post(f"{self.base}/api/v1/ws/ticket", headers=headers, timeout=5)
        assert response.status_code == 200, response.text
        return response.json()["ticket"]

    def connect(self, path, headers, **options):
        return websocket.create_connection(self.ws_url(path, self.ticket(headers)), timeout=5,
                                           **options)

    def refusal(self, path, ticket, **options):
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            websocket.create_connection(self.ws_url(path, ticket), timeout=5, **options)
        return refused.value.status_code


def audit_entries(runtime, action: str) -> list[AuditEntry]:
    """Every audit entry with `action`, in no particular order."""
    with runtime.db.session() as session:
        return list(session.scalars(select(AuditEntry).where(AuditEntry.action == action)))


@contextlib.contextmanager
def serving(runtime):
    """The app of `runtime` on a real threaded server (as `burnbox serve` runs it); its base
    URL."""
    app = create_app(runtime=runtime)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        app.extensions[sockets.EXTENSION].stop()


@dataclasses.dataclass
class MailService:
    """A whole mail service in this process: the app on a real server, SMTP and worker
    threads, and an inbox of the lead of a fresh mail world."""

    base: str
    headers: dict[str, str]
    inbox: Any
    smtp: tuple[str, int]
    world: Any


@contextlib.contextmanager
def mail_service(runtime) -> Iterator[MailService]:
    """`MailService` over `runtime` (a committed one, with the settings the test needs): the
    broker bound to it, mailin's thread and two worker threads, stopped afterwards."""
    tasks.setup_broker(runtime)
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world)
    with serving(runtime) as base:
        server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
        running = start_worker(dramatiq.get_broker(), threads=2)
        try:
            yield MailService(base, world.headers["lead"], inbox, server.address, world)
        finally:
            running.stop()
            server.stop()


@pytest.fixture
def other_process(runtime):
    """A second web process: the test's database and store, per-process caches of its own, as
    two gunicorn workers or two hosts have (a FlaskClient)."""
    app = create_app(runtime=dataclasses.replace(runtime, caches={}))
    app.config["TESTING"] = True
    return app.test_client()


@pytest.fixture
def live(committed_runtime):
    """The app on a real threaded server, tickets valid 2 s, one extra allowed origin."""
    runtime = dataclasses.replace(committed_runtime, settings=committed_runtime.settings.replace(
        **{"websockets.ticket_ttl": "2s", "http.allowed_origins": "https://app.example"}))
    with serving(runtime) as base:
        yield Live(base, runtime)


@dataclasses.dataclass
class Delivering:
    world: object
    inbox: object
    smtp: tuple[str, int]

    def send(self, subject, *, sender="Alice <alice@sender.example>", to=None):
        """Send one message over SMTP to `to` (default: the fixture's inbox address)."""
        address = to or self.inbox.full_address
        with smtplib.SMTP(*self.smtp, timeout=10) as client:
            client.sendmail("shop@sender.example", [address],
                            message(address, subject=subject, sender=sender))


@pytest.fixture
def delivering(live):
    """Mail flowing on the live runtime: an inbox created by the team member, the SMTP server
    and two worker threads doing the fan-out."""
    with live.runtime.db.transaction() as session:
        world = make_mail_world(session, live.runtime.settings)
        # Before the worker starts: the domain check it would run first marks the test domain
        # (which has no DNS records) failed, and an unverified domain takes no new inboxes.
        inbox = make_inbox(session, live.runtime.settings, world)
    server = MailinThread(live.runtime, host="127.0.0.1", port=0).start_and_wait()
    running = start_worker(dramatiq.get_broker(), threads=2)
    yield Delivering(world, inbox, server.address)
    running.stop()
    server.stop()


@pytest.fixture
def api(client, mail_world):
    """The API as mail_world's team member (`api(method, path, who=...)`); files whose tests
    call it otherwise define their own."""
    return world_caller(client, mail_world, "team_member")


@pytest.fixture
def inbox(runtime, mail_world):
    """An inbox of mail_world's team, made by its lead, named `{inbox}` in world paths."""
    with runtime.db.transaction() as session:
        made = make_inbox(session, runtime.settings, mail_world, role="lead")
    mail_world.ids["inbox"] = made.id
    return made
