"""The SMTP skeleton over a real socket: EHLO extensions, early refusals, connection cap, stop."""

import smtplib
import socket
import types

import pytest
from aiosmtpd.smtp import SMTP
from hypothesis import given, settings
from hypothesis import strategies as st

from mailin.server import READ_BUFFER_LIMIT, BurnboxSMTP, ConnectionLimiter, MailinThread
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


@pytest.mark.parametrize("path", ["<a@>", "a@", "<a@[>", "a@["])
def test_a_malformed_path_is_a_syntax_error_not_a_failure_of_ours(smtp_server, path):
    with smtplib.SMTP(*smtp_server.address, timeout=10) as smtp:
        smtp.ehlo()
        assert smtp.docmd(f"MAIL FROM:{path}")[0] == 553
        assert smtp.mail("sender@example.com")[0] == 250
        assert smtp.docmd(f"RCPT TO:{path}")[0] == 553


def _protocol() -> BurnboxSMTP:
    return BurnboxSMTP(None, limiter=ConnectionLimiter(1), lifetime=60)


class _Handler:
    async def handle_DATA(self, server, session, envelope):
        return "250 OK"


# What a session shares with the template it was copied from: the server's configuration, set
# once and never changed by a connection.
_SHARED = {"loop", "_loop", "event_handler", "tls_context", "_auth_callback", "_handle_hooks",
           "_limiter", "_replies"}
_IMMUTABLE = (str, int, float, bool, type(None), types.FunctionType, tuple)


def test_a_fresh_session_shares_only_the_configuration_with_its_template():
    template = BurnboxSMTP(_Handler(), limiter=ConnectionLimiter(1), lifetime=60)
    built = BurnboxSMTP(_Handler(), limiter=ConnectionLimiter(1), lifetime=60)
    sessions = [template.fresh(), template.fresh()]
    for session in sessions:
        # Everything aiosmtpd's constructor sets, and nothing else.
        assert vars(session).keys() == vars(built).keys()
        for name, value in vars(session).items():
            if not isinstance(value, _IMMUTABLE):
                others = (vars(template)[name], *(vars(other)[name] for other in sessions
                                                   if other is not session))
                assert name in _SHARED or all(value is not other for other in others), name
        assert all(method.__self__ is session for method in session._smtp_methods.values())
        assert all(mechanism.method.__self__ is session
                   for mechanism in session._auth_methods.values() if mechanism.is_builtin)
        assert session._stream_reader._limit == READ_BUFFER_LIMIT


_PATH_CHARACTERS = st.sampled_from(list("aZ09.-_+@<> ()\t\"[]:,;\\=é"))


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(_PATH_CHARACTERS, max_size=30),
                 st.from_regex(r"<[a-z.]{1,5}@[a-z.-]{1,6}>( {0,2}[A-Z= (]{0,5})?",
                               fullmatch=True)))
def test_mail_and_rcpt_paths_read_as_aiosmtpd_reads_them(path):
    protocol = _protocol()
    try:
        expected = SMTP._getaddr(protocol, path)
    except (IndexError, AttributeError):
        expected = (None, None)
    assert protocol._getaddr(path) == expected


def test_a_plain_path_keeps_the_local_part_limit(runtime):
    protocol = _protocol()
    protocol.local_part_limit = 3
    assert protocol._getaddr("<abc@example.com> SIZE=10") == ("abc@example.com", "SIZE=10")
    assert protocol._getaddr("<abcd@example.com>") == (None, None)


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
