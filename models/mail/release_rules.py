"""Auto-release rules: "e-mails matching this search expression are released to these
recipients", per inbox or per domain assignment (docs/mail.md "Auto-release").

A rule belongs to one inbox, or to one domain assignment of a team: then it covers every inbox
made through the assignment (a catch-all's inboxes among them). There are none unless someone
makes one: making, changing and deleting a rule needs `team.emails.release`, the permission of
a manual release, and is audited (`email.release_rule_create`, `_update`, `_delete`). A rule's
recipients pass the same allow-lists as a manual release's when it is written, and again each
time it releases (the lists may have narrowed meanwhile).

Matching runs in the worker after the e-mail is stored (`tasks.release_rules`), never on the
SMTP path: each rule's expression is the list's search syntax (`models.mail.query`, `tag:`
included: the e-mail's arrival tags are given by then), run in SQL over the new e-mails the
rule covers. Each match becomes a release through the guards of a manual one
(`models.mail.release.guard_release`: relay, allow-lists, the team's budget), audited as
`email.release` with the rule, delivered by `tasks.release`; a release a guard refuses is
recorded failed with the refusal as its reply and audited as `email.release_failed`, so the
e-mail's releases show what every rule did. An e-mail is released by a rule at most once: the
release row is keyed by (e-mail, rule), written before any budget is spent.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Text, func, or_, select
from sqlalchemy.orm import Mapped, Session, load_only, mapped_column

from burnbox.kv import KeyValueStore
from burnbox.settings import Settings
from models.db import Base, Timestamps, UUIDKey, insert_ignoring_duplicates
from models.errors import Conflict, DomainError, NotFound
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.mail.query import filter_emails
from models.mail.release import (
    FAILED,
    NO_RELAY,
    QUEUED,
    RELEASED,
    Release,
    allowed_addresses,
    finish,
    guard_release,
    release_relay,
    released_audit,
)
from models.mail.tags import checked_rule_query
from models.platform.audit import record_audit
from models.tenancy.access import Caller, audit

# The rules of one inbox or one assignment, at most.
MAX_RULES = 20
RULE_CREATE = "email.release_rule_create"
RULE_UPDATE = "email.release_rule_update"
RULE_DELETE = "email.release_rule_delete"


class ReleaseRule(UUIDKey, Timestamps, Base):
    """An auto-release rule of one inbox or of one domain assignment (exactly one of the two)."""

    __tablename__ = "release_rules"

    # No org: a team moved to another org takes its rules along (they are checked against
    # the allow-lists over the team when each release is made).
    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    inbox_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("inboxes.id", ondelete="CASCADE"), index=True)
    assignment_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("domain_assignments.id", ondelete="CASCADE"), index=True)
    query: Mapped[str] = mapped_column(Text)
    recipients: Mapped[list[str]]
    # Who made it (None once their account is gone; the audit trail keeps their e-mail).
    created_by: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"))

    __table_args__ = (CheckConstraint("(inbox_id IS NULL) <> (assignment_id IS NULL)",
                                      name="one_owner"),)


@dataclass(frozen=True)
class RuleOwner:
    """What a rule belongs to: an inbox (`inbox_id`) or a domain assignment
    (`assignment_id`) of team `team_id` of org `org_id`."""

    org_id: uuid.UUID
    team_id: uuid.UUID
    inbox_id: uuid.UUID | None = None
    assignment_id: uuid.UUID | None = None

    def owns(self, rule: ReleaseRule) -> bool:
        """True for a rule of this inbox or assignment."""
        return (rule.team_id == self.team_id and rule.inbox_id == self.inbox_id
                and rule.assignment_id == self.assignment_id)

    def where(self) -> Any:
        """The condition selecting this owner's rules."""
        if self.inbox_id is not None:
            return ReleaseRule.inbox_id == self.inbox_id
        return ReleaseRule.assignment_id == self.assignment_id


