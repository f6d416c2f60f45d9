"""Mail in over real SMTP sockets, read back through the real API: fields, sanitised HTML,
byte-identical attachments, the email.received event, bare-LF line ends (stored as CRLF), every
refusal (unknown or lapsed recipients, too many recipients, too big, storage down), STARTTLS,
and the connection lifetime."""

import dataclasses
import email.policy
import smtplib
import socket
import ssl
import time
from email.message import EmailMessage
from types import SimpleNamespace

import pytest
from sqlalchemy import select

from burnbox.storage import FilesystemStorage
from burnbox.timeutil import utcnow
from mailin.refusals import BURST
from mailin.self_signed import make_self_signed
from mailin.server import MailinThread
from models.events import EMAIL_RECEIVED, Event
from models.mail.entities import Email
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.metrics_scrape import counted
from web import create_app

PNG = bytes(range(256)) * 40
PDF = b"%PDF-1.4\n" + bytes(range(256)) * 3


def _serve(runtime, **changes):
    changed = dataclasses.replace(runtime, settings=runtime.settings.replace(**changes))
    return MailinThread(changed, host="127.0.0.1", port=0).start_and_wait()


@pytest.fixture
def mail(committed_runtime):
    """A committed world, an SMTP server on a free port, and an API client, all on one runtime."""
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
    server = _serve(committed_runtime)
    app = create_app(runtime=committed_runtime)
    app.config["TESTING"] = True
    yield SimpleNamespace(world=world, server=server, client=app.test_client(),
                          runtime=committed_runtime)
    server.stop()


def _api(mail, path, who="team_member", **kwargs):
    return mail.client.get(mail.world.path(path), headers=mail.world.headers[who], **kwargs)


def _smtp(server, **kwargs):
    return smtplib.SMTP(*server.address, timeout=10, **kwargs)


def test_mail_sent_over_smtp_appears_through_the_api_with_its_fields(mail):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world, alias="welcome")
    raw = message(inbox.full_address, subject="Welcome aboard", text="Your code is 123456.\n",
                  html='<p>Hi <b>there</b><script>steal()</script>'
                       '<img src=x onerror="steal()"></p>',
                  attachments=(("pixel.png", "image/png", PNG),
                               ("Résumé 2026.pdf", "application/pdf", PDF)),
                  message_id="<welcome-1@sender.example>")
    with _smtp(mail.server) as smtp:
        refused = smtp.sendmail("bounce@sender.example", [inbox.full_address], raw)
    assert refused == {}

    listing = _api(mail, f"/inboxes/{inbox.id}/emails").get_json()
    [item] = listing["data"]
    assert item["subject"] == "Welcome aboard"
    assert item["from_address"] == "alice@sender.example"
    assert item["to_address"] == inbox.full_address
    assert item["message_id"] == "<welcome-1@sender.example>"
    assert item["snippet"].startswith("Your code is 123456.")
    assert (item["has_attachments"], item["is_read"], item["size_bytes"]) == (
        True, False, len(raw))

    detail = _api(mail, f"/emails/{item['id']}").get_json()
    assert "123456" in detail["body_text"]
    assert "<b>there</b>" in detail["body_html"]
    for hostile in ("<script", "steal()", "onerror"):
        assert hostile not in detail["body_html"]
    assert {"name": "Subject", "value": "Welcome aboard"} in detail["headers"]
    assert detail["expires_at"] == _api(mail, f"/inboxes/{inbox.id}").get_json()["expires_at"]
    by_name = {attachment["filename"]: attachment for attachment in detail["attachments"]}
    assert set(by_name) == {"pixel.png", "Résumé 2026.pdf"}
    for name, data, content_type in (("pixel.png", PNG, "image/png"),
                                     ("Résumé 2026.pdf", PDF, "application/pdf")):
        attachment = by_name[name]
        assert (attachment["content_type"], attachment["size_bytes"]) == (content_type,
                                                                          len(data))
        download = _api(mail, f"/emails/{item['id']}/attachments/{attachment['id']}")
        assert download.status_code == 200
        assert download.data == data
        assert download.headers["Content-Type"].startswith(content_type)
        assert download.headers["X-Content-Type-Options"] == "nosniff"
        assert download.headers["Content-Disposition"].startswith("attachment;")

    counters = _api(mail, f"/inboxes/{inbox.id}").get_json()
    assert (counters["email_count"], counters["unread_count"]) == (1, 1)


