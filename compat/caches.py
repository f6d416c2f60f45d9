"""What the compatible faces' reads of an inbox scope keep per process: pages of its messages
and single messages, each while the inbox's revision and the family's stand, as the native
first pages are kept (models.mail.caches): a client polling the list until its mail arrives
reads no row in between. Only read-only requests with Redis use it, for the reasons
`web.context.inbox_caches` gives; a catch-all scope (many inboxes) reads each time.

Each face keys its own entries (a MailHog page of rows, a Mailpit listing) under the inbox's
id, so one cache and one budget serve both.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from compat.scopes import Scope
from models.caching import INBOX_REVISIONS, RevisionedCache, kept_in
from models.mail.caches import CACHED_EMAIL_BYTES, PAGE_BUDGET, inbox_revision
from web.context import inbox_caches, revisions, runtime

V = TypeVar("V")
# The heaviest entry kept: as much as the native details of the largest e-mail they keep
# (models.mail.caches.EmailReads weighs 16 bytes per raw byte).
LARGEST_ENTRY = 4096 + 16 * CACHED_EMAIL_BYTES


@dataclass(frozen=True)
class Kept:
    """A value kept, with its weight (an estimate of the memory it holds, in bytes)."""

    value: Any
    weight: int


class InboxScopeReads(RevisionedCache[Kept]):
    """Values of inbox scopes' reads, under `(inbox id, the face's key)`, within
    `PAGE_BUDGET`; none heavier than `LARGEST_ENTRY` (read each time instead)."""

    KEY = "compat.inbox-scope-reads"

    @classmethod
    def of(cls, caches: dict[str, Any]) -> InboxScopeReads:
        """The process's cache, kept in `caches` (the Runtime's), made on first use."""
        return kept_in(caches, cls.KEY, lambda: cls(INBOX_REVISIONS.whole, budget=PAGE_BUDGET))

    def keeps(self, value: Kept) -> bool:
        return value.weight <= LARGEST_ENTRY

    def weigh(self, value: Kept) -> int:
        return value.weight


def read_through(scope: Scope, key: Hashable, load: Callable[[], V],
                 weigh: Callable[[V], int]) -> V:
    """The scope's value under `key` (the face's own), kept in the process's
    `InboxScopeReads` (as `weigh` estimates it) for an inbox scope in a read-only request
    with Redis; `load()`ed every time otherwise. A None is never kept."""
    if scope.inbox is None or inbox_caches() is None:
        return load()
    inbox_id: uuid.UUID = scope.inbox.id

    def load_kept() -> Kept | None:
        value = load()
        return None if value is None else Kept(value, weigh(value))

    kept = InboxScopeReads.of(runtime().caches).get(
        revisions(), (inbox_id, key), load_kept, also=inbox_revision(inbox_id))
    return cast(V, None if kept is None else kept.value)
