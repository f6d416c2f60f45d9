"""Capture credentials at a running mailin, over real SMTP: AUTH PLAIN and LOGIN on a plain
connection when allowed, only after STARTTLS otherwise; a logged-in client names anyone and the
message is stored once in the credential's inbox with its envelope recipients; wrong secrets are
535 5.7.8 and, past the limit per IP, 454 and a closed connection; a rotated or revoked secret
fails at the next AUTH; the inbox's chaos rules still apply; a session that did not log in keeps
today's rules."""

import base64
import dataclasses
import logging
import smtplib
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from burnbox.settings import load_settings
from mailin.logins import WINDOW
from mailin.self_signed import make_self_signed
from mailin.server import MailinThread
from models.mail.chaos import set_inbox_rules
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.mail.smtp_credentials import SmtpCredential, issue_credential, revoke_credential
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.factories.tenancy import caller_of
from web import create_app

ANYONE = ["alice@gmail.com", "bob@example.org"]


def _serve(runtime, **changes):
    """A mailin with caches of its own, as another process has: what the test's runtime
    writes reaches it only through the revisions."""
    changed = dataclasses.replace(runtime, settings=runtime.settings.replace(**changes),
                                  caches={})
    return MailinThread(changed, host="127.0.0.1", port=0).start_and_wait()


@pytest.fixture
def mail(committed_runtime, tmp_path):
    """A committed world with an inbox that has credentials, and a server that offers AUTH on
    plain connections."""
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world, alias="app")
        other = make_inbox(session, committed_runtime.settings, world, alias="other")
    mail = SimpleNamespace(runtime=committed_runtime, world=world, inbox=inbox, other=other,
                           tmp_path=tmp_path)
    mail.secret = _issue(mail)
    mail.server = _serve(committed_runtime, **{"smtp.auth_without_tls": "true"})
    yield mail
    mail.server.stop()


def _issue(mail):
    with mail.runtime.db.transaction() as session:
        target = session.get(Inbox, mail.inbox.id)
        return issue_credential(session, caller_of(mail.world.users["owner"]), target).secret


def _smtp(server):
    return smtplib.SMTP(*server.address, timeout=10)


def _login(smtp, mechanism, username, secret):
    smtp.user, smtp.password = username, secret
    return smtp.auth(mechanism, getattr(smtp, f"auth_{mechanism.lower()}"))


def _emails(mail):
    with mail.runtime.db.session() as session:
        return list(session.scalars(select(Email).order_by(Email.received_at)))


@pytest.mark.parametrize("mechanism", ["PLAIN", "LOGIN"])
def test_a_logged_in_client_names_anyone_and_the_message_is_stored_once_with_them(
        mail, mechanism):
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        assert set(smtp.esmtp_features["auth"].split()) == {"PLAIN", "LOGIN"}
        assert _login(smtp, mechanism, mail.inbox.full_address, mail.secret) == (
            235, b"2.7.0 Authentication successful")
        assert smtp.sendmail("app@myapp.example", ANYONE,
                             message(ANYONE[0], subject="Welcome")) == {}
    [stored] = _emails(mail)
    assert (stored.inbox_id, stored.to_address) == (mail.inbox.id, mail.inbox.full_address)
    assert stored.envelope_to == ANYONE and stored.subject == "Welcome"
    app = create_app(runtime=mail.runtime)
    detail = app.test_client().get(f"/api/v1/emails/{stored.id}",
                                   headers=mail.world.headers["team_member"]).get_json()
    assert detail["envelope_to"] == ANYONE
    with mail.runtime.db.session() as session:
        assert session.get(Inbox, mail.inbox.id).email_count == 1
        assert session.get(Inbox, mail.other.id).email_count == 0
        assert session.scalars(select(SmtpCredential)).one().last_used_at is not None


