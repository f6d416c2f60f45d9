"""Tags on e-mails, the actions: tag and untag an e-mail, a team's tags with their counts,
renaming and deleting a tag, and the team's tag rules (docs/mail.md "Tags").

Rules kept here:
- a tag belongs to one team and is made by its first use (an e-mail tagged through the API or
  on arrival); a team holds at most `MAX_TAGS_PER_TEAM`, an e-mail `MAX_TAGS_PER_EMAIL`;
- changing an e-mail's tags locks its row first, so two changes at once never leave its
  `tags` names out of step with its links;
- a rename keeps the tag (its links) and rewrites the names of its e-mails; renaming onto
  another tag's name is a Conflict (delete one first); a deletion unlinks it everywhere;
- a rule's expression is the search syntax (`models.mail.query`) without `tag:` (rules run on
  arrival, before the new e-mail has tags); its tags are checked like any.
Renames, deletions and rule changes are audited. Actions flush but never commit.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.caching import INBOX_REVISIONS
from models.db import insert_ignoring_duplicates, remember_mail_change
from models.errors import Conflict, NotFound, ValidationFailed
from models.handoffs import EMAIL_UPDATED, MailChange
from models.mail.entities import Email
from models.mail.inboxes import Inbox
from models.mail.query import parse_query
from models.mail.tag_entities import (
    MAX_RULE_QUERY,
    MAX_RULES_PER_TEAM,
    MAX_TAGS_PER_EMAIL,
    MAX_TAGS_PER_TEAM,
    TAG_NAME_RULE,
    EmailTag,
    Tag,
    TagRule,
    checked_tags,
    clean_tag,
    search_key,
    tag_key,
)
from models.tenancy.access import Caller, audit
from models.tenancy.teams import Team

REPLACE, ADD, REMOVE = "replace", "add", "remove"


@dataclass(frozen=True)
class TagCount:
    """A tag of a team and how many of the team's e-mails carry it."""

    tag: Tag
    count: int


def ensure_tags(session: Session, team_id: uuid.UUID, names: Sequence[str],
                options: Mapping[str, Any] | None = None, *, strict: bool = True
                ) -> dict[str, tuple[uuid.UUID, str]]:
    """The team's tags for the clean `names`, made when missing: (id, name) by key. Past
    `MAX_TAGS_PER_TEAM`, Conflict when `strict`, else the new names are left out (mail
    arriving is never refused for its tags). `options`: the write's execution options (the
    inboxes it names, `models.caching.RowRevisions.naming`)."""
    wanted = {tag_key(name): name for name in names}
    if not wanted:
        return {}
    found = _tags_of(session, team_id, wanted)
    missing = [key for key in wanted if key not in found]
    if missing:
        room = MAX_TAGS_PER_TEAM - (session.scalar(
            select(func.count()).select_from(Tag).where(Tag.team_id == team_id)) or 0)
        if len(missing) > room and strict:
            raise Conflict("too many tags", details={"tags": [
                f"a team has at most {MAX_TAGS_PER_TEAM} tags; delete some first"]})
        missing = sorted(missing)[:max(room, 0)]
        if missing:
            session.execute(insert_ignoring_duplicates(session, Tag.__table__),
                            [{"id": uuid.uuid4(), "team_id": team_id, "key": key,
                              "name": wanted[key], "created_at": utcnow()}
                             for key in missing], execution_options=options or {})
            found.update(_tags_of(session, team_id, {key: wanted[key] for key in missing}))
    return found


def _tags_of(session: Session, team_id: uuid.UUID, keys: Iterable[str]
             ) -> dict[str, tuple[uuid.UUID, str]]:
    return {row.key: (row.id, row.name) for row in session.execute(
        select(Tag.id, Tag.key, Tag.name).where(Tag.team_id == team_id,
                                                Tag.key.in_(sorted(keys))))}


def link_tags(session: Session, links: Sequence[tuple[uuid.UUID, uuid.UUID]],
              options: Mapping[str, Any] | None = None) -> None:
    """Link each (e-mail id, tag id) of `links`; a link there already stays as it is."""
    if links:
        session.execute(insert_ignoring_duplicates(session, EmailTag.__table__),
                        [{"email_id": email_id, "tag_id": tag_id} for email_id, tag_id in links],
                        execution_options=options or {})


def names_in_order(names: Iterable[str]) -> list[str]:
    """Tag names as an e-mail keeps them: in key order."""
    return sorted(names, key=tag_key)


