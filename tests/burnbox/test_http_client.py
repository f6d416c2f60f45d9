"""The outbound client against real servers on loopback: it connects to the checked address while
keeping the real name for Host, SNI and the certificate; it follows no redirect and no proxy from
the environment; one deadline bounds the whole exchange; connections are kept alive per target
and guard mode."""

import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from burnbox import http_client
from burnbox.dns import Resolver
from burnbox.netguard import TargetRefused
from tests.receiver import Answer


def test_the_request_reaches_the_checked_address_with_the_real_host_name(receiver, dns_server):
    dns_server.publish("hooks.test. 60 IN A 127.0.0.1\n")
    resolver = Resolver([dns_server.nameserver], timedelta(seconds=1))
    reply = http_client.post(f"http://hooks.test:{receiver.port}/in?x=1", b'{"a":1}',
                             {"Content-Type": "application/json"}, timeout=5,
                             allow_private=True, resolver=resolver)
    assert reply.status == 200
    (request,) = receiver.wait_for(1)
    assert request.path == "/in?x=1"
    assert request.headers["Host"] == f"hooks.test:{receiver.port}"
    assert request.body == b'{"a":1}'


def test_a_redirect_is_returned_not_followed(receiver):
    receiver.answer(Answer(302, {"Location": "http://169.254.169.254/latest"}))
    reply = http_client.post(receiver.url, b"{}", {}, timeout=5, allow_private=True)
    assert (reply.status, reply.location) == (302, "http://169.254.169.254/latest")
    assert len(receiver.wait_for(1)) == 1


