"""The search syntax of e-mail lists (`?q=`): one parser, compiled to SQL that gives the same
results on SQLite and PostgreSQL.

    from:alice  to:qa+1  cc:bob  subject:"your code"  has:attachment  has:inline  is:read
    is:unread  is:tagged  before:2026-11-24  after:2026-11-01  larger:1M  smaller:20k
    message-id:abc@host  code:482913  "exact phrase"  -word  -from:noreply

- Terms are separated by spaces and must all hold; `-` before a term negates it.
- A plain word or "quoted phrase" is full text over the subject and the text body (and the
  From address): whole words, case-blind, no stemming, through the full-text index of migration
  0007 (`to_tsvector('simple', ...)` on PostgreSQL, the FTS5 table `emails_fts` on SQLite); it
  also matches as a substring of the From address. A word without letters or digits matches
  everything and is skipped.
- `from:`, `to:` (the inbox address it was delivered to), `cc:` (any Cc address) and
  `subject:` are substrings,
  case-blind (ASCII case on SQLite), their `%` and `_` matched literally; `addressed:` is such
  a substring of any address of the e-mail (From, the delivered address, Cc, and the envelope
  recipients of mail sent with capture credentials).
- `message-id:X` is the e-mail whose Message-ID header is X, exactly, written with or without
  its angle brackets.
- `has:attachment` has attachments, `has:inline` an inline part (an image the HTML shows);
  `is:read`, `is:unread`, and `is:tagged` one carrying any tag.
- `larger:N` and `smaller:N` compare the raw message's size with N bytes, strictly; N may end
  in a unit as people write sizes: `k`/`kb` (1,000), `m`/`mb`, `g`/`gb`, and `kib` (1,024),
  `mib`, `gib`, any case: `larger:1M` is over 1,000,000 bytes.
- `before:D` is received before D 00:00 UTC, `after:D` on D or later (D is YYYY-MM-DD), so
  `after:D before:D+1` is the day D.
- `code:X` is an e-mail whose extracted codes (models.mail.ingest.extract) include X exactly.
- `spf:R`, `dkim:R`, `dmarc:R` are e-mails whose authentication verdict is R (pass, fail,
  softfail, neutral, none, temperror, permerror; models.mail.checks.authentication), or whose
  results are not computed yet (`pending`). `dkim:` is the e-mail's one DKIM verdict: pass when any
  signature passed.
- `tag:T` is an e-mail carrying the tag T (case-blind, models.mail.tag_entities):
  `tag:checkout`, `tag:"two words"`; `-tag:T` one without it.
- An operator's value may be quoted: `subject:"sign in"`.

A malformed query (an unclosed quote, an unknown operator or value, a missing value, a bad date)
raises ValidationFailed naming the 0-based offset of the fault in `q`; a word with a colon that
is not an operator is written in quotes ("https://..."). `filter_emails` is the entry point.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BindParameter,
    Boolean,
    ColumnElement,
    Select,
    String,
    Text,
    cast,
    exists,
    func,
    literal,
    not_,
    or_,
    select,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler

from models.errors import ValidationFailed
from models.mail.entities import PENDING, RESULTS, Attachment, Email
from models.mail.tag_entities import has_any_tag, has_tag, search_key
from models.search import contains

# Kept identical to the expression index of migration 0007, or PostgreSQL will not use it.
PG_SEARCH_DOCUMENT = (
    "to_tsvector('simple'::regconfig, left(coalesce(emails.subject, '') || ' ' || "
    "coalesce(emails.from_address, '') || ' ' || coalesce(emails.body_text, ''), 100000))")
TEXT_OPERATORS = {"from": Email.from_address, "to": Email.to_address, "subject": Email.subject,
                  "cc": cast(Email.cc, Text)}
# Every address an e-mail names, for `addressed:` (the lists as their JSON text).
ADDRESSED = (Email.from_address, Email.to_address, TEXT_OPERATORS["cc"],
             cast(Email.envelope_to, Text))
FLAG_OPERATORS = {("has", "attachment"), ("has", "attachments"), ("has", "inline"),
                  ("is", "read"), ("is", "unread"), ("is", "tagged")}
DATE_OPERATORS = ("before", "after")
SIZE_OPERATORS = ("larger", "smaller")
SIZE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
              "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}
_SIZE = re.compile(r"(\d{1,15})\s*([a-z]*)")
# `emails.size_bytes` is a 32-bit integer: PostgreSQL refused a larger bound ("integer out of
# range", a 500). No stored size exceeds the column, so this bound changes no result.
MAX_SIZE = 2**31 - 1
AUTH_OPERATORS = {"spf": Email.auth_spf, "dkim": Email.auth_dkim, "dmarc": Email.auth_dmarc}
AUTH_VALUES = frozenset({*RESULTS, PENDING})
OPERATORS = frozenset({*TEXT_OPERATORS, "addressed", "has", "is", *DATE_OPERATORS, "code",
                       *AUTH_OPERATORS, "tag", "message-id", *SIZE_OPERATORS})
_OPERATOR = re.compile(r"([A-Za-z_][A-Za-z_-]*):")
_WORD_CHARACTER = re.compile(r"\w")


@dataclass(frozen=True)
class Term:
    """One term of a query: `operator` is None for full text; `value` is unquoted."""

    operator: str | None
    value: str
    negated: bool = False


class QuerySyntaxError(ValidationFailed):
    """The query cannot be read; `offset` is where in it (0-based)."""

    def __init__(self, reason: str, offset: int) -> None:
        message = f"{reason} at offset {offset}"
        super().__init__(f"invalid search query: {message}", details={"q": [message]})
        self.offset = offset


def parse_query(q: str) -> list[Term]:
    """The terms of `q`, in order; QuerySyntaxError when it is malformed."""
    terms: list[Term] = []
    pos, size = 0, len(q)
    while pos < size:
        if q[pos].isspace():
            pos += 1
            continue
        negated = q[pos] == "-"
        pos += negated
        if pos >= size or q[pos].isspace():
            continue  # a lone "-" negates nothing
        operator = _OPERATOR.match(q, pos)
        if operator is None:
            value, pos = _value(q, pos)
            terms.append(Term(None, value, negated))
            continue
        name, value_at = operator.group(1).lower(), operator.end()
        if name not in OPERATORS:
            raise QuerySyntaxError(f"unknown operator {name}:", pos)
        if value_at >= size or q[value_at].isspace():
            raise QuerySyntaxError(f"{name}: needs a value", value_at)
        value, pos = _value(q, value_at)
        terms.append(_checked(Term(name, value, negated), value_at))
    return terms


def _value(q: str, pos: int) -> tuple[str, int]:
    """The word or quoted phrase starting at `pos`, and the position after it."""
    if q[pos] == '"':
        close = q.find('"', pos + 1)
        if close < 0:
            raise QuerySyntaxError("unclosed quote", pos)
        return q[pos + 1:close], close + 1
    end = pos
    while end < len(q) and not q[end].isspace():
        end += 1
    return q[pos:end], end


def _checked(term: Term, offset: int) -> Term:
    operator, value = term.operator, term.value
    if operator in ("has", "is") and (operator, value.lower()) not in FLAG_OPERATORS:
        raise QuerySyntaxError(f"unknown value {operator}:{value}", offset)
    if operator in DATE_OPERATORS:
        _date(value, offset)
    if operator in SIZE_OPERATORS:
        _size(value, offset)
    if operator in AUTH_OPERATORS and value.lower() not in AUTH_VALUES:
        raise QuerySyntaxError(f"unknown value {operator}:{value} (one of "
                               f"{', '.join(sorted(AUTH_VALUES))})", offset)
    if not value.strip():
        raise QuerySyntaxError(f"{operator}: needs a value", offset)
    return term


def _date(value: str, offset: int) -> datetime:
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(value)
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise QuerySyntaxError(f"bad date {value!r} (YYYY-MM-DD)", offset) from None


def _size(value: str, offset: int) -> int:
    match = _SIZE.fullmatch(value.strip().lower())
    if match is None or match.group(2) not in SIZE_UNITS:
        raise QuerySyntaxError(f"bad size {value!r} (a number of bytes, or with k, m, g, kib, "
                               "mib or gib)", offset)
    return min(int(match.group(1)) * SIZE_UNITS[match.group(2)], MAX_SIZE)


def filter_emails(query: Select[Any], q: str) -> Select[Any]:
    """`query` (a select over `Email`) narrowed to the e-mails matching `q`; `q` without terms
    leaves it as it is. QuerySyntaxError (a ValidationFailed) for a malformed `q`."""
    for term in parse_query(q):
        condition = _condition(term)
        if condition is not None:
            query = query.where(not_(condition) if term.negated else condition)
    return query


def _condition(term: Term) -> ColumnElement[bool] | None:
    operator, value = term.operator, term.value
    if operator is None:
        if not _WORD_CHARACTER.search(value):
            return None
        # The index splits a sender's address into words on SQLite but keeps it one word on
        # PostgreSQL; a substring of the address matches on both alike.
        return or_(contains(func.lower(Email.from_address), value.lower()), _PerDialect(
            sqlite="emails.rowid IN (SELECT rowid FROM emails_fts WHERE emails_fts MATCH {value})",
            postgresql=f"{PG_SEARCH_DOCUMENT} @@ phraseto_tsquery('simple'::regconfig, {{value}})",
            # One FTS5 phrase: nothing typed can be FTS5 syntax.
            value={"sqlite": '"' + value.replace('"', '""') + '"', "postgresql": value}))
    if operator in TEXT_OPERATORS:
        return contains(func.lower(TEXT_OPERATORS[operator]), value.lower())
    if operator == "addressed":
        return or_(*(contains(func.lower(column), value.lower()) for column in ADDRESSED))
    if operator == "has":
        if value.lower() == "inline":
            return exists(select(Attachment.id).where(Attachment.email_id == Email.id,
                                                      Attachment.inline.is_(True)))
        return Email.has_attachments.is_(True)
    if operator == "is":
        return has_any_tag() if value.lower() == "tagged" else Email.is_read.is_(
            value.lower() == "read")
    if operator == "message-id":
        bare = value.strip().removeprefix("<").removesuffix(">")
        return Email.message_id.in_([bare, f"<{bare}>"])
    if operator in SIZE_OPERATORS:
        size = _size(value, 0)
        return Email.size_bytes > size if operator == "larger" else Email.size_bytes < size
    if operator in AUTH_OPERATORS:
        column = AUTH_OPERATORS[operator]
        return column.is_(None) if value.lower() == PENDING else column == value.lower()
    if operator == "tag":
        return has_tag(search_key(value))
    if operator in DATE_OPERATORS:
        day = _date(value, 0)
        return Email.received_at < day if operator == "before" else Email.received_at >= day
    return _PerDialect(
        sqlite="EXISTS (SELECT 1 FROM json_each(emails.codes) WHERE json_each.value = {value})",
        postgresql="emails.codes @> CAST({value} AS jsonb)",
        value={"sqlite": value, "postgresql": json.dumps([value])})


class _PerDialect(ColumnElement[bool]):
    """A condition whose SQL differs between SQLite and PostgreSQL: a template per dialect with
    `{value}` where the dialect's bound value goes."""

    inherit_cache = False  # the templates are not part of SQLAlchemy's cache key
    type = Boolean()

    def __init__(self, *, sqlite: str, postgresql: str, value: dict[str, str]) -> None:
        self.templates = {"sqlite": sqlite, "postgresql": postgresql}
        self.values: dict[str, BindParameter[str]] = {
            dialect: literal(text, String()) for dialect, text in value.items()}


@compiles(_PerDialect)
def _compile_per_dialect(element: _PerDialect, compiler: SQLCompiler, **kw: Any) -> str:
    dialect = "postgresql" if compiler.dialect.name == "postgresql" else "sqlite"
    value = compiler.process(element.values[dialect], **kw)
    return "(" + element.templates[dialect].format(value=value) + ")"


def field_condition(field: str | None, text: str) -> ColumnElement[bool] | None:
    """What one term of the syntax matches, for a face whose peer names the field and the text
    apart instead of writing a query: `field` None is full text, `from`, `to`, `cc` or
    `subject` a substring of that field, `text` taken whole (no quotes, operators or negation
    read in it); None when it matches every e-mail (full text without a letter or digit).
    ValueError for any other field."""
    if field is not None and field not in TEXT_OPERATORS:
        raise ValueError(f"not a text field: {field}")
    return _condition(Term(field, text))
