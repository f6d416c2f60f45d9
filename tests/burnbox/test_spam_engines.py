"""The spam engine clients (burnbox.spam_engines): SPAMC against a real spamd started by the
suite, and against scripted servers for what a healthy spamd never does (a silent server, an
endless answer, a refusal, a report template without the rules' table); rspamd's /checkv2
against a loopback HTTP server answering rspamd's JSON."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from burnbox.settings import SettingsError, load_settings
from burnbox.spam_engines import (
    MAX_REPLY,
    RSPAMD,
    SPAMASSASSIN,
    EngineAddress,
    EngineAddressError,
    EngineError,
    Rule,
    ask,
    parse_engine,
)

SPAMMY = (b"From: Winner <lotto@prizes.example>\r\nTo: you@burnbox.test\r\n"
          b"Subject: FREE VIAGRA NOW!!!\r\n\r\n"
          b"Buy cheap viagra now, click here to claim your prize.\r\n")
CLEAN = (b"From: Ann <ann@shop.example>\r\nTo: you@burnbox.test\r\nSubject: Your receipt\r\n"
         b"Date: Wed, 02 Dec 2026 01:00:00 +0000\r\nMessage-ID: <r1@shop.example>\r\n\r\n"
         b"Thank you for your order of two notebooks.\r\n")


@pytest.mark.parametrize(("value", "expected"), [
    ("", None),
    ("spamd://127.0.0.1", EngineAddress(SPAMASSASSIN, "127.0.0.1", 783)),
    ("spamd://spam.internal:7830", EngineAddress(SPAMASSASSIN, "spam.internal", 7830)),
    ("rspamd+http://[::1]:11334", EngineAddress(RSPAMD, "::1", 11334)),
    ("rspamd+https://rspamd.example", EngineAddress(RSPAMD, "rspamd.example", 11333, tls=True)),
])
def test_an_engine_address_names_the_protocol_host_and_port(value, expected):
    assert parse_engine(value) == expected


@pytest.mark.parametrize("value", ["http://host:783", "spamd://", "spamd://host:99999",
                                   "rspamd+http://host/checkv2", "spamd://user@host",
                                   "rspamd+http://host?x=1"])
def test_an_address_that_names_no_engine_is_refused(value):
    with pytest.raises(EngineAddressError):
        parse_engine(value)


def test_the_settings_refuse_an_engine_address_at_start():
    with pytest.raises(SettingsError, match=r"checks\.spam_engine"):
        load_settings({"BURNBOX_CHECKS__SPAM_ENGINE": "smtp://host:25"})
    assert load_settings({"BURNBOX_CHECKS__SPAM_ENGINE": "spamd://127.0.0.1:783"}
                         ).checks.spam_engine == "spamd://127.0.0.1:783"


# --- a real spamd ----------------------------------------------------------------------------

def test_spamd_scores_a_spammy_message_with_its_rules_and_their_descriptions(spamd):
    verdict = ask(parse_engine(spamd), SPAMMY, timeout=30)
    assert verdict.engine == SPAMASSASSIN
    assert verdict.is_spam and verdict.score >= verdict.threshold == 5.0
    rules = {rule.name: rule for rule in verdict.rules}
    assert rules["MISSING_DATE"].description == "Missing Date: header"
    assert rules["MISSING_DATE"].score > 0
    # The rules are the score: their points add up to it (as spamd rounds them).
    assert sum(rule.score for rule in verdict.rules) == pytest.approx(verdict.score, abs=0.15)
    assert [rule.score for rule in verdict.rules] == sorted(
        (rule.score for rule in verdict.rules), reverse=True)


def test_spamd_lets_a_clean_message_through(spamd):
    verdict = ask(parse_engine(spamd), CLEAN, timeout=30)
    assert not verdict.is_spam and verdict.score < verdict.threshold
    assert "MISSING_DATE" not in {rule.name for rule in verdict.rules}


def test_nothing_listening_is_an_engine_error():
    address = EngineAddress(SPAMASSASSIN, "127.0.0.1", _closed_port())
    with pytest.raises(EngineError, match="could not be reached"):
        ask(address, CLEAN, timeout=5)


# --- scripted SPAMC servers ------------------------------------------------------------------

@contextmanager
def spamc_server(answer: Callable[[bytes, socket.socket], None]) -> Iterator[EngineAddress]:
    """A TCP server on loopback that reads each request to its end and lets `answer` reply."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                request = b""
                while chunk := conn.recv(65536):
                    request += chunk
                with contextlib.suppress(OSError):  # the client gave up (a timeout test)
                    answer(request, conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield EngineAddress(SPAMASSASSIN, "127.0.0.1", listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _reply(body: str, spam: str = "True ; 6.1 / 5.0") -> bytes:
    data = body.encode()
    return (f"SPAMD/1.1 0 EX_OK\r\nContent-length: {len(data)}\r\nSpam: {spam}\r\n\r\n"
            ).encode() + data


WRAPPED_REPORT = """Content analysis details:   (6.1 points, 5.0 required)

 pts rule name              description
---- ---------------------- --------------------------------------------------
 3.5 BAYES_99               BODY: Bayes spam probability is 99 to 100%
                            [score: 1.0000]
 2.6 HTML_IMAGE_ONLY_08     BODY: HTML: images with 400-800 bytes of words
-0.0 NO_RELAYS              Informational: message was not relayed via SMTP

"""


def test_a_wrapped_description_continues_on_the_indented_line():
    requests: list[bytes] = []

    def answer(request: bytes, conn: socket.socket) -> None:
        requests.append(request)
        conn.sendall(_reply(WRAPPED_REPORT))

    with spamc_server(answer) as address:
        verdict = ask(address, CLEAN, timeout=5)
    head, _, body = requests[0].partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"REPORT SPAMC/1.5"
    assert f"Content-length: {len(CLEAN)}".encode() in head and body == CLEAN
    assert verdict.rules == (
        Rule("BAYES_99", 3.5, "BODY: Bayes spam probability is 99 to 100% [score: 1.0000]"),
        Rule("HTML_IMAGE_ONLY_08", 2.6, "BODY: HTML: images with 400-800 bytes of words"),
        Rule("NO_RELAYS", 0.0, "Informational: message was not relayed via SMTP"))
    assert (verdict.score, verdict.threshold, verdict.is_spam) == (6.1, 5.0, True)


def test_a_report_without_the_table_asks_for_the_rule_names():
    commands: list[bytes] = []

    def answer(request: bytes, conn: socket.socket) -> None:
        commands.append(request.split(b" ")[0])
        body = "a template of the operator's own" if commands[-1] == b"REPORT" else \
            "BAYES_99,MISSING_DATE"
        conn.sendall(_reply(body))

    with spamc_server(answer) as address:
        verdict = ask(address, CLEAN, timeout=5)
    assert commands == [b"REPORT", b"SYMBOLS"]
    assert verdict.rules == (Rule("BAYES_99", None, ""), Rule("MISSING_DATE", None, ""))


@pytest.mark.parametrize(("reply", "message"), [
    (b"SPAMD/1.0 76 Bad header line: (Content-Length contains non-numeric bytes)\r\n",
     "refused the check: Bad header line"),
    (b"HTTP/1.1 200 OK\r\n\r\n", "not a SPAMD reply"),
    (b"SPAMD/1.1 0 EX_OK\r\nContent-length: 0\r\n\r\n", "no readable Spam header"),
])
def test_an_answer_that_is_not_a_verdict_is_an_engine_error(reply, message):
    with spamc_server(lambda _request, conn: conn.sendall(reply)) as address, \
            pytest.raises(EngineError, match=message):
        ask(address, CLEAN, timeout=5)


def test_an_endless_answer_stops_at_the_bound():
    def answer(_request: bytes, conn: socket.socket) -> None:
        conn.sendall(_reply("x" * (MAX_REPLY + 1)))

    with spamc_server(answer) as address, \
            pytest.raises(EngineError, match=f"longer than {MAX_REPLY} bytes"):
        ask(address, CLEAN, timeout=5)


def test_a_server_that_never_answers_is_given_up_at_the_deadline():
    def answer(_request: bytes, conn: socket.socket) -> None:
        conn.sendall(b"SPAMD/1.1 0 EX_OK\r\n")  # then nothing, the connection left open
        time.sleep(3)

    with spamc_server(answer) as address, \
            pytest.raises(EngineError, match="no complete answer within the deadline"):
        ask(address, CLEAN, timeout=0.5)


# --- rspamd's /checkv2 -----------------------------------------------------------------------

# The shape of rspamd 3.x's /checkv2 answer (symbols keyed by name, each with its score and,
# for most, a description).
RSPAMD_ANSWER = {
    "is_skipped": False, "score": 9.4, "required_score": 15.0, "action": "add header",
    "symbols": {
        "MISSING_DATE": {"name": "MISSING_DATE", "score": 1.0, "metric_score": 1.0,
                         "description": "Date header is missing"},
        "R_SPF_NA": {"name": "R_SPF_NA", "score": 0.0, "metric_score": 0.0,
                     "description": "Missing SPF record", "options": ["no SPF record"]},
        "FAKE_REPLY": {"name": "FAKE_REPLY", "score": 8.4, "metric_score": 8.4},
    },
    "message-id": "r1@shop.example", "time_real": 0.01, "milter": {"remove_headers": {}},
}


@contextmanager
def rspamd_server(status: int, body: bytes) -> Iterator[tuple[EngineAddress, list[dict]]]:
    """A loopback HTTP server answering every POST with `status` and `body`, keeping what it
    was sent."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            seen.append({"path": self.path, "headers": dict(self.headers),
                         "body": self.rfile.read(length)})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield EngineAddress(RSPAMD, "127.0.0.1", server.server_address[1]), seen
    finally:
        server.shutdown()
        server.server_close()


def test_rspamd_is_asked_over_http_with_the_session_facts():
    with rspamd_server(200, json.dumps(RSPAMD_ANSWER).encode()) as (address, seen):
        verdict = ask(address, CLEAN, timeout=5, facts={
            "ip": "203.0.113.7", "helo": "mx.shop.example", "mail_from": "bounce@shop.example"})
    [request] = seen
    assert (request["path"], request["body"]) == ("/checkv2", CLEAN)
    assert (request["headers"]["IP"], request["headers"]["Helo"], request["headers"]["From"]) == (
        "203.0.113.7", "mx.shop.example", "bounce@shop.example")
    assert (verdict.engine, verdict.score, verdict.threshold, verdict.action, verdict.is_spam) == (
        RSPAMD, 9.4, 15.0, "add header", True)
    assert verdict.rules == (Rule("FAKE_REPLY", 8.4, ""),
                             Rule("MISSING_DATE", 1.0, "Date header is missing"),
                             Rule("R_SPF_NA", 0.0, "Missing SPF record"))


@pytest.mark.parametrize(("status", "body", "message"), [
    (500, b"{}", "answered HTTP 500"),
    (200, b"<html>not rspamd</html>", "not the JSON of /checkv2"),
    (200, b'{"score": "high"}', "not the JSON of /checkv2"),
    (200, b"[1, 2]", "not the JSON of /checkv2"),
])
def test_an_rspamd_answer_that_is_not_a_verdict_is_an_engine_error(status, body, message):
    with rspamd_server(status, body) as (address, _seen), \
            pytest.raises(EngineError, match=message):
        ask(address, CLEAN, timeout=5)


def test_an_rspamd_answer_beyond_the_bound_is_an_engine_error():
    with rspamd_server(200, b" " * (MAX_REPLY + 1)) as (address, _seen), \
            pytest.raises(EngineError, match="could not be asked: the answer is longer"):
        ask(address, CLEAN, timeout=5)
