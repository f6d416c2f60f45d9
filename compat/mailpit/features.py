"""Mailpit's optional features over Burnbox's own: the HTML and link checks' results in
Mailpit's shapes, its chaos triggers as the scope's chaos rules, and its `send` body as a
message to put into the inbox (`models.mail.ingest.compose`).

- HTML check: the native check (`models.mail.checks.html_check`) per client family; Mailpit's
  `Platforms` and each warning's `Results` name the families, and `Total` is the mean over
  them of the native figures (its percentages), `Tests` and `Nodes` the features used.
- Link check: the native check (`models.mail.checks.link_check`, its SSRF guard and bounds);
  `StatusCode` is the first answer's, or after redirects with `follow`, `Status` its reason
  phrase or the native error.
- Chaos: Mailpit's `Recipient` trigger is a rule at RCPT TO, its `Sender` trigger a rule on the
  message (Burnbox's rules answer RCPT TO or DATA, not MAIL FROM), each replying `ErrorCode`
  for `Probability` percent of the messages; `Authentication` has no counterpart and must stay
  at probability 0. Reading them back reads the scope's rules of that shape.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from compat.mailpit import bodies
from models.errors import ValidationFailed
from models.mail.chaos import ChaosRule
from models.mail.ingest.compose import Composition, Part
from web.fields import Text

DEFAULT_ERROR_CODE = 451
# Mailpit's code of a trigger that names none: 451, and 535 for Authentication.
DEFAULT_CODES = {"Sender": 451, "Recipient": 451, "Authentication": 535}
# Mailpit's trigger -> the stage of the rule it becomes.
TRIGGER_STAGES = {"Sender": "data", "Recipient": "rcpt"}
TRIGGERS = ("Sender", "Recipient", "Authentication")


def html_check(native: dict[str, Any]) -> dict[str, Any]:
    """The native HTML check's result (`check_html`) in the shape of Mailpit's."""
    scores = native.get("scores", [])
    families = [score["family"] for score in scores]
    warnings = []
    for issue in native.get("issues", []):
        results = [{"Name": family, "Platform": family, "Family": family, "Version": "",
                    "Support": support, "NoteNumber": ""}
                   for support, names in (("no", issue["unsupported"]),
                                          ("partial", issue["partial"]))
                   for family in names]
        counted = len(families) or 1
        unsupported, partial = len(issue["unsupported"]), len(issue["partial"])
        warnings.append({
            "Slug": issue["slug"], "Title": issue["title"], "Description": "",
            "URL": issue["url"], "Category": issue["category"], "Tags": [], "Keywords": "",
            "Results": results, "NotesByNumber": dict(issue.get("notes", {})),
            "Score": {"Found": 1,
                      "Supported": round(100 * (counted - unsupported - partial) / counted, 2),
                      "Partial": round(100 * partial / counted, 2),
                      "Unsupported": round(100 * unsupported / counted, 2)}})
    used = native.get("features_used", 0)

    def mean(key: str) -> float:
        shares = [100 * score[key] / used for score in scores] if used else []
        return round(sum(shares) / len(shares), 2) if shares else 0.0

    return {"Warnings": warnings, "Platforms": {family: [family] for family in families},
            "Total": {"Tests": used, "Nodes": used, "Supported": mean("supported"),
                      "Partial": mean("partial"), "Unsupported": mean("unsupported")}}


def _phrase(code: int | None, error: str | None) -> str:
    if code is None:
        return error or "no answer"
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return str(code)


def link_check(native: dict[str, Any], follow: bool) -> dict[str, Any]:
    """The native link check's result (`run_link_check`) in the shape of Mailpit's."""
    links = []
    for link in native.get("links", []):
        code = link["final_status"] if follow else link["status"]
        links.append({"URL": link["href"], "StatusCode": code or 0,
                      "Status": _phrase(code, link["error"])})
    return {"Errors": sum(1 for link in native.get("links", []) if not link["ok"]),
            "Links": links}


def _trigger(value: Any, name: str) -> tuple[int, int]:
    """(error code, probability) of one trigger of a body; ValidationFailed when unreadable."""
    if value is None:
        return DEFAULT_ERROR_CODE, 0
    if not isinstance(value, Mapping):
        raise ValidationFailed(f"{name}: an object is expected")
    fields = bodies.fields(value)
    code, probability = fields.get("errorcode", 0), fields.get("probability", 0)
    if isinstance(code, bool) or not isinstance(code, int):
        raise ValidationFailed(f"{name}.ErrorCode: a number is expected")
    if isinstance(probability, bool) or not isinstance(probability, int):
        raise ValidationFailed(f"{name}.Probability: a number is expected")
    if not 0 <= probability <= 100:
        raise ValidationFailed(f"{name}.Probability must be between 0 and 100")
    code = code or DEFAULT_ERROR_CODE
    if not 400 <= code <= 599:
        raise ValidationFailed(f"{name}.ErrorCode must be between 400 and 599")
    return code, probability


def chaos_rules(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The scope's chaos rules for Mailpit's triggers (a body whose keys are lower-cased);
    ValidationFailed for an unreadable trigger or an `Authentication` one."""
    rules = []
    for name in TRIGGERS:
        code, probability = _trigger(body.get(name.lower()), name)
        if name == "Authentication":
            if probability:
                raise ValidationFailed("Authentication triggers are not supported: Burnbox's "
                                       "chaos rules answer RCPT TO or the message")
            continue
        if probability:
            rules.append({"stage": TRIGGER_STAGES[name], "action": "reply", "code": code,
                          "percent": probability})
    return rules


