"""What the hot reads of an inbox keep per process: the caller's standing towards the inbox,
its unfiltered first pages of e-mails, and its e-mails' details.

A test suite polls an inbox's page until its mail lands, and the page is the same between
arrivals: read from the database each time, it cost two statements per poll. Each entry here
depends on the inbox's own revision (`INBOX_REVISIONS`, models.caching.RowRevisions), which
every committed write that names the inbox moves (an e-mail arriving, read, deleted; the inbox
extended or deleted), and on the family's whole revision, which any other write to inboxes,
e-mails or attachments moves (a team's inboxes moved to another org, the retention cleanup):
mail arriving in one inbox leaves every other inbox's entries standing. The caller's standing
also depends on the memberships revision (models.caching) and is recomputed from the
cached role names and the request's grants, never cached as a verdict.

Only read-only requests use these caches (web.permissions), and only with Redis, as the
callers' cache (a write reads the rows it changes; a process's memory store is its own)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from models.caching import (
    DEFAULT_CAPACITY,
    INBOX_REVISIONS,
    Lookup,
    RevisionedCache,
    Revisions,
    kept_in,
)

# What each cache may hold per process. Entries are counted, and pages and e-mails also
# weighed (an estimate of their Python objects, whose text a sender controls): a page of
# long-subject mail or a large e-mail cannot grow a worker past these budgets, and the pages
# of one inbox cannot push the standings out (each kind has its own cache).
PAGE_BUDGET = 64 * 1024 * 1024
EMAIL_BUDGET = 64 * 1024 * 1024
EMAIL_CAPACITY = 1_000
# An e-mail larger than this (raw) is read each time: a sign-up or one-time-code message is a
# few KB.
CACHED_EMAIL_BYTES = 64 * 1024
# Only the first page is cached: what a poll for new mail reads. Later pages are read each
# time, so walking them does not churn the cache.
CACHED_PAGE = 1


class InboxStandings(RevisionedCache[Any]):
    """Callers' standings towards inboxes (a detached inbox with the caller's role names),
    under `INBOX_REVISIONS`; counted only, each is small."""

    KEY = "mail.inbox-standings"

    @classmethod
    def of(cls, caches: dict[str, Any]) -> InboxStandings:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, lambda: cls(INBOX_REVISIONS.whole))


class InboxPages(RevisionedCache[Any]):
    """Inboxes' first pages of e-mail list items, under `INBOX_REVISIONS`, within
    `PAGE_BUDGET`."""

    KEY = "mail.inbox-pages"

    @classmethod
    def of(cls, caches: dict[str, Any]) -> InboxPages:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, lambda: cls(INBOX_REVISIONS.whole, budget=PAGE_BUDGET))

    def weigh(self, value: Any) -> int:
        """About 1 KB per item for the dict and its values, plus 4 bytes per character of
        its text (the widest a Python string stores)."""
        return 512 + sum(1024 + 4 * sum(len(text) for text in item.values()
                                        if isinstance(text, str))
                         for item in value.data)


class EmailReads(RevisionedCache[Any]):
    """E-mails' details (detached copies with their attachments and inbox), under
    `INBOX_REVISIONS`, within `EMAIL_BUDGET`; and the inbox of each e-mail the process has
    read: an e-mail never changes inbox, so a request for it can read its inbox's revision
    ahead."""

    KEY = "mail.email-reads"

    def __init__(self) -> None:
        super().__init__(INBOX_REVISIONS.whole, capacity=EMAIL_CAPACITY, budget=EMAIL_BUDGET)
        self._inbox_of: dict[uuid.UUID, uuid.UUID] = {}

    @classmethod
    def of(cls, caches: dict[str, Any]) -> EmailReads:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, cls)

    def keeps(self, value: Any) -> bool:
        """Only e-mails of at most `CACHED_EMAIL_BYTES`: a large one is read each time."""
        return bool(value.size_bytes <= CACHED_EMAIL_BYTES)

    def weigh(self, value: Any) -> int:
        """16 bytes per raw byte, and 4 KB: the text and HTML bodies side by side, the
        headers, the links, each character up to 4 bytes (measured: 8 per raw byte for a
        message of emoji text and 900 links)."""
        return 4096 + 16 * int(value.size_bytes)

    def inbox_of(self, email_id: uuid.UUID) -> uuid.UUID | None:
        """The inbox of e-mail `email_id`, if the process has read the e-mail."""
        return self._inbox_of.get(email_id)

    def note_inbox_of(self, email_id: uuid.UUID, inbox_id: uuid.UUID) -> None:
        """Remember that e-mail `email_id` is in inbox `inbox_id`."""
        if len(self._inbox_of) >= DEFAULT_CAPACITY:
            self._inbox_of.pop(next(iter(self._inbox_of)), None)
        self._inbox_of[email_id] = inbox_id


@dataclass(frozen=True)
class InboxCaches:
    """The process's inbox caches as one read-only unit of work uses them: bound to its
    revisions (models.caching.Revisions)."""

    standings: Lookup[Any]
    pages: Lookup[Any]
    emails: Lookup[Any]
    inbox_of: Callable[[uuid.UUID], uuid.UUID | None]
    note_inbox_of: Callable[[uuid.UUID, uuid.UUID], None]

    @classmethod
    def bound(cls, caches: dict[str, Any], revisions: Revisions) -> InboxCaches:
        """The caches kept in `caches` (the Runtime's), checked against `revisions`."""
        emails = EmailReads.of(caches)
        return cls(standings=partial(InboxStandings.of(caches).get, revisions),
                   pages=partial(InboxPages.of(caches).get, revisions),
                   emails=partial(emails.get, revisions), inbox_of=emails.inbox_of,
                   note_inbox_of=emails.note_inbox_of)


def inbox_revision(inbox_id: uuid.UUID) -> list[str]:
    """The revision an entry about inbox `inbox_id` depends on besides the family's."""
    return [INBOX_REVISIONS.key(inbox_id)]


def revisions_ahead(caches: dict[str, Any], *, inbox_id: uuid.UUID | None = None,
                    email_id: uuid.UUID | None = None) -> list[str]:
    """The row revisions a read of inbox `inbox_id`, or of e-mail `email_id`, will check: for
    the web's rate limiter to read in its round trip (none for an e-mail the process has not
    read yet)."""
    if email_id is not None:
        inbox_id = EmailReads.of(caches).inbox_of(email_id)
    return [] if inbox_id is None else inbox_revision(inbox_id)