def owner_rules(session: Session, owner: RuleOwner) -> list[ReleaseRule]:
    """The owner's rules, oldest first."""
    return list(session.scalars(select(ReleaseRule).where(owner.where())
                                .order_by(ReleaseRule.created_at, ReleaseRule.id)))


def owner_rule(session: Session, owner: RuleOwner, rule_id: uuid.UUID) -> ReleaseRule:
    """The owner's rule `rule_id`; NotFound for an unknown id or another owner's."""
    rule = session.get(ReleaseRule, rule_id)
    if rule is None or not owner.owns(rule):
        raise NotFound("release rule not found")
    return rule


def _checked_recipients(session: Session, settings: Settings, owner: RuleOwner,
                        recipients: Any) -> list[str]:
    """The rule's recipients as stored: bare addresses, 1 to MAX_RECIPIENTS
    (ValidationFailed), each allowed by the team's allow-lists now (Forbidden, naming them)."""
    return [str(address) for address in allowed_addresses(
        session, settings, owner.org_id, owner.team_id, recipients)]


def _snapshot(rule: ReleaseRule) -> dict[str, Any]:
    return {"query": rule.query, "recipients": list(rule.recipients),
            "inbox_id": None if rule.inbox_id is None else str(rule.inbox_id),
            "assignment_id": None if rule.assignment_id is None else str(rule.assignment_id)}


def create_release_rule(session: Session, caller: Caller, settings: Settings,
                        owner: RuleOwner, query: Any, recipients: Any) -> ReleaseRule:
    """A new rule of `owner`: its new mail matching `query` is released to `recipients`.
    ValidationFailed for a bad expression or recipients, Forbidden for a recipient the
    allow-lists refuse, Conflict without a release relay (nothing it matched could leave) or
    past MAX_RULES; audited as `email.release_rule_create`."""
    if release_relay(session, settings) is None:
        raise Conflict(NO_RELAY)
    rule = ReleaseRule(id=uuid.uuid4(), team_id=owner.team_id,
                       inbox_id=owner.inbox_id, assignment_id=owner.assignment_id,
                       query=checked_rule_query(query, may_test_tags=True),
                       recipients=_checked_recipients(session, settings, owner, recipients),
                       created_by=caller.user_id)
    count = session.scalar(select(func.count()).select_from(ReleaseRule)
                           .where(owner.where())) or 0
    if count >= MAX_RULES:
        raise Conflict("too many release rules", details={"query": [
            f"an inbox or a domain assignment has at most {MAX_RULES} release rules"]})
    session.add(rule)
    session.flush()
    audit(session, caller, RULE_CREATE, org_id=owner.org_id, resource_type="release_rule",
          resource_id=rule.id, after=_snapshot(rule))
    return rule


def update_release_rule(session: Session, caller: Caller, settings: Settings,
                        owner: RuleOwner, rule: ReleaseRule, changes: Mapping[str, Any]
                        ) -> ReleaseRule:
    """Change the rule's `query` and/or `recipients` (the keys of `changes`), checked as on
    creation; audited as `email.release_rule_update`. E-mails it released stay released."""
    before = _snapshot(rule)
    if "query" in changes:
        rule.query = checked_rule_query(changes["query"], may_test_tags=True)
    if "recipients" in changes:
        rule.recipients = _checked_recipients(session, settings, owner, changes["recipients"])
    session.flush()
    audit(session, caller, RULE_UPDATE, org_id=owner.org_id, resource_type="release_rule",
          resource_id=rule.id, before=before, after=_snapshot(rule))
    return rule


def delete_release_rule(session: Session, caller: Caller, owner: RuleOwner,
                        rule: ReleaseRule) -> None:
    """Delete the rule (its releases stay on their e-mails); audited as
    `email.release_rule_delete`."""
    audit(session, caller, RULE_DELETE, org_id=owner.org_id, resource_type="release_rule",
          resource_id=rule.id, before=_snapshot(rule))
    session.delete(rule)
    session.flush()