def change_email_tags(session: Session, email: Email, team_id: uuid.UUID,
                      names: Sequence[str], mode: str = REPLACE) -> Email:
    """Give the e-mail (of team `team_id`) exactly the tags `names` (REPLACE), add them (ADD)
    or take them off (REMOVE); `names` are checked (`checked_tags`) except for REMOVE, where a
    name it does not carry changes nothing. ValidationFailed past `MAX_TAGS_PER_EMAIL`,
    Conflict past the team's limit. Return the e-mail, its `tags` up to date; a change is
    announced to the streams of the inbox's mail once it commits."""
    naming = INBOX_REVISIONS.naming([email.inbox_id])
    # The row lock: a second change waits, then reads the links this one wrote.
    assignment_id = session.scalar(
        select(Inbox.domain_assignment_id).select_from(Email)
        .join(Inbox, Inbox.id == Email.inbox_id).where(Email.id == email.id)
        .with_for_update(of=Email))
    current = {row.key: (row.id, row.name) for row in session.execute(
        select(Tag.id, Tag.key, Tag.name).join(EmailTag, EmailTag.tag_id == Tag.id)
        .where(EmailTag.email_id == email.id))}
    if mode == REMOVE:
        keys = {search_key(name) for name in names if isinstance(name, str)}
        wanted = {key: tag for key, tag in current.items() if key not in keys}
    else:
        given = ensure_tags(session, team_id, checked_tags(list(names)), naming)
        wanted = given if mode == REPLACE else {**current, **given}
        if len(wanted) > MAX_TAGS_PER_EMAIL:
            raise ValidationFailed("invalid tags", details={"tags": [
                f"an e-mail has at most {MAX_TAGS_PER_EMAIL} tags"]})
    gone = [tag_id for key, (tag_id, _) in current.items() if key not in wanted]
    if gone:
        session.execute(delete(EmailTag).where(EmailTag.email_id == email.id,
                                               EmailTag.tag_id.in_(gone)),
                        execution_options=naming)
    link_tags(session, [(email.id, tag_id) for key, (tag_id, _) in wanted.items()
                        if key not in current], naming)
    names_now = names_in_order(name for _, name in wanted.values())
    if names_now != email.tags:
        email.tags = names_now
        session.flush()
        remember_mail_change(session, MailChange(EMAIL_UPDATED, email.inbox_id, assignment_id,
                                                 email.id, tags=names_now))
    return email


def team_tags(session: Session, team_id: uuid.UUID) -> list[TagCount]:
    """The team's tags in key order, each with how many e-mails carry it (the tag cloud)."""
    rows = session.execute(
        select(Tag, func.count(EmailTag.email_id))
        .outerjoin(EmailTag, EmailTag.tag_id == Tag.id)
        .where(Tag.team_id == team_id).group_by(Tag.id).order_by(Tag.key))
    return [TagCount(tag, count) for tag, count in rows]


def tag_count(session: Session, tag_id: uuid.UUID) -> int:
    """How many e-mails carry the tag `tag_id`."""
    return session.scalar(select(func.count()).select_from(EmailTag)
                          .where(EmailTag.tag_id == tag_id)) or 0


def team_tag(session: Session, team_id: uuid.UUID, tag_id: uuid.UUID) -> Tag:
    """The team's tag `tag_id`; NotFound for an unknown id or another team's."""
    tag = session.get(Tag, tag_id)
    if tag is None or tag.team_id != team_id:
        raise NotFound("tag not found")
    return tag


def _tagged_with(session: Session, tag_id: uuid.UUID) -> list[uuid.UUID]:
    return list(session.scalars(select(EmailTag.email_id).where(EmailTag.tag_id == tag_id)))


def rewrite_names(session: Session, email_ids: Sequence[uuid.UUID]) -> None:
    """Write the `tags` names of the e-mails `email_ids` from their links again, in one
    statement (after a tag was renamed or deleted)."""
    if not email_ids:
        return
    names: dict[uuid.UUID, list[str]] = {email_id: [] for email_id in email_ids}
    for email_id, name in session.execute(
            select(EmailTag.email_id, Tag.name).join(Tag, Tag.id == EmailTag.tag_id)
            .where(EmailTag.email_id.in_(email_ids)).order_by(Tag.key)):
        names[email_id].append(name)
    write_names(session, names)


def write_names(session: Session, names: Mapping[uuid.UUID, list[str]],
                options: Mapping[str, Any] | None = None) -> None:
    """Set the `tags` names of each e-mail of `names` (by id), in one statement; `options`:
    its execution options (the inboxes it names)."""
    if names:
        emails = Email.__table__
        session.execute(update(emails).where(emails.c.id == bindparam("email"))
                        .values(tags=bindparam("names")),
                        [{"email": email_id, "names": tag_names}
                         for email_id, tag_names in names.items()],
                        execution_options=options or {})


def rename_tag(session: Session, caller: Caller, team: Team, tag: Tag, name: Any) -> Tag:
    """Rename the team's tag (its e-mails keep it, under the new name); ValidationFailed for
    an invalid name, Conflict when another tag of the team has it."""
    cleaned = clean_tag(name)
    if cleaned is None:
        raise ValidationFailed("invalid name", details={"name": [TAG_NAME_RULE]})
    key = tag_key(cleaned)
    if key != tag.key and session.scalar(select(Tag.id).where(Tag.team_id == team.id,
                                                              Tag.key == key)) is not None:
        raise Conflict("a tag of that name exists", details={"name": [
            "another tag of the team has this name; delete one of them first"]})
    before = tag.name
    tag.name, tag.key = cleaned, key
    session.flush()
    rewrite_names(session, _tagged_with(session, tag.id))
    audit(session, caller, "tag.rename", org_id=team.org_id, resource_type="tag",
          resource_id=tag.id, before={"name": before}, after={"name": cleaned})
    return tag


