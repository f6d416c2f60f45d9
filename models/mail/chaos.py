"""Chaos rules: an inbox that makes the SMTP server fail on purpose, so that a team can test
its application's retry paths.

A rule belongs to an inbox, or to a domain assignment (then it is a template: a catch-all
assignment's new inboxes get a copy of its rules, `copy_assignment_rules`; it never fires
itself). A rule has:

- a `stage`: `rcpt` (it answers the RCPT TO of that inbox's address only; the other recipients
  of the same transaction are unaffected) or `data` (it answers the end of DATA);
- an `action`: `reply` with `code` (4xx or 5xx), an enhanced `status` (default `4.3.0` or
  `5.3.0`, same class as the code) and a `text` (default "Chaos rule"); `delay` the reply by
  `delay_seconds` (`MIN_DELAY` to `MAX_DELAY`, in whole milliseconds) and then carry on as
  usual; or `close` the
  connection (after a `421`, as RFC 5321 asks of a server that closes);
- a trigger: the next `times` messages (then the rule is spent, and stays listed with
  `spent` true until the rules are set again or cleared), or `percent` (0-100) of them.

Every firing adds one to the rule's `fired` counter and sets `last_fired_at`, with one UPDATE
that only matches while a `times` rule is not spent: several mailin processes share a rule
and it still fires exactly `times` times. A message a rule refused is not stored, so it is
neither an e-mail nor counted as received; a 4xx retried after the rule is spent is stored
once, like any message.

Mailin reads the rules under `CHAOS_REVISION_KEY` (moved by every committed write of
`chaos_rules`, models.caching.REVISIONS): one read of the revision per SMTP transaction, and a
database read only when it moved (`active_rules`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, String, delete, or_, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey
from models.domains.assignments import DomainAssignment
from models.errors import ValidationFailed
from models.mail.inboxes import Inbox
from models.tenancy.access import Caller, audit

RCPT = "rcpt"
DATA = "data"
STAGES = (RCPT, DATA)
REPLY = "reply"
DELAY = "delay"
CLOSE = "close"
ACTIONS = (REPLY, DELAY, CLOSE)
# The longest delay a rule may hold a reply: long enough to pass a client's usual timeouts
# (30 s is common), far below the server's own 5 minutes of idle time per command.
MAX_DELAY = 60.0
# The shortest, and the step: a delay is kept in whole milliseconds (`delay_ms`). A finer one
# was rounded, so `1e-9` was stored as 0, a delay that does not delay.
MIN_DELAY = 0.001
# Rules per inbox: a handful tells every story a retry test needs.
MAX_RULES = 10
MAX_TIMES = 10_000
MAX_TEXT = 200
DEFAULT_TEXT = "Chaos rule"
CLOSE_REPLY = "421 4.4.2 Closing connection (chaos rule)"


class ChaosRule(UUIDKey, Base):
    """One failure rule of an inbox, or of a domain assignment (a template for the inboxes a
    catch-all assignment creates)."""

    __tablename__ = "chaos_rules"

    inbox_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("inboxes.id", ondelete="CASCADE"), index=True)
    assignment_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("domain_assignments.id", ondelete="CASCADE"), index=True)
    position: Mapped[int]
    stage: Mapped[str] = mapped_column(String(8))
    action: Mapped[str] = mapped_column(String(8))
    code: Mapped[int | None]
    status: Mapped[str | None] = mapped_column(String(16))
    text: Mapped[str | None] = mapped_column(String(MAX_TEXT))
    delay_ms: Mapped[int | None]
    times: Mapped[int | None]
    percent: Mapped[int | None]
    fired: Mapped[int] = mapped_column(default=0)
    last_fired_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    # A rule belongs to exactly one owner.
    __table_args__ = (CheckConstraint("(inbox_id IS NULL) <> (assignment_id IS NULL)",
                                      name="one_owner"),)

    @property
    def spent(self) -> bool:
        """Whether a `times` rule has fired as often as it may."""
        return self.times is not None and self.fired >= self.times

    def reply(self) -> str:
        """The SMTP reply line of a `reply` rule."""
        return f"{self.code} {self.status} {self.text}"


@dataclass(frozen=True)
class ActiveRule:
    """What mailin needs of a rule that may still fire (a plain value, safe to share across
    threads)."""

    id: uuid.UUID
    stage: str
    action: str
    reply: str
    delay: float
    percent: int | None


def _is_number(value: Any) -> bool:
    """A number as JSON has them (True is not one, though Python counts it an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_whole(value: Any) -> bool:
    """An int, not a bool: a fraction is refused, never truncated."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_rule(n: int, rule: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of rule number `n` of a request, or ValidationFailed naming the field."""
    def bad(field: str, message: str) -> ValidationFailed:
        # Shaped like the request schema's own messages: by list position, then field.
        return ValidationFailed(f"rules.{n}.{field}: {message}",
                                details={"rules": {str(n): {field: [message]}}})

    stage, action = rule.get("stage"), rule.get("action")
    if stage not in STAGES:
        raise bad("stage", f"must be one of {', '.join(STAGES)}")
    if action not in ACTIONS:
        raise bad("action", f"must be one of {', '.join(ACTIONS)}")
    values: dict[str, Any] = {"stage": stage, "action": action, "code": None, "status": None,
                              "text": None, "delay_ms": None}
    if action == REPLY:
        code = rule.get("code")
        if not _is_whole(code) or not 400 <= code <= 599:
            raise bad("code", "a reply code from 400 to 599 (4xx: try again later, 5xx: "
                              "refused for good)")
        status = rule.get("status") or f"{code // 100}.3.0"
        klass, *rest = status.split(".")
        if (klass != str(code // 100) or len(rest) != 2
                or not all(part.isascii() and part.isdigit() and len(part) <= 3
                           for part in rest)):
            raise bad("status", f"an enhanced status code of class {code // 100}, e.g. "
                                f"{code // 100}.3.0")
        text = rule.get("text") or DEFAULT_TEXT
        if len(text) > MAX_TEXT or not text.isprintable() or not text.isascii():
            raise bad("text", f"at most {MAX_TEXT} printable ASCII characters")
        values.update(code=code, status=status, text=text)
    elif action == DELAY:
        delay = rule.get("delay_seconds")
        if (not _is_number(delay) or not MIN_DELAY <= delay <= MAX_DELAY
                or not math.isclose(delay * 1000, round(delay * 1000), abs_tol=1e-6)):
            raise bad("delay_seconds", f"from {MIN_DELAY:g} to {MAX_DELAY:g} seconds, in whole "
                                       "milliseconds")
        values["delay_ms"] = round(delay * 1000)
    times, percent = rule.get("times"), rule.get("percent")
    if (times is None) == (percent is None):
        raise bad("times", "give exactly one of times (the next N messages) and percent")
    if times is not None and (not _is_whole(times) or not 1 <= times <= MAX_TIMES):
        raise bad("times", f"a whole number from 1 to {MAX_TIMES}")
    if percent is not None and (not _is_whole(percent) or not 0 <= percent <= 100):
        raise bad("percent", "a whole number from 0 to 100")
    return {**values, "times": times, "percent": percent}


def check_rules(rules: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The columns of each requested rule, in order; ValidationFailed naming the first bad
    field (details `{"rules": {"<n>": {"<field>": [...]}}}`), with nothing changed."""
    if len(rules) > MAX_RULES:
        raise ValidationFailed(f"at most {MAX_RULES} rules",
                               details={"rules": [f"at most {MAX_RULES} rules"]})
    return [_check_rule(n, rule) for n, rule in enumerate(rules)]


def _owned_by(inbox_id: uuid.UUID | None, assignment_id: uuid.UUID | None) -> Any:
    return (ChaosRule.inbox_id == inbox_id if inbox_id is not None
            else ChaosRule.assignment_id == assignment_id)


def list_rules(session: Session, *, inbox_id: uuid.UUID | None = None,
               assignment_id: uuid.UUID | None = None) -> list[ChaosRule]:
    """The rules of an inbox or of an assignment, in order, spent ones included."""
    return list(session.scalars(select(ChaosRule).where(_owned_by(inbox_id, assignment_id))
                                .order_by(ChaosRule.position)))


def snapshot(rules: Sequence[ChaosRule]) -> dict[str, Any]:
    """How a list of rules reads in an audit entry."""
    return {"rules": [{key: value for key, value in rule_view(rule).items()
                       if key not in ("id", "fired", "last_fired_at", "spent")}
                      for rule in rules]}


def rule_view(rule: ChaosRule) -> dict[str, Any]:
    """A rule as the API shows it (None fields left out)."""
    view = {"id": rule.id, "stage": rule.stage, "action": rule.action, "code": rule.code,
            "status": rule.status, "text": rule.text,
            "delay_seconds": None if rule.delay_ms is None else rule.delay_ms / 1000,
            "times": rule.times, "percent": rule.percent, "fired": rule.fired,
            "spent": rule.spent,
            "last_fired_at": rule.last_fired_at}
    return {key: value for key, value in view.items()
            if value is not None or key in ("last_fired_at",)}


def _replace(session: Session, columns: list[dict[str, Any]], *,
             inbox_id: uuid.UUID | None = None, assignment_id: uuid.UUID | None = None
             ) -> list[ChaosRule]:
    """Replace the owner's rules with new ones (counters start at 0)."""
    session.execute(delete(ChaosRule).where(_owned_by(inbox_id, assignment_id)))
    rules = [ChaosRule(id=uuid.uuid4(), inbox_id=inbox_id, assignment_id=assignment_id,
                       position=n, fired=0, **values) for n, values in enumerate(columns)]
    session.add_all(rules)
    session.flush()
    return rules


def set_inbox_rules(session: Session, caller: Caller, inbox: Inbox,
                    rules: Sequence[Mapping[str, Any]]) -> list[ChaosRule]:
    """Replace the inbox's rules (an empty list clears them); audited as `inbox.chaos_set`
    (`inbox.chaos_clear` when empty). ValidationFailed naming the field of a bad rule."""
    columns = check_rules(rules)
    before = snapshot(list_rules(session, inbox_id=inbox.id))
    new = _replace(session, columns, inbox_id=inbox.id)
    audit(session, caller, "inbox.chaos_set" if new else "inbox.chaos_clear",
          org_id=inbox.org_id, resource_type="inbox", resource_id=inbox.id,
          before={**before, "address": inbox.full_address},
          after={**snapshot(new), "address": inbox.full_address})
    return new


def set_assignment_rules(session: Session, caller: Caller, assignment: DomainAssignment,
                         rules: Sequence[Mapping[str, Any]]) -> list[ChaosRule]:
    """Replace the assignment's template rules (an empty list clears them); audited as
    `domain_assignment.chaos_set` (`.chaos_clear` when empty)."""
    columns = check_rules(rules)
    before = snapshot(list_rules(session, assignment_id=assignment.id))
    new = _replace(session, columns, assignment_id=assignment.id)
    name = {"domain_name": assignment.domain_name}
    audit(session, caller,
          "domain_assignment.chaos_set" if new else "domain_assignment.chaos_clear",
          org_id=assignment.team.org_id, resource_type="domain_assignment",
          resource_id=assignment.id, before={**before, **name}, after={**snapshot(new), **name})
    return new


def copy_assignment_rules(session: Session, assignment_id: uuid.UUID, inbox_id: uuid.UUID
                          ) -> int:
    """Give a new inbox a copy of its assignment's rules (counters at 0), in the transaction
    that creates it: what a catch-all assignment does for each inbox it creates. Return how
    many rules were copied (0 when the assignment has none: one indexed read)."""
    rules = list_rules(session, assignment_id=assignment_id)
    session.add_all(ChaosRule(
        id=uuid.uuid4(), inbox_id=inbox_id, position=rule.position, stage=rule.stage,
        action=rule.action, code=rule.code, status=rule.status, text=rule.text,
        delay_ms=rule.delay_ms, times=rule.times, percent=rule.percent, fired=0)
        for rule in rules)
    return len(rules)


def active_rules(session: Session) -> dict[uuid.UUID, tuple[ActiveRule, ...]]:
    """Every inbox rule that may still fire (not spent), by inbox, in order: what mailin keeps
    under `CHAOS_REVISION_KEY`. Rules are few (test set-ups), so all of them are one read."""
    rows = session.scalars(
        select(ChaosRule).where(ChaosRule.inbox_id.is_not(None),
                                or_(ChaosRule.times.is_(None),
                                    ChaosRule.fired < ChaosRule.times))
        .order_by(ChaosRule.inbox_id, ChaosRule.position))
    by_inbox: dict[uuid.UUID, list[ActiveRule]] = {}
    for rule in rows:
        assert rule.inbox_id is not None
        by_inbox.setdefault(rule.inbox_id, []).append(ActiveRule(
            id=rule.id, stage=rule.stage, action=rule.action,
            reply=rule.reply() if rule.action == REPLY else CLOSE_REPLY,
            delay=(rule.delay_ms or 0) / 1000, percent=rule.percent))
    return {inbox_id: tuple(rules) for inbox_id, rules in by_inbox.items()}


def fire(session: Session, rule_id: uuid.UUID) -> bool:
    """Count one firing of the rule, atomically: False when it is spent (or gone) meanwhile,
    which another mailin process may have done, and then it must not act."""
    result = session.execute(
        update(ChaosRule)
        .where(ChaosRule.id == rule_id,
               or_(ChaosRule.times.is_(None), ChaosRule.fired < ChaosRule.times))
        .values(fired=ChaosRule.fired + 1, last_fired_at=utcnow()))
    return result.rowcount == 1  # type: ignore[attr-defined]
