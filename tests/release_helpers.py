"""What the release tests share: settings with a release relay on a loopback SMTP receiver, and
a committed world with one e-mail to release (for tests with worker threads and servers)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import dramatiq

import tasks
from models.runtime import Runtime
from tests.factories.mail import MailWorld, make_email, make_inbox, make_mail_world

ALLOWED = "*@company.example"


def release_settings(settings: Any, port: int, **changes: Any) -> Any:
    """`settings` with a release relay on 127.0.0.1:`port` (no TLS, no wait between attempts)
    and ALLOWED as the operator's bound, `changes` over them."""
    return settings.replace(**{
        "release.relay": "own", "release.relay_host": "127.0.0.1",
        "release.relay_port": port, "release.relay_tls": "none",
        "release.allowed_recipients": (ALLOWED,), "release.retry_delay": "0s",
        "release.from_address": "releases@burnbox.test", **changes})


@dataclasses.dataclass
class CommittedRelease:
    runtime: Runtime
    broker: dramatiq.Broker
    world: MailWorld
    email_id: uuid.UUID


def committed_release(committed_runtime: Runtime, port: int, **changes: Any
                      ) -> CommittedRelease:
    """`committed_runtime` with `release_settings` (the broker set up on it), a committed mail
    world and one e-mail in an inbox its lead made."""
    runtime = dataclasses.replace(committed_runtime, settings=release_settings(
        committed_runtime.settings, port, **changes))
    broker = tasks.setup_broker(runtime)
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world, role="lead")
    email_id = make_email(runtime, inbox.full_address, subject="Your code")
    world.ids["email"] = email_id
    return CommittedRelease(runtime, broker, world, email_id)
