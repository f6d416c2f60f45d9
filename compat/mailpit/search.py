"""Mailpit's search syntax, translated into Burnbox's (`models.mail.query`), so a compat search
runs the native search and nothing else.

Mailpit's terms and what they become:

| Mailpit | Burnbox |
|---|---|
| `word`, `"a phrase"` | the same: full text (whole words, where Mailpit matches substrings) |
| `!term`, `-term` | `-term` |
| `from:`, `to:`, `cc:`, `addressed:`, `subject:`, `tag:` | the same (`to:`: delivered address) |
| `message-id:` | the same: exactly that Message-ID, with or without its angle brackets |
| `is:read`, `is:unread`, `is:tagged`, `has:attachment`, `has:inline` | the same |
| `larger:N`, `smaller:N` | the same: the raw size, N with a unit such as `1M` or `20kb` |
| `before:D`, `after:D` | the same, D written `YYYY-MM-DD` |

The two terms Mailpit knows and Burnbox does not (`bcc:`, `reply-to:`: the stored e-mail keeps
no Bcc, and its Reply-To only inside its headers) are refused with `UnsupportedTerm` (a 400 in
Mailpit's shape) rather than matched differently; a malformed query raises the native
`QuerySyntaxError`.
"""

from __future__ import annotations

import re

from models.errors import ValidationFailed

# Operators read as they are by the native syntax, and the flags it shares with Mailpit.
SAME_OPERATORS = frozenset({"from", "to", "cc", "addressed", "subject", "tag", "before",
                            "after", "message-id", "larger", "smaller"})
SAME_FLAGS = frozenset({("is", "read"), ("is", "unread"), ("is", "tagged"),
                        ("has", "attachment"), ("has", "attachments"), ("has", "inline")})
_TERM = re.compile(r'([!-]?)(?:([A-Za-z-]+):)?("[^"]*"?|\S+)')


class UnsupportedTerm(ValidationFailed):
    """A term of Mailpit's syntax with no native counterpart."""


def translate(query: str) -> str:
    """The native query for Mailpit's `query`; UnsupportedTerm for a term it cannot express.
    Quotes are kept as written, so an unclosed one is the native parser's error."""
    terms = []
    for match in _TERM.finditer(query):
        negated, operator, value = match.group(1), match.group(2), match.group(3)
        prefix = "-" if negated else ""
        if operator is None:
            if value.startswith(("!", "-")):
                continue  # a negation sign standing alone
            terms.append(prefix + value)
            continue
        name = operator.lower()
        flag = (name, value.strip('"').lower())
        if name in SAME_OPERATORS or flag in SAME_FLAGS:
            terms.append(f"{prefix}{name}:{value}")
            continue
        raise UnsupportedTerm(f"unsupported search term {name}:{value} (docs/compat.md lists "
                              "the terms Burnbox supports)")
    return " ".join(terms)
