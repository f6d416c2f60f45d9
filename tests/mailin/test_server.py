"""The SMTP skeleton over a real socket: EHLO extensions, early refusals, connection cap, stop."""

import smtplib
import socket

import pytest

from mailin.server import MailinThread
from tests.metrics_scrape import counted


@pytest.fixture
def smtp_server(runtime):
    server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    yield server
    server.stop()


def test_ehlo_advertises_size_8bitmime_pipelining_and_enhanced_status_codes(smtp_server, runtime):
    with smtplib.SMTP(*smtp_server.address, timeout=10) as smtp:
        code, _ = smtp.ehlo("client.example")
        assert code == 250
        assert smtp.esmtp_features["size"] == str(runtime.settings.smtp.max_message_bytes)
        for name in ("8bitmime", "pipelining", "enhancedstatuscodes"):
            assert name in smtp.esmtp_features


def test_unknown_recipients_are_refused_at_rcpt_so_nothing_is_acknowledged(smtp_server):
    with smtplib.SMTP(*smtp_server.address, timeout=10) as smtp:
        smtp.ehlo()
        assert smtp.mail("sender@example.com")[0] == 250
        code, message = smtp.rcpt("nobody@example.com")
        assert (code, message) == (550, b"5.1.2 Domain not served here")
        assert smtp.docmd("DATA")[0] == 503


# The last two crash email's parser (UnboundLocalError) when read as they are; aiosmtpd strips
# the argument before reading it.
@pytest.mark.parametrize("path", ["<a@>", "a@", "<a@[>", "a@[", "0()@[ ", "a@[\t"])
def test_a_malformed_path_is_a_syntax_error_not_a_failure_of_ours(smtp_server, path):
    with smtplib.SMTP(*smtp_server.address, timeout=10) as smtp:
        smtp.ehlo()
        assert smtp.docmd(f"MAIL FROM:{path}")[0] == 553
        assert smtp.mail("sender@example.com")[0] == 250
        assert smtp.docmd(f"RCPT TO:{path}")[0] == 553


def test_connections_above_the_cap_are_told_to_retry_later(runtime):
    capped = runtime.settings.replace(**{"smtp.max_connections": 1})
    runtime.settings = capped
    server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    refused = counted("burnbox_smtp_connections_refused_total")
    try:
        with smtplib.SMTP(*server.address, timeout=10) as first:
            assert first.noop()[0] == 250
            with socket.create_connection(server.address, timeout=10) as second:
                assert second.recv(200).startswith(b"421 4.3.2")
            assert counted("burnbox_smtp_connections_refused_total") == refused + 1
        with smtplib.SMTP(*server.address, timeout=10) as again:
            assert again.noop()[0] == 250
    finally:
        server.stop()


def test_stop_closes_the_listening_socket(runtime):
    server = MailinThread(runtime, host="127.0.0.1", port=0).start_and_wait()
    address = server.address
    server.stop()
    assert not server.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(address, timeout=2).close()


def test_a_taken_port_fails_start_instead_of_hanging(smtp_server, runtime):
    with pytest.raises(OSError):
        MailinThread(runtime, host="127.0.0.1", port=smtp_server.address[1]).start_and_wait()
