"""The spam score of incoming mail: the signals a message shows, the points each is worth, and
the sentence that says what it means (the reasons an e-mail's detail lists).

The parser (models.mail.ingest.parse) reads the message's fields and asks `spam_signals` which
signals they show; the score is `spam_score` of those, and the stored signals give the reasons
(`spam_reasons`) whenever they are read again."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

# Points per signal; the sum is capped at 10. docs/mail-parsing.md explains each one.
SPAM_WEIGHTS = {
    "upstream_flag": 5.0,  # X-Spam-Flag: YES or X-Spam-Status: Yes from an upstream filter
    "missing_message_id": 1.0,
    "missing_date": 1.0,  # missing or unreadable
    "missing_from": 1.0,
    "reply_to_mismatch": 1.0,  # Reply-To domain differs from the From domain
    "return_path_mismatch": 0.5,  # Return-Path domain differs (bulk senders often do this)
    "all_caps_subject": 1.0,  # at least 6 letters, none lower case
    "exclamations": 1.0,  # three or more '!' in the subject
    "html_only": 0.5,  # an HTML body and no text body
    "many_recipients": 1.0,  # more than MANY_RECIPIENTS addresses in To and Cc
    "suspicious_word": 0.5,  # per distinct phrase, at most MAX_SUSPICIOUS_WORDS counted
}
MANY_RECIPIENTS = 20
MAX_SUSPICIOUS_WORDS = 4
SPAM_SCAN_CHARS = 20_000  # characters of subject + body searched for suspicious phrases
SUSPICIOUS_PHRASES = (
    "viagra", "cialis", "casino", "lottery", "jackpot", "you have won", "winner", "free money",
    "cash prize", "million dollars", "inheritance", "wire transfer", "western union", "bitcoin",
    "crypto investment", "double your", "earn money", "work from home", "make money fast",
    "click here", "act now", "limited time", "100% free", "risk-free", "no credit check",
    "verify your account", "account suspended", "password expired", "urgent response",
)
_SUSPICIOUS = re.compile(r"\b(" + "|".join(re.escape(p) for p in SUSPICIOUS_PHRASES) + r")(?!\w)")


def _domain(address: str) -> str:
    """The last two labels of an address's domain, lower case ('mail.example.com' ->
    'example.com'); a cheap stand-in for the registrable domain."""
    domain = address.rpartition("@")[2].strip(" .<>").lower()
    return ".".join(domain.split(".")[-2:])


def spam_score(signals: Iterable[str]) -> float:
    """Sum of SPAM_WEIGHTS for `signals`, capped at 10, one decimal."""
    return round(min(10.0, sum((SPAM_WEIGHTS[signal] for signal in signals), 0.0)), 1)


def spam_signals(*, upstream_flags: Iterable[str], message_id: str, date: datetime | None,
                 from_address: str, reply_to: str, return_path: str, subject: str,
                 body_text: str, body_html: str, recipients: int, readable: str
                 ) -> tuple[str, ...]:
    """The SPAM_WEIGHTS signals the message shows, in a fixed order ("suspicious_word" once
    per phrase counted). The arguments are the message's fields as parsed: `upstream_flags`
    the texts of its X-Spam-Flag and X-Spam-Status fields ("" for one it lacks), `reply_to`
    and `return_path` the first address of those fields ("" when none), `readable` the body
    as text (the text body, else the HTML body's text)."""
    signals: list[str] = []
    if any(flag.lower().startswith("yes") for flag in upstream_flags):
        signals.append("upstream_flag")
    if not message_id:
        signals.append("missing_message_id")
    if date is None:
        signals.append("missing_date")
    if not from_address:
        signals.append("missing_from")
    sender = _domain(from_address)
    for other, signal in ((reply_to, "reply_to_mismatch"), (return_path, "return_path_mismatch")):
        if sender and other and _domain(other) != sender:
            signals.append(signal)
    letters = [ch for ch in subject if ch.isalpha()]
    if len(letters) >= 6 and not any(ch.islower() for ch in letters):
        signals.append("all_caps_subject")
    if subject.count("!") >= 3:
        signals.append("exclamations")
    if body_html and not body_text.strip():
        signals.append("html_only")
    if recipients > MANY_RECIPIENTS:
        signals.append("many_recipients")
    scanned = (subject + "\n" + readable[:SPAM_SCAN_CHARS]).lower()
    # The regex tries every alternative at every word start; plain substring searches are
    # several times faster, and the regex can only match where one of them found its phrase.
    for phrase in SUSPICIOUS_PHRASES:
        if phrase in scanned:
            phrases = {match.group(1) for match in _SUSPICIOUS.finditer(scanned)}
            signals.extend(["suspicious_word"] * min(len(phrases), MAX_SUSPICIOUS_WORDS))
            break
    return tuple(signals)


DESCRIPTIONS = {
    "upstream_flag": "an upstream filter marked it as spam (X-Spam-Flag or X-Spam-Status: yes)",
    "missing_message_id": "no Message-ID header",
    "missing_date": "no Date header, or one that cannot be read",
    "missing_from": "no From address",
    "reply_to_mismatch": "the Reply-To domain differs from the From domain",
    "return_path_mismatch": "the Return-Path domain differs from the From domain",
    "all_caps_subject": "the subject is written in capitals only",
    "exclamations": "three or more '!' in the subject",
    "html_only": "an HTML body without a text body",
    "many_recipients": f"more than {MANY_RECIPIENTS} addresses in To and Cc",
    "suspicious_word": "phrases common in spam in the subject or body (each distinct phrase "
                       f"counts, at most {MAX_SUSPICIOUS_WORDS})",
}


def spam_reasons(signals: Sequence[str] | None) -> list[dict[str, Any]] | None:
    """One entry per signal found, in the order found: `name`, `points` (its weight times the
    times it counted: the score is their sum, capped at 10), `count` and `description`. None
    for mail stored before signals were kept; an empty list for a score of 0."""
    if signals is None:
        return None
    counts = Counter(signals)
    return [{"name": name, "count": count, "points": SPAM_WEIGHTS.get(name, 0.0) * count,
             "description": DESCRIPTIONS.get(name, name)} for name, count in counts.items()]