def test_an_acknowledged_message_has_its_email_received_event_in_the_outbox(mail):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world)
    with _smtp(mail.server) as smtp:
        smtp.sendmail("a@sender.example", [inbox.full_address], message(inbox.full_address))
    with mail.runtime.db.session() as session:
        [email] = session.scalars(select(Email)).all()
        [event] = session.scalars(select(Event).where(Event.name == EMAIL_RECEIVED)).all()
    assert event.data["email_id"] == str(email.id)
    assert event.data["address"] == inbox.full_address


def test_one_message_to_two_inboxes_is_stored_for_each(mail):
    with mail.runtime.db.transaction() as session:
        first = make_inbox(session, mail.runtime.settings, mail.world)
        second = make_inbox(session, mail.runtime.settings, mail.world, role="lead")
    with _smtp(mail.server) as smtp:
        smtp.sendmail("a@sender.example", [first.full_address, second.full_address.upper()],
                      message(first.full_address))
    for inbox in (first, second):
        assert _api(mail, f"/inboxes/{inbox.id}/emails").get_json()["total"] == 1


def test_unknown_recipients_are_refused_at_rcpt_saying_whether_the_domain_or_the_inbox_is_unknown(
        mail, caplog):
    caplog.set_level("INFO", logger="mailin.refusals")
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        smtp.mail("a@sender.example")
        assert smtp.rcpt(f"nobody@{mail.world.domain}") == (550, b"5.1.1 No such inbox here")
        assert smtp.rcpt("someone@elsewhere.example") == (550, b"5.1.2 Domain not served here")
    lines = [record for record in caplog.records if record.name == "mailin.refusals"]
    assert [(r.reason, r.client_ip, r.recipient_domain) for r in lines] == [
        ("unknown_inbox", "127.0.0.1", mail.world.domain),
        ("unknown_domain", "127.0.0.1", "elsewhere.example")]
    assert lines[1].getMessage() == ("refused mail for elsewhere.example from 127.0.0.1: the "
                                     "domain is not served here")


def test_a_flood_of_refusals_logs_a_burst_of_lines_then_counts(mail, caplog):
    caplog.set_level("INFO", logger="mailin.refusals")
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        smtp.mail("a@sender.example")
        for n in range(BURST + 20):
            assert smtp.rcpt(f"probe{n}@elsewhere.example")[0] == 550
    lines = [record for record in caplog.records if record.name == "mailin.refusals"]
    assert len(lines) == BURST


def _rcpt(server, address):
    with _smtp(server) as smtp:
        smtp.ehlo()
        smtp.mail("a@sender.example")
        return smtp.rcpt(address)[0]


def _sleep_past(moment):
    time.sleep(max(0.0, (moment - utcnow()).total_seconds()) + 0.2)


def test_an_inbox_stops_receiving_the_moment_it_lapses_even_while_cached(mail):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world, ttl="2s")
    assert _rcpt(mail.server, inbox.full_address) == 250  # now cached for 30 s
    _sleep_past(inbox.expires_at)
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        smtp.mail("a@sender.example")
        assert smtp.rcpt(inbox.full_address) == (550, b"5.1.1 Inbox expired")


def test_an_inbox_extended_while_cached_keeps_receiving(mail):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world, ttl="2s")
    assert _rcpt(mail.server, inbox.full_address) == 250
    response = mail.client.post(f"/api/v1/inboxes/{inbox.id}/extend", json={"duration": "5m"},
                                headers=mail.world.headers["team_member"])
    assert response.status_code == 200
    _sleep_past(inbox.expires_at)
    assert _rcpt(mail.server, inbox.full_address) == 250