def test_mail_to_the_inbox_address_without_logging_in_has_no_envelope_recipients(mail):
    with _smtp(mail.server) as smtp:
        smtp.sendmail("a@sender.example", [mail.inbox.full_address],
                      message(mail.inbox.full_address))
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:  # today's rules
            smtp.sendmail("a@sender.example", ANYONE, message(ANYONE[0]))
    assert refused.value.recipients["alice@gmail.com"] == (550, b"5.1.2 Domain not served here")
    [stored] = _emails(mail)
    assert stored.envelope_to is None
    with _smtp(mail.server) as smtp:  # not in the middle of a transaction (RFC 4954 4)
        smtp.ehlo()
        smtp.mail("a@sender.example")
        assert _login(smtp, "PLAIN", mail.inbox.full_address, mail.secret) == (
            503, b"5.5.1 AUTH not permitted during a mail transaction")
        assert smtp.rcpt("alice@gmail.com")[0] == 550  # still not logged in


def test_a_wrong_secret_or_username_is_535_5_7_8(mail):
    for username, secret in ((mail.inbox.full_address, "wrong"),
                             ("nobody@" + mail.inbox.full_address.split("@")[1], mail.secret),
                             (mail.other.full_address, mail.secret)):
        with _smtp(mail.server) as smtp:
            smtp.ehlo()
            with pytest.raises(smtplib.SMTPAuthenticationError) as failed:
                _login(smtp, "PLAIN", username, secret)
            assert (failed.value.smtp_code, failed.value.smtp_error) == (
                535, b"5.7.8 Authentication credentials invalid")
            with pytest.raises(smtplib.SMTPRecipientsRefused):  # still not logged in
                smtp.sendmail("a@sender.example", ANYONE[:1], message(ANYONE[0]))
    assert _emails(mail) == []


def _within_one_window() -> None:
    """Wait for the next minute when this one ends within 5 s: failures are counted per
    minute, and a test of the limit must stay within one."""
    if time.time() % 60 > 55:
        time.sleep(61 - time.time() % 60)


def _guess_until_locked_out(smtp, mail, guesses):
    """Log in with `guesses` wrong secrets, each refused 535, then with the right one, which
    must be refused too (the lockout): that refusal."""
    for _ in range(guesses):
        with pytest.raises(smtplib.SMTPAuthenticationError) as failed:
            _login(smtp, "PLAIN", mail.inbox.full_address, "guess")
        assert failed.value.smtp_code == 535
    with pytest.raises(smtplib.SMTPAuthenticationError) as limited:
        _login(smtp, "PLAIN", mail.inbox.full_address, mail.secret)
    return limited.value


def test_after_too_many_failures_from_an_ip_auth_is_454_and_the_connection_closed(mail):
    server = _serve(mail.runtime, **{"smtp.auth_without_tls": "true",
                                     "smtp.auth_failures_per_minute": 3})
    try:
        _within_one_window()
        with _smtp(server) as smtp:
            smtp.ehlo()
            limited = _guess_until_locked_out(smtp, mail, 3)
            assert (limited.smtp_code, limited.smtp_error) == (
                454, b"4.7.0 Too many failed logins, try again later")
            with pytest.raises(smtplib.SMTPServerDisconnected):
                smtp.noop()
        with _smtp(server) as smtp:  # the count is the IP's, not the connection's
            smtp.ehlo()
            with pytest.raises(smtplib.SMTPAuthenticationError) as limited:
                _login(smtp, "LOGIN", mail.inbox.full_address, mail.secret)
            assert limited.value.smtp_code == 454
    finally:
        server.stop()