def chaos_triggers(rules: Sequence[ChaosRule]) -> dict[str, Any]:
    """Mailpit's triggers as the scope's rules stand: the first percent reply of each stage."""
    triggers = {name: {"ErrorCode": DEFAULT_CODES[name], "Probability": 0} for name in TRIGGERS}
    for name, stage in TRIGGER_STAGES.items():
        rule = next((rule for rule in rules if rule.stage == stage and rule.action == "reply"
                     and rule.percent is not None), None)
        if rule is not None:
            triggers[name] = {"ErrorCode": rule.code, "Probability": rule.percent}
    return triggers


def _address(value: Any, where: str) -> str:
    """`Name <email>` of one of Mailpit's `{Email, Name}` objects."""
    if not isinstance(value, Mapping):
        raise ValidationFailed(f"{where}: an object with Email is expected")
    fields = bodies.fields(value)
    email, name = fields.get("email"), fields.get("name") or ""
    if not isinstance(email, str) or not email.strip() or not isinstance(name, str):
        raise ValidationFailed(f"invalid {where} address")
    return f"{name} <{email}>" if name else email


def _attachment(value: Any) -> Part:
    if not isinstance(value, Mapping):
        raise ValidationFailed("Attachments: objects are expected")
    fields = bodies.fields(value)
    name = fields.get("filename")
    content = fields.get("content")
    if not isinstance(name, str) or not name or not isinstance(content, str):
        raise ValidationFailed("an attachment needs Filename and Content")
    try:
        data = base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationFailed(f'error decoding base64 attachment "{name}"') from None
    content_type = fields.get("contenttype") or "application/octet-stream"
    content_id = fields.get("contentid") or None
    if not isinstance(content_type, str) or not isinstance(content_id, str | None):
        raise ValidationFailed(f'invalid attachment "{name}"')
    return Part(filename=name, content_type=content_type, content=data,
                content_id=content_id, inline=content_id is not None)


def _checked_text(value: Any) -> None:
    """ValidationFailed when any string in `value` (a decoded JSON value) holds a character
    no stored text may (NUL and other controls but line breaks and tabs, lone surrogates)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            refused = Text.refusal(item)
            if refused is not None:
                raise ValidationFailed(f"invalid text: {refused}")
        elif isinstance(item, Mapping):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def composition(body: Mapping[str, Any]) -> Composition:
    """The message of Mailpit's `send` body (keys lower-cased); ValidationFailed, in Mailpit's
    words where it has them, for what cannot be read."""
    _checked_text(body)
    sender = body.get("from")
    if sender is None:
        raise ValidationFailed("From is required")
    headers = body.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
            isinstance(key, str) and isinstance(item, str) for key, item in headers.items()):
        raise ValidationFailed("Headers: an object of strings is expected")
    extra = list(headers.items())
    reply_to = [_address(item, "Reply-To") for item in bodies.typed(body, "ReplyTo", list, [])]
    if reply_to:
        extra.append(("Reply-To", ", ".join(reply_to)))
    tags = bodies.typed(body, "Tags", list, [])
    if not all(isinstance(tag, str) for tag in tags):
        raise ValidationFailed("Tags: an array of strings is expected")
    text, html = bodies.typed(body, "Text", str, ""), bodies.typed(body, "HTML", str, "")
    return Composition(
        sender=_address(sender, "From"),
        to=[_address(item, "To") for item in bodies.typed(body, "To", list, [])],
        cc=[_address(item, "Cc") for item in bodies.typed(body, "Cc", list, [])],
        subject=bodies.string(body, "Subject"), text=text or None, html=html or None,
        attachments=[_attachment(item) for item in bodies.typed(body, "Attachments", list, [])],
        headers=extra, tags=tags)
