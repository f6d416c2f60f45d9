"""Load for fault tests: SMTP senders and API callers on threads, each noting every outcome with
the time it was asked, so a test can tell what was answered before, during and after a fault."""

from __future__ import annotations

import smtplib
import threading
import time
import uuid
from dataclasses import dataclass, field

import requests

from tests.factories.mail import message


@dataclass(frozen=True)
class Outcome:
    """One request: when it was sent and answered (time.monotonic()), its answer (an SMTP reply
    code, an HTTP status, or the name of the exception that took its place) and, for mail, its
    Message-ID."""

    sent: float
    answered: float
    answer: int | str
    message_id: str = ""


@dataclass
class Load:
    """Threads that run `call` in a loop until stopped; `outcomes` in the order answered."""

    outcomes: list[Outcome] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def run(self, target: object, count: int) -> Load:
        """Start `count` threads running target(self) until `stop`."""
        for _ in range(count):
            thread = threading.Thread(target=target, args=(self,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Stop every thread and wait for it (each ends after its request in flight)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def answers(self, start: float = 0.0, end: float = float("inf")) -> set[int | str]:
        """The distinct answers to the requests sent after `start` and answered before `end`."""
        return {outcome.answer for outcome in list(self.outcomes)
                if start <= outcome.sent and outcome.answered < end}

    def answered_since(self, moment: float, answer: int) -> bool:
        """True once a request sent after `moment` got `answer`."""
        return answer in self.answers(moment)

    def note(self, sent: float, answer: int | str, message_id: str = "") -> None:
        """Record the answer to a request sent at `sent`, answered now."""
        self.outcomes.append(Outcome(sent, time.monotonic(), answer, message_id))


def smtp_senders(port: int, addresses: list[str], count: int, pause: float = 0.0) -> Load:
    """`count` SMTP clients sending messages with unique Message-IDs to `addresses` in turn,
    `pause` seconds apart, each on a connection of its own; any answer but 250 opens a new
    connection (as a sending MTA that will retry later would)."""

    def send(load: Load) -> None:
        n = 0
        while not load.stopping:
            try:
                with smtplib.SMTP("127.0.0.1", port, timeout=15) as client:
                    while not load.stopping:
                        to = addresses[n % len(addresses)]
                        n += 1
                        message_id = f"<{uuid.uuid4().hex}@load.example>"
                        sent = time.monotonic()
                        try:
                            client.sendmail("load@sender.example", [to],
                                            message(to, message_id=message_id))
                        except smtplib.SMTPRecipientsRefused as refused:
                            (code, _), = refused.recipients.values()
                            load.note(sent, code, message_id)
                            break
                        except smtplib.SMTPResponseException as failed:
                            load.note(sent, failed.smtp_code, message_id)
                            break
                        load.note(sent, 250, message_id)
                        time.sleep(pause)
            except (OSError, smtplib.SMTPException) as lost:
                load.note(time.monotonic(), type(lost).__name__)
                time.sleep(0.1)

    return Load().run(send, count)


def api_callers(urls: list[str], headers: dict[str, str], count: int) -> Load:
    """`count` HTTP clients calling GET on `urls` in turn, 20 ms apart."""

    def call(load: Load) -> None:
        with requests.Session() as http:
            n = 0
            while not load.stopping:
                sent = time.monotonic()
                try:
                    status: int | str = http.get(urls[n % len(urls)], headers=headers,
                                                 timeout=15).status_code
                except requests.RequestException as lost:
                    status = type(lost).__name__
                load.note(sent, status)
                n += 1
                time.sleep(0.02)

    return Load().run(call, count)