def _window() -> int:
    """The failure counter's window now (mailin.logins counts per clock minute)."""
    return int(time.time() // WINDOW)


def test_parallel_sessions_get_no_more_guesses_checked_than_the_limit(mail):
    # Each attempt reserves its failure before it is checked: 25 sessions sending AUTH at the
    # same moment (store threads enough to check them all at once) get at most the limit
    # checked (535) and the rest 454. Reading the count, checking, then counting let 13 to
    # 17 of 25 through.
    server = _serve(mail.runtime, **{"smtp.auth_without_tls": "true",
                                     "smtp.store_threads": 25})
    sessions = 25
    ready = threading.Barrier(sessions)
    domain = mail.inbox.full_address.split("@")[1]

    def guess(number: int) -> int:
        with _smtp(server) as smtp:
            smtp.ehlo()
            ready.wait(timeout=30)
            # Unknown usernames: each check reads the database, the widest gap there is
            # between reading a count and writing it.
            return smtp.docmd("AUTH", "PLAIN " + base64.b64encode(
                f"\0guess{number}@{domain}\0secret".encode()).decode())[0]

    try:
        started = _window()
        with ThreadPoolExecutor(sessions) as pool:
            codes = list(pool.map(guess, range(sessions)))
        windows = _window() - started + 1
    finally:
        server.stop()
    limit = mail.runtime.settings.smtp.auth_failures_per_minute
    assert set(codes) <= {535, 454}
    assert codes.count(535) <= limit * windows, codes
    if windows == 1:
        assert (codes.count(535), codes.count(454)) == (limit, sessions - limit)


def test_a_good_login_does_not_count_as_a_failure(mail):
    server = _serve(mail.runtime, **{"smtp.auth_without_tls": "true",
                                     "smtp.auth_failures_per_minute": 2})
    try:
        _within_one_window()
        for _ in range(5):
            with _smtp(server) as smtp:
                smtp.ehlo()
                assert _login(smtp, "PLAIN", mail.inbox.full_address, mail.secret)[0] == 235
        with _smtp(server) as smtp:
            smtp.ehlo()
            assert _guess_until_locked_out(smtp, mail, 2).smtp_code == 454
    finally:
        server.stop()


# A SASL response longer than the server reads (mailin.server.READ_BUFFER_LIMIT, 64 KiB).
LONG_RESPONSE = b"A" * (100 * 1024)


def test_an_auth_response_line_too_long_is_a_counted_failure_without_a_traceback(mail,
                                                                                   caplog):
    server = _serve(mail.runtime, **{"smtp.auth_without_tls": "true",
                                     "smtp.auth_failures_per_minute": 3})
    try:
        _within_one_window()
        with socket.create_connection(server.address, timeout=10) as raw:
            reader = raw.makefile("rb")

            def send(line: bytes) -> bytes:
                raw.sendall(line + b"\r\n")
                reply = reader.readline()
                while reply[3:4] == b"-":
                    reply = reader.readline()
                return reply

            assert reader.readline().startswith(b"220")
            assert send(b"EHLO client.example").startswith(b"250")
            for mechanism in (b"PLAIN", b"LOGIN", b"PLAIN"):
                assert send(b"AUTH " + mechanism).startswith(b"334")
                assert send(LONG_RESPONSE) == (
                    b"500 5.5.6 Authentication Exchange line is too long\r\n")
                # The rest of the line was not read as commands: one reply to the next one.
                assert send(b"NOOP") == b"250 OK\r\n"
            # Three failures counted: even the right secret is refused now, and the
            # connection closed.
            assert send(b"AUTH PLAIN " + base64.b64encode(
                b"\0" + mail.inbox.full_address.encode() + b"\0" + mail.secret.encode())) == (
                b"454 4.7.0 Too many failed logins, try again later\r\n")
            assert reader.readline() == b""
        with socket.create_connection(server.address, timeout=10) as raw:  # and once more
            reader = raw.makefile("rb")
            assert reader.readline().startswith(b"220")
            raw.sendall(b"EHLO client.example\r\nAUTH LOGIN\r\n")
            while not reader.readline().startswith(b"250 "):
                pass
            assert reader.readline().startswith(b"334")
            raw.sendall(LONG_RESPONSE + b"\r\n")
            assert reader.readline() == b"454 4.7.0 Too many failed logins, try again later\r\n"
            assert reader.readline() == b""
    finally:
        server.stop()
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.ERROR or record.exc_info] == []