def delete_tag(session: Session, caller: Caller, team: Team, tag: Tag) -> int:
    """Delete the team's tag from every e-mail and from the team; return how many e-mails
    carried it."""
    tagged = _tagged_with(session, tag.id)
    audit(session, caller, "tag.delete", org_id=team.org_id, resource_type="tag",
          resource_id=tag.id, before={"name": tag.name, "emails": len(tagged)})
    session.delete(tag)
    session.flush()
    rewrite_names(session, tagged)
    return len(tagged)


# --- rules ----------------------------------------------------------------------------------

def checked_rule_query(query: Any, *, may_test_tags: bool = False) -> str:
    """A rule's search expression, checked; ValidationFailed (naming `query`) when it is
    empty, too long, malformed, or tests tags unless `may_test_tags` (a rule that runs after
    the e-mail's tags were given: auto-release)."""
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_RULE_QUERY:
        raise ValidationFailed("invalid query", details={"query": [
            f"a search expression of 1-{MAX_RULE_QUERY} characters"]})
    terms = parse_query(query)
    if not terms:
        raise ValidationFailed("invalid query", details={"query": ["it has no terms"]})
    if not may_test_tags and any(term.operator == "tag" or (
            term.operator, term.value.lower()) == ("is", "tagged") for term in terms):
        raise ValidationFailed("invalid query", details={"query": [
            "a rule cannot test tags: it runs before the new e-mail has any"]})
    return query.strip()


def _checked_rule_tags(tags: Any) -> list[str]:
    names = checked_tags(tags)
    if not names:
        raise ValidationFailed("invalid tags", details={"tags": ["at least one tag"]})
    return names


def team_rules(session: Session, team_id: uuid.UUID) -> list[TagRule]:
    """The team's tag rules, oldest first."""
    return list(session.scalars(select(TagRule).where(TagRule.team_id == team_id)
                                .order_by(TagRule.created_at, TagRule.id)))


def team_rule(session: Session, team_id: uuid.UUID, rule_id: uuid.UUID) -> TagRule:
    """The team's rule `rule_id`; NotFound for an unknown id or another team's."""
    rule = session.get(TagRule, rule_id)
    if rule is None or rule.team_id != team_id:
        raise NotFound("tag rule not found")
    return rule


def create_rule(session: Session, caller: Caller, team: Team, query: Any, tags: Any
                ) -> TagRule:
    """A new rule of the team: its new mail matching `query` gets `tags`. Conflict past
    `MAX_RULES_PER_TEAM`."""
    rule = TagRule(team_id=team.id, query=checked_rule_query(query),
                   tags=_checked_rule_tags(tags))
    count = session.scalar(select(func.count()).select_from(TagRule)
                           .where(TagRule.team_id == team.id)) or 0
    if count >= MAX_RULES_PER_TEAM:
        raise Conflict("too many tag rules", details={"query": [
            f"a team has at most {MAX_RULES_PER_TEAM} tag rules"]})
    session.add(rule)
    session.flush()
    audit(session, caller, "tag_rule.create", org_id=team.org_id, resource_type="tag_rule",
          resource_id=rule.id, after={"query": rule.query, "tags": rule.tags})
    return rule


def update_rule(session: Session, caller: Caller, team: Team, rule: TagRule,
                changes: Mapping[str, Any]) -> TagRule:
    """Change the rule's `query` and/or `tags` (the keys of `changes`), checked as on
    creation."""
    before = {"query": rule.query, "tags": rule.tags}
    if "query" in changes:
        rule.query = checked_rule_query(changes["query"])
    if "tags" in changes:
        rule.tags = _checked_rule_tags(changes["tags"])
    session.flush()
    audit(session, caller, "tag_rule.update", org_id=team.org_id, resource_type="tag_rule",
          resource_id=rule.id, before=before, after={"query": rule.query, "tags": rule.tags})
    return rule


def delete_rule(session: Session, caller: Caller, team: Team, rule: TagRule) -> None:
    """Delete the rule (tags it gave stay on their e-mails)."""
    audit(session, caller, "tag_rule.delete", org_id=team.org_id, resource_type="tag_rule",
          resource_id=rule.id, before={"query": rule.query, "tags": rule.tags})
    session.delete(rule)
    session.flush()


def rule_tags_by_team(session: Session, team_ids: Iterable[uuid.UUID]
                      ) -> dict[uuid.UUID, list[TagRule]]:
    """The rules of the teams `team_ids`, by team (a team without rules is missing)."""
    rules: defaultdict[uuid.UUID, list[TagRule]] = defaultdict(list)
    for rule in session.scalars(select(TagRule).where(TagRule.team_id.in_(sorted(set(team_ids))))
                                .order_by(TagRule.created_at, TagRule.id)):
        rules[rule.team_id].append(rule)
    return dict(rules)