def rule_view(rule: ReleaseRule) -> dict[str, Any]:
    """A rule as the API shows it."""
    return {"id": rule.id, "inbox_id": rule.inbox_id, "assignment_id": rule.assignment_id,
            "query": rule.query, "recipients": list(rule.recipients),
            "created_at": rule.created_at, "updated_at": rule.updated_at}


# --- matching (the worker's) ----------------------------------------------------------------

def _covering(email_ids: Iterable[uuid.UUID]) -> Any:
    """(e-mail id, rule) for every rule covering one of the e-mails `email_ids`: its inbox's,
    and its inbox's assignment's."""
    return (select(Email.id, ReleaseRule)
            .join(Inbox, Inbox.id == Email.inbox_id)
            .join(ReleaseRule, or_(ReleaseRule.inbox_id == Inbox.id,
                                   ReleaseRule.assignment_id == Inbox.domain_assignment_id))
            .where(Email.id.in_(sorted(set(email_ids)))))


def emails_with_rules(session: Session, email_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """Those of the e-mails `email_ids` some rule covers, in one query (mail at an inbox and
    an assignment without rules costs nothing more)."""
    if not email_ids:
        return []
    covered = _covering(email_ids).with_only_columns(Email.id).distinct()
    return sorted(session.scalars(covered))


@dataclass(frozen=True)
class RuleRelease:
    """A release a rule made: queued (to be delivered once the transaction commits) or
    failed at once (a guard refused it)."""

    release_id: uuid.UUID
    state: str


def apply_release_rules(session: Session, store: KeyValueStore, settings: Settings,
                        email_ids: Sequence[uuid.UUID]) -> list[RuleRelease]:
    """Run the rules covering the e-mails `email_ids` (those still there) and release each
    match to its rule's recipients, once per e-mail and rule whatever runs twice; the
    releases made now, in the order the rules were made."""
    by_rule: defaultdict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    rules: dict[uuid.UUID, ReleaseRule] = {}
    for email_id, rule in session.execute(_covering(email_ids)):
        by_rule[rule.id].append(email_id)
        rules[rule.id] = rule
    made: list[RuleRelease] = []
    for rule in sorted(rules.values(), key=lambda one: (one.created_at, one.id)):
        # What a release needs of the e-mail; its bodies stay unread.
        matching = filter_emails(
            select(Email).options(load_only(Email.id, Email.inbox_id, Email.subject))
            .where(Email.id.in_(by_rule[rule.id])), rule.query
        ).order_by(Email.received_at, Email.id)
        for email in session.scalars(matching):
            release = _release_by_rule(session, store, settings, rule, email)
            if release is not None:
                made.append(release)
    return made


def _release_by_rule(session: Session, store: KeyValueStore, settings: Settings,
                     rule: ReleaseRule, email: Email) -> RuleRelease | None:
    """Release `email` by `rule` unless it did already (None then): the row first, under the
    (e-mail, rule) key, then the guards; queued and audited as `email.release`, or failed
    with the guard's refusal as its reply."""
    release_id = uuid.uuid4()
    inserted = session.execute(insert_ignoring_duplicates(session, Release.__table__).values(
        id=release_id, email_id=email.id, rule_id=rule.id, released_by=None,
        recipients=list(rule.recipients), state=QUEUED, attempts=0, relay_reply=""
    ).returning(Release.__table__.c.id))
    if inserted.first() is None:  # released by this rule already
        return None
    release = session.get_one(Release, release_id)
    inbox = session.get_one(Inbox, email.inbox_id)
    try:
        guard_release(session, store, settings, inbox, rule.recipients)
    except DomainError as refusal:
        release.relay_reply = f"not released: {refusal.message}"
        finish(session, release, FAILED, org_id=inbox.org_id)
        session.flush()
        return RuleRelease(release.id, FAILED)
    record_audit(session, RELEASED, actor_id=None, org_id=inbox.org_id, resource_type="email",
                 resource_id=email.id, ip=None, user_agent=None,
                 after={**released_audit(release, email, inbox), "rule_id": str(rule.id),
                        "query": rule.query})
    return RuleRelease(release.id, QUEUED)