def test_a_new_inbox_receives_once_the_short_negative_answer_is_gone(mail):
    address = f"brand-new@{mail.world.domain}"
    assert _rcpt(mail.server, address) == 550
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world, alias="brand-new")
    assert inbox.full_address == address
    time.sleep(mail.runtime.settings.smtp.route_cache_negative_ttl.total_seconds() + 0.2)
    assert _rcpt(mail.server, address) == 250


def test_a_recipient_deleted_after_rcpt_gets_nothing_and_the_message_is_refused(mail):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world)
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        smtp.mail("a@sender.example")
        assert smtp.rcpt(inbox.full_address)[0] == 250
        assert mail.client.delete(f"/api/v1/inboxes/{inbox.id}",
                                  headers=mail.world.headers["team_member"]).status_code == 200
        code, reply = smtp.data(message(inbox.full_address))
    assert (code, reply) == (550, b"5.1.1 Inbox deleted or expired")


def test_the_101st_recipient_is_refused_with_452(mail):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world)
    refused = counted("burnbox_smtp_recipients_refused_total", reason="too_many_recipients")
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        smtp.mail("a@sender.example")
        for _ in range(100):
            assert smtp.rcpt(inbox.full_address)[0] == 250
        assert smtp.rcpt(inbox.full_address) == (452, b"4.5.3 Too many recipients")
        assert smtp.data(message(inbox.full_address))[0] == 250
    assert _api(mail, f"/inboxes/{inbox.id}/emails").get_json()["total"] == 1
    assert counted("burnbox_smtp_recipients_refused_total",
                   reason="too_many_recipients") == refused + 1


def test_messages_above_the_size_limit_are_refused_with_552_5_3_4(mail):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world)
    server = _serve(mail.runtime, **{"smtp.max_message_bytes": 5000})
    refused = counted("burnbox_smtp_recipients_refused_total", reason="size")
    try:
        with _smtp(server) as smtp:
            smtp.ehlo()
            assert smtp.esmtp_features["size"] == "5000"
            code, reply = smtp.mail("a@sender.example", ["SIZE=6000"])
            assert (code, reply[:5]) == (552, b"5.3.4")
            smtp.rset()
            smtp.mail("a@sender.example")  # no SIZE declared: refused once the data is in
            smtp.rcpt(inbox.full_address)
            code, reply = smtp.data(message(inbox.full_address, text=("x" * 70 + "\n") * 100))
            assert (code, reply[:5]) == (552, b"5.3.4")
        assert counted("burnbox_smtp_recipients_refused_total", reason="size") == refused + 1
    finally:
        server.stop()
    assert _api(mail, f"/inboxes/{inbox.id}/emails").get_json()["total"] == 0


def _stored_raw(mail, inbox) -> bytes:
    with mail.runtime.db.session() as session:
        email = session.scalars(select(Email).where(Email.inbox_id == inbox.id)).one()
    return mail.runtime.storage.get(email.raw_key)


