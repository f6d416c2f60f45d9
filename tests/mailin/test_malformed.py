"""Malformed mail through real SMTP: the parser's corpus and its hypothesis strategies
(tests/models/mail/ingest/test_parse.py) sent to a running server, which never crashes and never
loses a message: every one it acknowledges is stored, raw bytes as sent."""

import re
import smtplib

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from sqlalchemy import select

from mailin.server import MailinThread
from models.mail.entities import Email
from tests.factories.mail import make_inbox, make_mail_world
from tests.models.mail.ingest.test_parse import CORPUS, mime_trees, mutated_corpus
from tests.properties import property_settings

LINE = 998  # RFC 5321: the longest line SMTP carries, without its CRLF


@pytest.fixture
def mail(committed_runtime):
    """A committed inbox and an SMTP server, shared by every example of a test."""
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world, ttl="1h")
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    yield committed_runtime, server, inbox.full_address
    server.stop()


def smtp_safe(raw: bytes) -> bytes:
    """What SMTP can carry of `raw`: every line end as CRLF, lines cut at 998 octets. (The
    dot-stuffing of the transfer is undone by the server, so it does not change the bytes.)"""
    lines = []
    for line in re.split(rb"\r\n|\r|\n", raw):
        lines += [line[start:start + LINE] for start in range(0, len(line), LINE)] or [b""]
    return b"\r\n".join(lines) + b"\r\n"


def _emails(runtime):
    with runtime.db.session() as session:
        return {email.id: email.raw_key for email in session.scalars(select(Email))}


def deliver_and_check(runtime, server, address, raw):
    """Send `raw` (made SMTP-safe); it must be acknowledged and stored byte for byte."""
    payload = smtp_safe(raw)
    before = _emails(runtime)
    with smtplib.SMTP(*server.address, timeout=30) as smtp:
        assert smtp.sendmail("fuzz@sender.example", [address], payload) == {}
    after = _emails(runtime)
    [new] = set(after) - set(before)
    assert runtime.storage.get(after[new]) == payload


def test_the_parsers_corpus_is_acknowledged_and_stored_as_sent(mail):
    runtime, server, address = mail
    for raw in CORPUS:
        deliver_and_check(runtime, server, address, raw)


FUZZ = property_settings(60, derandomize=True,
                         suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                HealthCheck.too_slow])


@FUZZ
@given(raw=st.one_of(mutated_corpus(), mime_trees, st.binary(max_size=2048)))
def test_malformed_mail_never_crashes_the_server_and_is_never_lost(mail, raw):
    runtime, server, address = mail
    deliver_and_check(runtime, server, address, raw)