def test_a_rotated_or_revoked_secret_fails_at_the_next_auth(mail):
    old = mail.secret
    with _smtp(mail.server) as smtp:  # cached by this process now
        smtp.ehlo()
        _login(smtp, "PLAIN", mail.inbox.full_address, old)
    new = _issue(mail)
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        with pytest.raises(smtplib.SMTPAuthenticationError):
            _login(smtp, "PLAIN", mail.inbox.full_address, old)
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        assert _login(smtp, "PLAIN", mail.inbox.full_address, new)[0] == 235
    with mail.runtime.db.transaction() as session:
        revoke_credential(session, caller_of(mail.world.users["owner"]),
                          session.get(Inbox, mail.inbox.id))
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        with pytest.raises(smtplib.SMTPAuthenticationError) as failed:
            _login(smtp, "PLAIN", mail.inbox.full_address, new)
        assert failed.value.smtp_code == 535


def test_the_inboxs_chaos_rules_apply_to_a_logged_in_client(mail):
    with mail.runtime.db.transaction() as session:
        set_inbox_rules(session, caller_of(mail.world.users["owner"]),
                        session.get(Inbox, mail.inbox.id),
                        [{"stage": "rcpt", "action": "reply", "code": 451, "text": "Later",
                          "times": 1}])
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        _login(smtp, "PLAIN", mail.inbox.full_address, mail.secret)
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            smtp.sendmail("app@myapp.example", ANYONE[:1], message(ANYONE[0]))
        assert refused.value.recipients[ANYONE[0]] == (451, b"4.3.0 Later")
        assert smtp.sendmail("app@myapp.example", ANYONE, message(ANYONE[0])) == {}
    [stored] = _emails(mail)
    assert stored.envelope_to == ANYONE


def test_without_tls_allowed_auth_is_offered_only_after_starttls(mail):
    cert, key = make_self_signed(mail.tmp_path / "tls", "localhost")
    server = _serve(mail.runtime, **{"smtp.auth_without_tls": "false",
                                     "smtp.tls_cert": str(cert), "smtp.tls_key": str(key)})
    try:
        with _smtp(server) as smtp:
            smtp.ehlo()
            assert smtp.has_extn("starttls") and not smtp.has_extn("auth")
            assert smtp.docmd("AUTH", "PLAIN")[0] == 538  # encryption required
            smtp.starttls(context=ssl.create_default_context(cafile=str(cert)))
            smtp.ehlo()
            assert set(smtp.esmtp_features["auth"].split()) == {"PLAIN", "LOGIN"}
            assert _login(smtp, "LOGIN", mail.inbox.full_address, mail.secret)[0] == 235
            assert smtp.sendmail("app@myapp.example", ANYONE, message(ANYONE[0])) == {}
    finally:
        server.stop()
    assert [email.envelope_to for email in _emails(mail)] == [ANYONE]


def test_without_a_certificate_or_leave_auth_is_never_offered(mail):
    server = _serve(mail.runtime, **{"smtp.auth_without_tls": "false"})
    try:
        with _smtp(server) as smtp:
            smtp.ehlo()
            assert not smtp.has_extn("auth") and not smtp.has_extn("starttls")
    finally:
        server.stop()


@pytest.mark.parametrize(("values", "allowed"), [
    ({}, True),  # the embedded default, bound to 127.0.0.1
    ({"smtp.host": "::1"}, True),
    ({"smtp.host": "0.0.0.0"}, False),
    ({"redis.url": "redis://127.0.0.1:6379/0"}, False),  # the scaled mode
    ({"smtp.host": "0.0.0.0", "smtp.auth_without_tls": "true"}, True),
    ({"smtp.auth_without_tls": "false"}, False),
])
def test_auth_without_tls_defaults_to_the_embedded_mode_on_loopback(values, allowed):
    assert load_settings(environ={}, overrides=values).smtp_auth_without_tls is allowed


def test_the_self_signed_certificate_is_made_once_and_kept(tmp_path):
    cert, key = make_self_signed(tmp_path / "tls", "mx.example")
    first = cert.read_bytes()
    assert key.stat().st_mode & 0o777 == 0o600
    assert make_self_signed(tmp_path / "tls", "mx.example") == (cert, key)
    assert cert.read_bytes() == first
