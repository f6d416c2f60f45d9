"""What the HTTP servers answer by themselves, before the app sees a request, over real sockets:
a URL longer than the server reads is a 414 in the JSON error envelope (gunicorn and
http.server answered HTML pages), and no answer names the server's or Python's version (the
embedded server sent `Server: Werkzeug/<version> Python/<version>`)."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator

import pytest

from burnbox import serving
from tests.processes import BIN, ROOT, free_port, process_env, terminate, wait_for_http
from web.errors import CODES

pytestmark = pytest.mark.slow


def _answer(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` as is; the status, headers (lower-case names) and body that came back."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(request)
        received = b""
        try:
            while chunk := conn.recv(65536):
                received += chunk
        except ConnectionResetError:  # the server closed with part of the request unread
            pass
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip()
               for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()


@pytest.fixture(params=["web", "serve"])
def server(request, tmp_path) -> Iterator[tuple[str, int]]:
    """`burnbox web` (gunicorn, the scaled shape) or `burnbox serve` (the embedded one) on a
    free port: (which, port)."""
    port = free_port()
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path), WEB_CONCURRENCY="1")
    args = ["--port", str(port)] + (["--smtp-port", str(free_port())]
                                    if request.param == "serve" else [])
    process = subprocess.Popen([str(BIN / "burnbox"), request.param, *args], cwd=ROOT, env=env,
                               start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz")
        yield request.param, port
    finally:
        terminate(process)


def test_a_url_longer_than_the_server_reads_is_a_414_in_the_envelope(server):
    which, port = server
    # gunicorn reads a request line of up to 4094 bytes, http.server up to 65536.
    length = 5_000 if which == "web" else 70_000
    status, headers, body = _answer(port, _get("/api/v1/inboxes?q=" + "a" * length))
    assert status == 414
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"error": "URI Too Long", "code": "uri_too_long"}
    assert int(headers["content-length"]) == len(body)


def test_a_header_line_longer_than_the_server_reads_is_a_431_in_the_envelope(server):
    _, port = server
    request = (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * 70_000
               + b"\r\n\r\n")
    status, headers, body = _answer(port, request)
    assert status == 431
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {"error": "Request Header Fields Too Large",
                                "code": "request_header_fields_too_large"}


def test_no_answer_names_a_version_of_the_server_or_of_python(server):
    which, port = server
    _, headers, _ = _answer(port, _get("/healthz"))
    assert headers["server"] == {"web": "gunicorn", "serve": "Burnbox"}[which]
    _, headers, _ = _answer(port, _get("/api/v1/" + "a" * 70_000))
    assert headers.get("server", "") in ("", "gunicorn", "Burnbox")


def test_a_server_refusal_has_the_code_the_app_gives_the_same_status():
    # The statuses gunicorn and http.server answer by themselves, and 404/405 for good measure;
    # the app's envelope says internal_error for any 5xx it has no code for.
    for status in (400, 403, 404, 405, 500):
        assert json.loads(serving.refusal(status))["code"] == CODES.get(status, "internal_error")
