"""A real SMTP receiver for tests: an aiosmtpd Controller on a free loopback port that keeps every
message it accepts, and can be told to answer with a given reply code."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Envelope:
    """One accepted message as it came: the envelope and the bytes of DATA."""

    mail_from: str
    rcpt_tos: list[str]
    content: bytes


class _Handler:
    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.sink.lock:
            if self.sink.replies:
                return self.sink.replies.pop(0)
            message = email.message_from_bytes(envelope.content, policy=email.policy.default)
            self.sink.messages.append(message)
            self.sink.envelopes.append(Envelope(envelope.mail_from, list(envelope.rcpt_tos),
                                                envelope.original_content))
        return "250 OK"


class SmtpSink:
    """Start with `start()`, stop with `stop()`; `messages` holds what arrived."""

    def __init__(self) -> None:
        self.port = free_port()
        self.messages: list[EmailMessage] = []
        self.envelopes: list[Envelope] = []
        # Replies to give (in order) instead of accepting, e.g. "451 try later".
        self.replies: list[str] = []
        self.lock = threading.Lock()
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpSink:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[EmailMessage]:
        """Wait until `count` messages arrived; return them (fail after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.messages) >= count:
                    return list(self.messages)
            time.sleep(0.02)
        raise AssertionError(f"expected {count} messages, got {len(self.messages)}")
