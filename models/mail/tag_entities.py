"""Tags on e-mails, the rows and the one rule of names: a team's tags, the links between
e-mails and tags, and the team's tag rules (a search expression and the tags it applies to new
mail). The actions are `models.mail.tags`; tags applied on arrival, `models.mail.ingest.tagging`.

A tag's name is what people typed, trimmed and with runs of spaces made one; its identity
within a team is the case-folded name (`tag_key`): `Checkout`, `checkout` and ` CHECKOUT ` are
one tag, shown as first written. Names are 1-`MAX_TAG_LENGTH` characters of letters, digits,
spaces and `- _ . /`, so that an `X-Tags` header (comma-separated) and the search syntax
(`tag:name`, `tag:"two words"`) can carry any of them.

Each e-mail row keeps its tags' names as well (`emails.tags`, in key order), written by the
same statements that change its links: the list and the reading pane show them without a
query more, while the links are what search, counts, renames and deletions go by.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    ColumnElement,
    ForeignKey,
    String,
    Text,
    UniqueConstraint,
    exists,
    select,
)
from sqlalchemy.orm import Mapped, mapped_column

from burnbox.timeutil import utcnow
from models.db import Base, UUIDKey
from models.errors import ValidationFailed
from models.mail.entities import Email

# Limits (docs/mail.md "Tags"): a name's length, the tags of one e-mail, the tags of one
# team, the rules of one team and the length of a rule's search expression.
MAX_TAG_LENGTH = 64
MAX_TAGS_PER_EMAIL = 20
MAX_TAGS_PER_TEAM = 1000
MAX_RULES_PER_TEAM = 50
MAX_RULE_QUERY = 500
# Case folding may lengthen a name (`ß` folds to `ss`): the key has room for three times it.
MAX_TAG_KEY = 3 * MAX_TAG_LENGTH
_TAG_NAME = re.compile(r"[\w .\-/]+")
_SPACES = re.compile(r"\s+")
TAG_NAME_RULE = (f"1-{MAX_TAG_LENGTH} characters of letters, digits, spaces and '-', '_', "
                 "'.', '/'")


class Tag(UUIDKey, Base):
    """One tag of a team; its e-mails are linked through `EmailTag`."""

    __tablename__ = "tags"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(MAX_TAG_LENGTH))
    key: Mapped[str] = mapped_column(String(MAX_TAG_KEY))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    __table_args__ = (UniqueConstraint("team_id", "key"),)


class EmailTag(Base):
    """An e-mail carries a tag; the link goes with either."""

    __tablename__ = "email_tags"

    email_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("emails.id", ondelete="CASCADE"), primary_key=True)
    tag_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("tags.id", ondelete="CASCADE"), primary_key=True, index=True)


class TagRule(UUIDKey, Base):
    """A team's rule: new mail of the team's inboxes matching `query` (the search syntax of
    `models.mail.query`) gets `tags`."""

    __tablename__ = "tag_rules"

    team_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"),
                                               index=True)
    query: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


def clean_tag(name: Any) -> str | None:
    """The stored form of the tag name `name` (trimmed, runs of spaces made one), or None when
    it is no valid name (see the module docstring)."""
    if not isinstance(name, str):
        return None
    cleaned = _SPACES.sub(" ", name).strip()
    if not cleaned or len(cleaned) > MAX_TAG_LENGTH or not _TAG_NAME.fullmatch(cleaned):
        return None
    return cleaned


def tag_key(name: str) -> str:
    """The identity of a (clean) tag name within its team: case-folded."""
    return name.casefold()[:MAX_TAG_KEY]


def search_key(value: str) -> str:
    """The key a search or a filter for the tag `value` compares with (spaces as in names)."""
    return tag_key(_SPACES.sub(" ", value).strip())


def checked_tags(names: Any, field: str = "tags") -> list[str]:
    """The clean, distinct (by key, first spelling kept) names of the list `names`, at most
    `MAX_TAGS_PER_EMAIL` of them; ValidationFailed naming `field` for anything else."""
    if not isinstance(names, list) or len(names) > MAX_TAGS_PER_EMAIL:
        raise ValidationFailed(f"invalid {field}", details={field: [
            f"a list of at most {MAX_TAGS_PER_EMAIL} tags"]})
    found: dict[str, str] = {}
    for name in names:
        cleaned = clean_tag(name)
        if cleaned is None:
            raise ValidationFailed(f"invalid {field}", details={field: [
                f"each tag is {TAG_NAME_RULE}"]})
        found.setdefault(tag_key(cleaned), cleaned)
    return list(found.values())


def has_any_tag() -> ColumnElement[bool]:
    """The e-mails (a condition on `emails`) carrying at least one tag."""
    return exists(select(EmailTag.email_id).where(EmailTag.email_id == Email.id))


def has_tag(key: str) -> ColumnElement[bool]:
    """The e-mails (a condition on `emails`) carrying the tag whose key is `key`."""
    return exists(select(EmailTag.email_id).join(Tag, Tag.id == EmailTag.tag_id)
                  .where(EmailTag.email_id == Email.id, Tag.key == key))
