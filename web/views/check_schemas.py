"""The e-mail detail's checks that a spam engine, the unsubscribe headers and the attachments'
checksums answer (models.mail.checks): their schemas, kept out of the e-mails' module."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields

from models.mail.checks.checksums import checksums_of
from models.mail.checks.spam_engine import STATUSES, spam_engine_of
from models.mail.checks.unsubscribe import check_unsubscribe


class EngineRuleSchema(Schema):
    """A rule (SpamAssassin) or symbol (rspamd) that fired."""

    name = fields.String(required=True)
    score = fields.Float(required=True, allow_none=True, metadata={
        "description": "its points (null when the engine named it without them)"})
    description = fields.String(required=True, metadata={
        "description": "the engine's own description; empty when it has none"})


class SpamEngineSchema(Schema):
    """What the operator's spam engine (SpamAssassin's spamd or rspamd) said of the message."""

    status = fields.String(required=True, metadata={
        "enum": list(STATUSES),
        "description": "pending until the engine answers; done; skipped (larger than the "
                       "engine's size limit); error (the engine could not be asked: see "
                       "reason)"})
    engine = fields.String(required=True, allow_none=True, metadata={
        "enum": ["spamassassin", "rspamd", None]})
    score = fields.Float(required=True, allow_none=True)
    threshold = fields.Float(required=True, allow_none=True, metadata={
        "description": "the score from which the engine calls it spam (rspamd: its reject "
                       "score)"})
    is_spam = fields.Boolean(required=True, allow_none=True)
    action = fields.String(required=True, metadata={
        "description": "rspamd's recommended action (no action, greylist, add header, "
                       "rewrite subject, soft reject, reject); empty for SpamAssassin"})
    rules = fields.List(fields.Nested(EngineRuleSchema), required=True, metadata={
        "description": "the rules that fired, highest score first"})
    checked_at = fields.String(required=True, allow_none=True, metadata={
        "description": "when the engine was asked (ISO 8601)"})
    reason = fields.String(required=True, metadata={
        "description": "why it was skipped or failed; empty otherwise"})


class SpamEngineField(fields.Nested):
    """The e-mail's `spam_engine`: null when no engine was asked about it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(SpamEngineSchema, required=True, allow_none=True, metadata={
            "description": "the spam engine's own verdict, when the operator configured one "
                           "(null otherwise); Burnbox's heuristics stay in spam_score and "
                           "spam_reasons"}, **kwargs)

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return spam_engine_of(obj)


class UnsubscribeLinkSchema(Schema):
    uri = fields.String(required=True)
    scheme = fields.String(required=True, metadata={"description": "mailto, https, http..."})
    valid = fields.Boolean(required=True, metadata={
        "description": "a client could use it (a mailto address, an http(s) URL with a host)"})


class ListUnsubscribeSchema(Schema):
    """The List-Unsubscribe (RFC 2369) and List-Unsubscribe-Post (RFC 8058) headers, checked."""

    header = fields.String(required=True, allow_none=True, metadata={
        "description": "the List-Unsubscribe value (null when only the Post header is there)"})
    post = fields.String(required=True, allow_none=True, metadata={
        "description": "the List-Unsubscribe-Post value, null without one"})
    links = fields.List(fields.Nested(UnsubscribeLinkSchema), required=True)
    one_click = fields.Boolean(required=True, metadata={
        "description": "RFC 8058 one-click is offered: an https URI and "
                       "`List-Unsubscribe-Post: List-Unsubscribe=One-Click`"})
    problems = fields.List(fields.String(), required=True, metadata={
        "description": "what a mail client would object to, in words; empty when none"})


class ListUnsubscribeField(fields.Nested):
    """The e-mail's `list_unsubscribe`: null without the headers."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(ListUnsubscribeSchema, required=True, allow_none=True, metadata={
            "description": "the unsubscribe headers checked; null when the message has none"},
            **kwargs)

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return check_unsubscribe(obj.headers)


class ChecksumsSchema(Schema):
    md5 = fields.String(required=True)
    sha1 = fields.String(required=True)
    sha256 = fields.String(required=True)


class ChecksumsField(fields.Nested):
    """An attachment's `checksums`: null until the worker computed them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(ChecksumsSchema, required=True, allow_none=True, metadata={
            "description": "MD5, SHA-1 and SHA-256 of the bytes (hex); null for a moment after "
                           "arrival, until the worker has computed them"}, **kwargs)

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return checksums_of(obj)
