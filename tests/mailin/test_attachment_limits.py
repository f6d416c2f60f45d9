"""The platform's attachment limits at ingest, over real SMTP: a running mailin reads
`attachments_enabled` / `max_attachment_size_mb` from the database within seconds; a message
with a refused attachment is stored without it (the raw message keeps every part)."""

import smtplib
import time
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from mailin.handler import POLICY_REFRESH
from mailin.server import MailinThread
from models.mail.entities import Attachment, Email
from models.mail.ingest.parse import parse_message
from models.mail.ingest.store import MIB, AttachmentPolicy
from models.platform.audit import Origin
from models.platform.settings import update_platform
from tests.factories.mail import make_inbox, make_mail_world, message

SMALL = b"small attachment " * 100
BIG = bytes(range(256)) * (4096 + 16)  # a little over 1 MiB


@pytest.fixture
def mail(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    yield SimpleNamespace(runtime=committed_runtime, server=server, inbox=inbox)
    server.stop()


def _platform(mail, **changes):
    with mail.runtime.db.transaction() as session:
        update_platform(session, mail.runtime.settings, changes, actor_id=None, origin=Origin())


def _send(mail, subject):
    raw = message(mail.inbox.full_address, subject=subject,
                  attachments=(("small.txt", "text/plain", SMALL),
                               ("big.bin", "application/octet-stream", BIG)))
    with smtplib.SMTP(*mail.server.address, timeout=10) as smtp:
        assert smtp.sendmail("a@sender.example", [mail.inbox.full_address], raw) == {}
    with mail.runtime.db.session() as session:
        email = session.scalars(select(Email).where(Email.subject == subject)).one()
        names = sorted(session.scalars(select(Attachment.filename)
                                       .where(Attachment.email_id == email.id)))
        return email.has_attachments, names, mail.runtime.storage.get(email.raw_key), raw


def test_a_running_mailin_applies_the_platforms_attachment_limits_within_seconds(mail):
    assert _send(mail, "default")[:2] == (True, ["big.bin", "small.txt"])

    _platform(mail, max_attachment_size_mb=1)
    time.sleep(POLICY_REFRESH + 0.3)
    has, names, stored_raw, raw = _send(mail, "limited")
    assert (has, names) == (True, ["small.txt"])
    assert stored_raw.replace(b"\r\n", b"\n") == raw.replace(b"\r\n", b"\n")  # kept whole

    _platform(mail, attachments_enabled=False)
    time.sleep(POLICY_REFRESH + 0.3)
    assert _send(mail, "disabled")[:2] == (False, [])


def test_the_policy_leaves_out_refused_parts_and_names_them():
    parsed = parse_message(message("x@y.example", attachments=(
        ("small.txt", "text/plain", SMALL), ("big.bin", "application/octet-stream", BIG))))
    limited = AttachmentPolicy(enabled=True, max_bytes=1 * MIB).apply(parsed)
    assert [a.filename for a in limited.attachments] == ["small.txt"]
    assert limited.dropped_attachments == ("big.bin",)
    assert AttachmentPolicy(enabled=True, max_bytes=0).apply(parsed).attachments == ()
    assert AttachmentPolicy(enabled=False).apply(parsed).dropped_attachments == (
        "small.txt", "big.bin")
    assert AttachmentPolicy().apply(parsed) is parsed
