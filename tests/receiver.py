"""A real HTTP receiver on loopback for webhook and link-check tests: it records every request
(method, headers, the exact body bytes, when it arrived) and answers as the test scripts it: a
status, a redirect, a delay longer than the sender's timeout, holding the request until released,
or hanging up after answering."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a sender opening dozens of connections at once
    # (a pool of delivery threads) would see some of them reset.
    request_queue_size = 128
    daemon_threads = True


@dataclass
class Received:
    """One request as it reached the receiver."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() on arrival
    client_port: int = 0  # the sender's port: one per connection it opened


@dataclass
class Answer:
    """How to answer one request: a status, optional headers, an optional delay first, or hold
    until `released` is set; `hang_up` closes the connection after the answer without saying
    so (as a server ending an idle keep-alive connection does)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hold: bool = False
    hang_up: bool = False


class Receiver:
    """A ThreadingHTTPServer on 127.0.0.1:<free port>: requests to a path in `by_path` get that
    answer, others the next scripted one, then `default` (200)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.script: list[Answer] = []
        self.default = Answer()
        self.by_path: dict[str, Answer] = {}
        self.arrived = threading.Condition()
        self.released = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.answer_as_scripted("POST")

            def do_HEAD(self) -> None:
                self.answer_as_scripted("HEAD")

            def do_GET(self) -> None:
                self.answer_as_scripted("GET")

            def answer_as_scripted(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver.arrived:
                    receiver.requests.append(Received(
                        method, self.path, {k: v for k, v in self.headers.items()}, body,
                        time.monotonic(), self.client_address[1]))
                    if self.path in receiver.by_path:
                        answer = receiver.by_path[self.path]
                    else:
                        answer = receiver.script.pop(0) if receiver.script else receiver.default
                    receiver.arrived.notify_all()
                if answer.hold:
                    receiver.released.wait(60)
                if answer.delay:
                    time.sleep(answer.delay)
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the sender gave up (timeout, killed): nothing to answer
                self.close_connection = self.close_connection or answer.hang_up

            def log_message(self, *_args: object) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def answer(self, *answers: Answer) -> None:
        """Answer the next requests this way, in order (then the default)."""
        with self.arrived:
            self.script.extend(answers)

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Received]:
        """Wait until `count` requests arrived; fail the test otherwise."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pytest.fail(f"the receiver got {len(self.requests)} of {count} requests")
                self.arrived.wait(remaining)
            return list(self.requests)


@pytest.fixture
def receiver():
    """A started receiver, stopped after the test."""
    running = Receiver().start()
    yield running
    running.stop()