@pytest.mark.parametrize("size", [300, 3 * 1024 * 1024], ids=["small", "3MB"])
def test_smtplib_messages_with_bare_lf_or_crlf_line_ends_are_stored_with_crlf(mail, size):
    with mail.runtime.db.transaction() as session:
        crlf_inbox = make_inbox(session, mail.runtime.settings, mail.world, alias="crlf-line-ends")
        lf_inbox = make_inbox(session, mail.runtime.settings, mail.world,
                              alias="bare-lf-line-ends")
    built = EmailMessage()
    built["From"], built["To"], built["Subject"] = ("script@sender.example",
                                                    lf_inbox.full_address, "Line ends")
    lines = "plain text\n.a line smtplib dot-stuffs\n.\n..two dots\n"
    built.set_content(lines * (size // len(lines)))
    crlf, bare_lf = built.as_bytes(policy=email.policy.SMTP), built.as_bytes()
    assert b"\r" not in bare_lf and len(bare_lf) > size * 0.9
    with _smtp(mail.server) as smtp:
        # Python's smtplib sends bytes as they are: the default policy's bare LFs included.
        for raw, inbox in ((crlf, crlf_inbox), (bare_lf, lf_inbox)):
            assert smtp.sendmail("a@sender.example", [inbox.full_address], raw) == {}
    assert _stored_raw(mail, crlf_inbox) == crlf
    # smtplib ends data that does not end in CRLF with one of its own: an empty last line.
    assert _stored_raw(mail, lf_inbox) == crlf + b"\r\n"


def test_when_storage_fails_the_sender_is_told_to_retry_and_nothing_is_kept(mail, tmp_path):
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the storage root should be")
    broken = dataclasses.replace(mail.runtime, storage=FilesystemStorage(blocked))
    server = MailinThread(broken, host="127.0.0.1", port=0).start_and_wait()
    not_stored = counted("burnbox_smtp_recipients_refused_total", reason="not_stored")
    try:
        with _smtp(server) as smtp:
            smtp.ehlo()
            smtp.mail("a@sender.example")
            smtp.rcpt(inbox.full_address)
            assert smtp.data(message(inbox.full_address))[0] == 451
        assert counted("burnbox_smtp_recipients_refused_total",
                       reason="not_stored") == not_stored + 1
    finally:
        server.stop()
    assert _api(mail, f"/inboxes/{inbox.id}/emails").get_json()["total"] == 0


def _self_signed(tmp_path):
    return make_self_signed(tmp_path, "localhost")


def test_starttls_is_offered_with_a_certificate_and_mail_flows_over_it(mail, tmp_path):
    cert, key = _self_signed(tmp_path)
    with mail.runtime.db.transaction() as session:
        inbox = make_inbox(session, mail.runtime.settings, mail.world)
    server = _serve(mail.runtime, **{"smtp.tls_cert": str(cert), "smtp.tls_key": str(key)})
    try:
        with _smtp(server) as smtp:
            smtp.ehlo()
            assert smtp.has_extn("starttls")
            smtp.starttls(context=ssl.create_default_context(cafile=str(cert)))
            smtp.ehlo()
            assert smtp.sock.version().startswith("TLS")
            smtp.sendmail("a@sender.example", [inbox.full_address], message(inbox.full_address))
    finally:
        server.stop()
    assert _api(mail, f"/inboxes/{inbox.id}/emails").get_json()["total"] == 1


def test_without_a_certificate_starttls_is_not_offered(mail):
    with _smtp(mail.server) as smtp:
        smtp.ehlo()
        assert not smtp.has_extn("starttls")


def test_each_command_gives_an_idle_session_its_full_timeout_again(mail):
    # aiosmtpd re-arms its idle timer on each command: a session that keeps talking outlives
    # the timeout many times over, and one that falls silent is dropped once it has passed.
    server = _serve(mail.runtime, **{"smtp.timeout": "1s"})
    try:
        with socket.create_connection(server.address, timeout=10) as raw:
            reader = raw.makefile("rb")
            assert reader.readline().startswith(b"220")
            for _ in range(8):  # 2.4 s of commands, 0.3 s apart
                time.sleep(0.3)
                raw.sendall(b"NOOP\r\n")
                assert reader.readline().startswith(b"250")
            silent = time.monotonic()
            assert reader.readline() == b""  # the server closed the connection
            assert 0.9 < time.monotonic() - silent < 5
    finally:
        server.stop()


def test_a_connection_is_closed_with_421_when_its_lifetime_is_over(mail):
    server = _serve(mail.runtime, **{"smtp.connection_timeout": "1s"})
    try:
        with socket.create_connection(server.address, timeout=10) as raw:
            assert raw.recv(200).startswith(b"220")
            started = time.monotonic()
            raw.sendall(b"EHLO client.example\r\n")
            received = b""
            while b"421" not in received:
                chunk = raw.recv(1000)
                if not chunk:
                    break
                received += chunk
        assert b"421 4.4.2" in received
        assert time.monotonic() - started < 5
    finally:
        server.stop()