def test_proxies_from_the_environment_are_ignored(receiver, monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    assert http_client.post(receiver.url, b"{}", {}, timeout=5, allow_private=True).status == 200


def test_a_slow_answer_is_a_timeout_within_the_deadline(receiver):
    receiver.answer(Answer(200, delay=3))
    started = time.monotonic()
    with pytest.raises(http_client.OutboundTimeout):
        http_client.post(receiver.url, b"{}", {}, timeout=0.5, allow_private=True)
    assert time.monotonic() - started < 1.5


def test_a_server_dripping_its_answer_cannot_hold_the_client_past_the_deadline():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def drip():
        conn, _ = listener.accept()
        conn.recv(65536)
        with contextlib.suppress(OSError):  # the client hangs up at its deadline
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100:
                conn.sendall(bytes([byte]))
                time.sleep(0.05)  # each byte well within a read timeout, the whole far beyond
        conn.close()

    threading.Thread(target=drip, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(http_client.OutboundTimeout):
        http_client.post(f"http://127.0.0.1:{port}/", b"{}", {}, timeout=1, allow_private=True)
    assert time.monotonic() - started < 2
    listener.close()


def test_nothing_listening_is_a_connection_failure():
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(http_client.OutboundError, match="connection refused"):
        http_client.post(f"http://127.0.0.1:{port}/", b"{}", {}, timeout=2, allow_private=True)


def test_an_internal_target_is_refused_before_connecting(receiver):
    with pytest.raises(TargetRefused):
        http_client.post(receiver.url, b"{}", {}, timeout=2, allow_private=False)
    assert receiver.requests == []


def test_consecutive_posts_to_one_target_share_a_kept_alive_connection(receiver):
    for _ in range(3):
        assert http_client.post(receiver.url, b"{}", {}, timeout=5, allow_private=True
                                ).status == 200
    requests = receiver.wait_for(3)
    assert len({request.client_port for request in requests}) == 1


def test_connections_send_without_nagles_delay(receiver):
    # http.client sends a request's head and body in two writes. With Nagle's algorithm on, the
    # body of each request after the first on a kept connection waited for the receiver's
    # delayed ACK (40 ms on Linux): every webhook on a warm connection took 40 ms more.
    http_client.post(receiver.url, b"{}", {}, timeout=5, allow_private=True)
    [kept] = [connection for connection, _ in http_client._idle.connections.values()
              if connection.sock.getpeername()[1] == receiver.port]
    assert kept.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_a_kept_connection_the_server_closed_is_replaced_by_a_new_one(receiver):
    receiver.answer(Answer(200, hang_up=True))
    for _ in range(2):
        assert http_client.post(receiver.url, b"{}", {}, timeout=5, allow_private=True
                                ).status == 200
    first, second = receiver.wait_for(2)
    assert first.client_port != second.client_port
    assert len(receiver.requests) == 2


def test_a_connection_opened_while_private_targets_were_allowed_never_serves_a_refusing_call(
        receiver):
    assert http_client.post(receiver.url, b"{}", {}, timeout=5, allow_private=True).status == 200
    with pytest.raises(TargetRefused):
        http_client.post(receiver.url, b"{}", {}, timeout=5, allow_private=False)
    assert len(receiver.requests) == 1


# --- TLS: certificates made with the openssl command for names resolved to 127.0.0.1 --------

def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA and a server certificate for hooks.test signed by it."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    folder = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "2", "-subj", "/CN=Test CA", cwd=folder)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
             "server.csr", "-subj", "/CN=hooks.test", cwd=folder)
    (folder / "san.ext").write_text("subjectAltName=DNS:hooks.test\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext",
             cwd=folder)
    return folder


@pytest.fixture
def tls_server(pki):
    """An HTTPS server on 127.0.0.1 presenting the hooks.test certificate; records SNI names."""
    seen = {"sni": [], "host": []}
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    context.sni_callback = lambda _sock, name, _ctx: seen["sni"].append(name)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            seen["host"].append(self.headers["Host"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_https_checks_the_certificate_and_sends_sni_for_the_name_not_the_address(
        pki, tls_server, dns_server):
    port, seen = tls_server
    dns_server.publish("hooks.test. 60 IN A 127.0.0.1\nother.test. 60 IN A 127.0.0.1\n")
    resolver = Resolver([dns_server.nameserver], timedelta(seconds=1))
    reply = http_client.post(f"https://hooks.test:{port}/", b"{}", {}, timeout=5,
                             allow_private=True, resolver=resolver, ca_file=str(pki / "ca.pem"))
    assert reply.status == 204
    assert seen["sni"] == ["hooks.test"]
    assert seen["host"] == [f"hooks.test:{port}"]

    with pytest.raises(http_client.OutboundError, match="certificate"):
        http_client.post(f"https://other.test:{port}/", b"{}", {}, timeout=5,
                         allow_private=True, resolver=resolver, ca_file=str(pki / "ca.pem"))
    with pytest.raises(http_client.OutboundError, match="certificate"):
        http_client.post(f"https://hooks.test:{port}/", b"{}", {}, timeout=5,
                         allow_private=True, resolver=resolver)  # the system CAs do not know it


class _Document(BaseHTTPRequestHandler):
    """Answers every GET (and POST) with `server.body`, recording the Host header it got and
    what a POST sent."""

    def do_GET(self) -> None:
        self.server.hosts.append(self.headers["Host"])
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        self.server.posted.append((self.headers["Content-Type"], self.headers["Authorization"],
                                   self.rfile.read(length)))
        self.do_GET()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def document_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Document)
    server.body, server.hosts, server.posted = b'{"keys": []}', [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_get_reads_the_whole_document_from_the_checked_address(document_server, dns_server):
    dns_server.publish("idp.test. 60 IN A 127.0.0.1\n")
    resolver = Resolver([dns_server.nameserver], timedelta(seconds=1))
    port = document_server.server_port
    answer = http_client.get(f"http://idp.test:{port}/jwks", timeout=5, limit=1024,
                             allow_private=True, resolver=resolver)
    assert (answer.status, answer.body) == (200, b'{"keys": []}')
    assert document_server.hosts == [f"idp.test:{port}"]


def test_get_refuses_an_answer_longer_than_the_limit(document_server):
    document_server.body = b"x" * 2048
    with pytest.raises(http_client.OutboundError, match="longer than 1024 bytes"):
        http_client.get(f"http://127.0.0.1:{document_server.server_port}/", timeout=5,
                        limit=1024, allow_private=True)


def test_get_refuses_an_internal_target_before_connecting(document_server):
    with pytest.raises(TargetRefused):
        http_client.get(f"http://127.0.0.1:{document_server.server_port}/", timeout=5,
                        limit=1024, allow_private=False)
    assert document_server.hosts == []


def test_post_form_sends_the_fields_form_encoded_and_reads_the_whole_answer(document_server):
    answer = http_client.post_form(
        f"http://127.0.0.1:{document_server.server_port}/token",
        {"grant_type": "authorization_code", "code": "a b&c"},
        headers={"Authorization": "Basic eDp5"}, timeout=5, limit=1024, allow_private=True)
    assert (answer.status, answer.body) == (200, b'{"keys": []}')
    assert document_server.posted == [("application/x-www-form-urlencoded", "Basic eDp5",
                                       b"grant_type=authorization_code&code=a+b%26c")]


def test_post_form_is_guarded_like_get(document_server):
    with pytest.raises(TargetRefused):
        http_client.post_form(f"http://127.0.0.1:{document_server.server_port}/token", {},
                              timeout=5, limit=1024, allow_private=False)
    document_server.body = b"x" * 2048
    with pytest.raises(http_client.OutboundError, match="longer than 1024 bytes"):
        http_client.post_form(f"http://127.0.0.1:{document_server.server_port}/token", {},
                              timeout=5, limit=1024, allow_private=True)
    assert len(document_server.posted) == 1
