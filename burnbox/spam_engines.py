"""The spam engines an operator may point Burnbox at: SpamAssassin's `spamd` (the SPAMC
protocol over TCP) and rspamd (its HTTP `/checkv2`, JSON), each asked about one message at a
time and answering a score, the engine's threshold and the rules that fired.

The address comes from the `checks.spam_engine` setting: `spamd://host[:783]` or
`rspamd+http://host[:11333]` (`rspamd+https://` for TLS). Only the operator sets it (no tenant
can), so it is reached wherever it is, a private or loopback address included: a spam engine
normally runs beside the mail server, not on the internet. That is why these connections do not
go through the SSRF guard the way webhook and link-check requests do; nothing a tenant sends
can change where they go.

Every exchange is bounded: the message sent (the caller refuses larger ones, see
`checks.spam_engine_max_bytes`), the time (one deadline covers connecting, sending and the whole
answer, so a server that drips bytes cannot hold the worker past it) and the answer
(`MAX_REPLY` bytes). Anything that goes wrong is an `EngineError` with a sentence saying what.
"""

from __future__ import annotations

import json
import re
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from burnbox import http_client
from burnbox.netguard import TargetRefused
from burnbox.outbound_guard import SPAM_ENGINE, check_outbound

SPAMASSASSIN, RSPAMD = "spamassassin", "rspamd"
DEFAULT_PORTS = {"spamd": 783, "rspamd+http": 11333, "rspamd+https": 11333}
# Largest answer read from an engine: a report lists a few dozen rules in a few kilobytes.
MAX_REPLY = 256 * 1024
MAX_RULES = 200
MAX_DESCRIPTION = 300
SPAMC_VERSION = "SPAMC/1.5"


class EngineAddressError(ValueError):
    """A `checks.spam_engine` value that names no engine Burnbox can ask."""


class EngineError(Exception):
    """The engine could not be asked, or its answer could not be read."""


@dataclass(frozen=True)
class EngineAddress:
    """Where the engine listens and which protocol it speaks."""

    engine: str  # SPAMASSASSIN or RSPAMD
    host: str
    port: int
    tls: bool = False

    @property
    def url(self) -> str:
        """The rspamd base URL (http or https) of this address."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"


@dataclass(frozen=True)
class Rule:
    """One rule (SpamAssassin) or symbol (rspamd) that fired; `score` is None when the engine
    named it without its points."""

    name: str
    score: float | None
    description: str


@dataclass(frozen=True)
class Verdict:
    """The engine's answer about one message."""

    engine: str
    score: float
    threshold: float
    is_spam: bool
    rules: tuple[Rule, ...]
    action: str = ""  # rspamd's recommended action; empty for SpamAssassin


