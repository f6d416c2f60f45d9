"""Why an e-mail has its spam score: the signals found at ingest (models.mail.parse), each with
its points and a sentence saying what it means."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from models.mail.parse import MANY_RECIPIENTS, MAX_SUSPICIOUS_WORDS, SPAM_WEIGHTS

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
