"""Tags applied to mail on arrival, in the transaction that stores it (models.mail.ingest):

- the `X-Tags` header: comma-separated names (every such header counts);
- plus-addressing: the part after the first `+` of the local part of the address the e-mail
  was delivered to, and of each envelope recipient a capture session named
  (`signup+checkout@...` tags `checkout`). Routing is not changed by it: an inbox alias holds
  no `+`, so such an address reaches Burnbox through capture credentials (any recipient is
  stored in the login's inbox);
- the team's tag rules (models.mail.tags): each rule's search expression is run against the
  batch's new e-mails of the team, in SQL, as the list's search would.

A name that is not a valid tag (see models.mail.tag_entities) is skipped, never refused:
mail is stored whatever its headers say. An e-mail keeps its first `MAX_TAGS_PER_EMAIL`
tags, and a team past `MAX_TAGS_PER_TEAM` gets no new ones.

What it costs: nothing for mail without tags at a team without rules (the live-inbox query
says whether a team has rules, in the round trip it makes anyway). With rules, one query per
rule for the whole batch; with tags, per team a query of its tags (one more, and an INSERT,
for tags new to it), then one INSERT of the links and one UPDATE of the e-mails' names.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.errors import ValidationFailed
from models.mail.entities import Email
from models.mail.query import filter_emails
from models.mail.tag_entities import MAX_TAGS_PER_EMAIL, clean_tag, tag_key
from models.mail.tags import (
    ensure_tags,
    link_tags,
    names_in_order,
    rule_tags_by_team,
    write_names,
)

log = logging.getLogger(__name__)

TAGS_HEADER = "x-tags"


def header_tags(headers: Iterable[Sequence[str]]) -> list[str]:
    """The valid tag names the `X-Tags` headers of `headers` ((name, value) pairs) give."""
    names: list[str] = []
    for pair in headers:
        if pair[0].lower() == TAGS_HEADER:
            names += [name for name in map(clean_tag, pair[1].split(",")) if name]
    return names


def plus_tag(address: str) -> str | None:
    """The tag the plus-address `address` names (`a+b@x` names `b`), if any."""
    local = address.rpartition("@")[0]
    _, plus, tag = local.partition("+")
    return clean_tag(tag) if plus else None


def arrival_names(email: Mapping[str, Any]) -> list[str]:
    """The tags an e-mail about to be stored gets from itself (`X-Tags`, plus-addressing): its
    row's values (`headers`, `to_address`, `envelope_to`)."""
    names = header_tags(email["headers"])
    for address in (email["to_address"], *(email["envelope_to"] or ())):
        tag = plus_tag(address)
        if tag:
            names.append(tag)
    return names


def tag_arrivals(session: Session, emails: Sequence[dict[str, Any]],
                 teams: Mapping[uuid.UUID, uuid.UUID], ruled: set[uuid.UUID],
                 options: Mapping[str, Any]) -> dict[uuid.UUID, list[str]]:
    """Tag the e-mails just inserted (their rows' values; `teams`: each one's team by e-mail
    id; `ruled`: the teams that have tag rules) and write their links and names; return the
    names by e-mail id, for the e-mails that got any. `options`: the statements' execution
    options (the inboxes written)."""
    wanted: dict[uuid.UUID, list[str]] = {}
    for email in emails:
        names = arrival_names(email)
        if names:
            wanted[email["id"]] = names
    if ruled:
        for email_id, names in _rule_tags(session, emails, teams, ruled).items():
            wanted.setdefault(email_id, []).extend(names)
    if not wanted:
        return {}
    by_team: defaultdict[uuid.UUID, dict[uuid.UUID, dict[str, str]]] = defaultdict(dict)
    for email_id, names in wanted.items():
        distinct: dict[str, str] = {}
        for name in names:
            if len(distinct) < MAX_TAGS_PER_EMAIL:
                distinct.setdefault(tag_key(name), name)
        by_team[teams[email_id]][email_id] = distinct
    links: list[tuple[uuid.UUID, uuid.UUID]] = []
    given: dict[uuid.UUID, list[str]] = {}
    for team_id in sorted(by_team):  # one order: tags are made under a unique key
        of_team = by_team[team_id]
        tags = ensure_tags(session, team_id, list({key: name for names in of_team.values()
                                                   for key, name in names.items()}.values()),
                           options, strict=False)
        for email_id, names in of_team.items():
            found = [tags[key] for key in names if key in tags]
            if found:
                links += [(email_id, tag_id) for tag_id, _ in found]
                given[email_id] = names_in_order(name for _, name in found)
    link_tags(session, links, options)
    write_names(session, given, options)
    return given


def _rule_tags(session: Session, emails: Sequence[dict[str, Any]],
               teams: Mapping[uuid.UUID, uuid.UUID], ruled: set[uuid.UUID]
               ) -> dict[uuid.UUID, list[str]]:
    """The tags the rules of the `ruled` teams give the new e-mails of those teams."""
    ids_of: defaultdict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    for email in emails:
        if teams[email["id"]] in ruled:
            ids_of[teams[email["id"]]].append(email["id"])
    found: defaultdict[uuid.UUID, list[str]] = defaultdict(list)
    for team_id, rules in rule_tags_by_team(session, ids_of).items():
        for rule in rules:
            try:
                query = filter_emails(select(Email.id).where(Email.id.in_(ids_of[team_id])),
                                      rule.query)
            except ValidationFailed:
                # Checked when written; a rule the syntax no longer reads must not cost a 451.
                log.warning("a tag rule's expression cannot be read; skipped",
                            extra={"rule": str(rule.id)})
                continue
            for email_id in session.scalars(query):
                found[email_id].extend(rule.tags)
    return dict(found)