def parse_engine(value: str) -> EngineAddress | None:
    """The engine `value` names, None for an empty value; raise EngineAddressError for one that
    names no engine (another scheme, no host, a bad port, a path)."""
    value = value.strip()
    if not value:
        return None
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise EngineAddressError(f"{value!r} is not a valid address: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise EngineAddressError(f"{value!r}: use spamd://host:783 or rspamd+http://host:11333")
    if not parts.hostname:
        raise EngineAddressError(f"{value!r} names no host")
    if parts.path.strip("/") or parts.query or parts.fragment or parts.username:
        raise EngineAddressError(f"{value!r}: give only a host and a port")
    engine = SPAMASSASSIN if scheme == "spamd" else RSPAMD
    return EngineAddress(engine, parts.hostname, port or DEFAULT_PORTS[scheme],
                         tls=scheme == "rspamd+https")


def ask(address: EngineAddress, raw: bytes, *, timeout: float,
        facts: dict[str, str] | None = None) -> Verdict:
    """Ask the engine at `address` about the message `raw` within `timeout` seconds. `facts`
    (`ip`, `helo`, `mail_from` of the SMTP session, when known) go to rspamd, which weighs
    them; spamd reads only the message. Raise EngineError."""
    if address.engine == SPAMASSASSIN:
        return _ask_spamd(address, raw, timeout)
    return _ask_rspamd(address, raw, timeout, facts or {})


# --- SpamAssassin: the SPAMC protocol ------------------------------------------------------

_STATUS = re.compile(rb"SPAMD/(\d+\.\d+) +(\d+) +(.*)")
_SPAM_HEADER = re.compile(r"(true|false|yes|no) *; *(-?\d+(?:\.\d+)?) */ *(-?\d+(?:\.\d+)?)",
                          re.IGNORECASE)
# A row of the report's "Content analysis details" table: points, rule name, description.
_ROW = re.compile(r" *(-?\d+(?:\.\d+)?) +([A-Za-z0-9_.]+) +(.*)")
_CONTINUED = re.compile(r" {10,}(\S.*)")


def _ask_spamd(address: EngineAddress, raw: bytes, timeout: float) -> Verdict:
    """REPORT (the score and the table of rules with points and descriptions); when the
    operator's report template has no such table, SYMBOLS for the rules' names alone."""
    deadline = time.monotonic() + timeout
    headers, body = _spamc(address, "REPORT", raw, deadline)
    spam, score, threshold = _spam_header(headers)
    rules = _report_rules(body.decode("utf-8", "replace"))
    if rules is None:
        _headers, names = _spamc(address, "SYMBOLS", raw, deadline)
        rules = [Rule(name.strip(), None, "") for name in
                 names.decode("utf-8", "replace").split(",") if name.strip()]
    return Verdict(SPAMASSASSIN, score, threshold, spam, tuple(rules[:MAX_RULES]))


def _spamc(address: EngineAddress, command: str, raw: bytes, deadline: float
           ) -> tuple[dict[str, str], bytes]:
    """One SPAMC exchange: the answer's headers (names lower-cased) and body."""
    check_outbound(SPAM_ENGINE, address.host)
    request = (f"{command} {SPAMC_VERSION}\r\nContent-length: {len(raw)}\r\n"
               "User: burnbox\r\n\r\n").encode("ascii") + raw
    try:
        with socket.create_connection((address.host, address.port),
                                      timeout=_left(deadline)) as sock:
            sock.settimeout(_left(deadline))
            sock.sendall(request)
            sock.shutdown(socket.SHUT_WR)  # the whole message is sent; spamd answers and closes
            answer = _read_all(sock, deadline)
    except TimeoutError:
        raise EngineError("spamd gave no complete answer within the deadline") from None
    except OSError as exc:
        raise EngineError(f"spamd could not be reached: {exc.strerror or exc}") from None
    head, _sep, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.split(b"\r\n")
    status = _STATUS.fullmatch(status_line.strip())
    if status is None:
        raise EngineError("spamd's answer is not a SPAMD reply")
    if status.group(2) != b"0":
        raise EngineError("spamd refused the check: "
                          + status.group(3).decode("utf-8", "replace")[:MAX_DESCRIPTION])
    headers = {}
    for line in header_lines:
        name, _colon, value = line.decode("utf-8", "replace").partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, body


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _read_all(sock: socket.socket, deadline: float) -> bytes:
    """Everything the server sends until it closes, within the deadline and `MAX_REPLY`."""
    chunks: list[bytes] = []
    size = 0
    while True:
        sock.settimeout(_left(deadline))
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REPLY:
            raise EngineError(f"the answer is longer than {MAX_REPLY} bytes")
        chunks.append(chunk)


def _spam_header(headers: dict[str, str]) -> tuple[bool, float, float]:
    """(is spam, score, threshold) of the `Spam: True ; 8.4 / 5.0` header."""
    found = _SPAM_HEADER.fullmatch(headers.get("spam", ""))
    if found is None:
        raise EngineError("spamd's answer has no readable Spam header")
    return (found.group(1).lower() in ("true", "yes"), float(found.group(2)),
            float(found.group(3)))


def _report_rules(report: str) -> list[Rule] | None:
    """The rules of the report's table (a description that wraps continues on indented lines),
    None when the report has no table (a template of the operator's own)."""
    lines = report.splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith("---- ")), None)
    if start is None:
        return None
    rules: list[tuple[str, float, list[str]]] = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if (row := _ROW.fullmatch(line)) is not None:
            points = float(row.group(1)) + 0.0  # SpamAssassin prints -0.0: make it 0.0
            rules.append((row.group(2), points, [row.group(3).strip()]))
        elif rules and (more := _CONTINUED.fullmatch(line)) is not None:
            rules[-1][2].append(more.group(1).strip())
    found = [Rule(name, score, " ".join(words)[:MAX_DESCRIPTION]) for name, score, words in rules]
    return sorted(found, key=lambda rule: -(rule.score or 0))


# --- rspamd: HTTP /checkv2 -----------------------------------------------------------------

# rspamd's actions that mean "treat it as spam" (the others: "no action", "greylist").
SPAM_ACTIONS = frozenset({"reject", "rewrite subject", "add header", "soft reject"})


def _ask_rspamd(address: EngineAddress, raw: bytes, timeout: float,
                facts: dict[str, str]) -> Verdict:
    """POST the message to /checkv2 and read its JSON answer."""
    headers = {"Content-Type": "message/rfc822", "Accept": "application/json"}
    for name, key in (("IP", "ip"), ("Helo", "helo"), ("From", "mail_from")):
        if facts.get(key):
            headers[name] = facts[key]
    try:
        document = http_client.post_document(
            f"{address.url}/checkv2", raw, headers, timeout=timeout, allow_private=True,
            limit=MAX_REPLY)
    except http_client.OutboundTimeout:
        raise EngineError("rspamd gave no answer within the deadline") from None
    except (http_client.OutboundError, TargetRefused) as exc:
        raise EngineError(f"rspamd could not be asked: {exc}") from None
    if document.status != 200:
        raise EngineError(f"rspamd answered HTTP {document.status}")
    try:
        answer = json.loads(document.body)
        score, threshold = float(answer["score"]), float(answer["required_score"])
        action = str(answer.get("action", ""))
        symbols = answer.get("symbols") or {}
        rules = [Rule(str(name)[:MAX_DESCRIPTION], _number(symbol.get("score")),
                      str(symbol.get("description") or "")[:MAX_DESCRIPTION])
                 for name, symbol in symbols.items() if isinstance(symbol, dict)]
    except (ValueError, TypeError, KeyError, AttributeError):
        raise EngineError("rspamd's answer is not the JSON of /checkv2") from None
    rules.sort(key=lambda rule: -(rule.score or 0))
    return Verdict(RSPAMD, score, threshold, action in SPAM_ACTIONS, tuple(rules[:MAX_RULES]),
                   action)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None
