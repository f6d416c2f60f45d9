"""Per-process caches kept exact across processes by revisions.

A *revision* is a random token under a key of the key-value store. A cache entry remembers the
revision it was read under, and serves only while the store still holds that token, and for at
most `max_age` seconds. A committed change of what a cache holds sets a new token, so every
process reads again at its next use. Why a random token and not a counter: a key that expired,
or a store flushed and filled again, can never hold a token some process cached before.

A revision moves in one of two ways:

- explicitly, after the commit of a change (the roles: `models.tenancy.rbac.invalidate_grants`);
- by the tables `REVISIONS` names for it: `models.db.Database` then moves it after every commit
  that inserted, updated or deleted rows of them, by a flush or by a statement, or deleted rows
  of a table whose deletion cascades into them (an org's deletion removes its teams' API keys);
- per row of a parent table (`RowRevisions`: one revision per inbox, for what belongs to it): a
  committed write that names the parent rows it touched moves only theirs, one that names none
  moves the family's `whole` revision, which every entry checks as well. A write path that
  forgets to name its rows is therefore slower (every entry of the family is read again),
  never stale.

`REVISIONS` is the one table of them all, and the only place that says which writes move
which revision: nothing adds to it at import time, so reading it tells every cache a write
invalidates.

A unit of work (one request) reads every revision of `REVISIONS` in one round trip, the first
time it needs one (`Revisions`); a web request with a credential reads them in its rate
limiter's round trip instead. Why the order is safe: the revision is read before the rows, so a
change committed while they load leaves the old revision beside them and the next use reads again;
and the revision moves only after the commit, so no process can read rows older than it.

With the store unreachable a cache reads from the database every time and forgets what it
held: an entry from before an outage is not trusted after it, when a change made during the
outage may not have moved the revision."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from datetime import timedelta
from types import MappingProxyType
from typing import Any, Generic, Protocol, TypeVar, cast

from burnbox.kv import KeyValueStore, StoreUnavailable

log = logging.getLogger(__name__)

V = TypeVar("V")
C = TypeVar("C")

# The longest an entry serves without being read again: a safety net for a revision that could
# not be moved (the store was down at the commit), not the way changes normally spread.
REVISION_MAX_AGE = 60.0
# How long a revision set because there was none lasts: its expiry only makes every process
# read again once, so any long span does.
ESTABLISHED_TTL = timedelta(days=30)
# How long a row's revision lasts: short, because a store holds one per written row (every
# inbox that received mail) and a row revision that expired only makes each process read that
# row's entries once more.
ROW_REVISION_TTL = timedelta(hours=1)
# Entries a cache keeps at most; the oldest goes first.
DEFAULT_CAPACITY = 10_000


class RowRevisions:
    """A revision per row of a parent table, for caches of what belongs to one row: the row
    and its children (an inbox, its e-mails and their attachments).

    `parents` maps each table of the family to the attribute of its entities that holds the
    parent row's id (None when its entities do not hold it: an attachment knows its e-mail,
    not its inbox). A flush of an entity that names its parent moves that parent's revision;
    a statement names the parents it writes with the execution options of `naming`. Any other
    write to the family's tables (a statement by another column, a cascade from further up, an
    entity that does not name its parent) moves `whole`."""

    def __init__(self, name: str, parents: dict[str, str | None],
                 through: dict[str, tuple[str, str]] | None = None) -> None:
        """`through` maps a table whose entities do not hold the parent's id to (the attribute
        holding the id of their row in another table of the family, that table): an attachment
        flushed with its e-mail (deleted with it, say) is named through the e-mail."""
        self.prefix = f"{name}:"
        self.whole = f"{name}:*"
        self.parents = parents
        self.through = through or {}
        self.tables = frozenset(parents)

    def key(self, parent_id: object) -> str:
        """The revision key of parent row `parent_id`."""
        return f"{self.prefix}{parent_id}"

    def of(self, table: str, entity: object,
           flushed: Mapping[tuple[str, object], object] | None = None) -> str | None:
        """The revision key of the parent of `entity` (a row of `table`), if it names one,
        directly or through an entity of the same flush (`flushed`, by table and id)."""
        attribute = self.parents.get(table)
        if attribute is None:
            column, other = self.through.get(table, (None, ""))
            row = None if column is None or flushed is None else flushed.get(
                (other, getattr(entity, column, None)))
            return None if row is None else self.of(other, row)
        parent = getattr(entity, attribute, None)
        return None if parent is None else self.key(parent)

    def naming(self, parent_ids: Iterable[object]) -> dict[str, Any]:
        """Execution options of a write statement to the family's tables that touches only the
        children of `parent_ids`: it moves their revisions, not `whole`."""
        return {WRITES_ROWS: frozenset(self.key(parent) for parent in parent_ids)}


# Execution option of a write statement naming the row revisions it moves (`RowRevisions`).
WRITES_ROWS = "burnbox_writes_rows"

# Who a credential belongs to: a session or an API key with its user (models.identity.callers).
# A key's org is read from its team's row, so a team moved to another org moves it too.
CALLERS_REVISION_KEY = "auth:callers-revision"
# The roles and their permissions (models.tenancy.rbac.GrantsCache): moved explicitly, by
# `invalidate_grants` in the transaction of every write to roles or permissions.
GRANTS_REVISION_KEY = "rbac:grants-revision"
# Who belongs where (models.tenancy.access): what caches a caller's roles in an org or a team
# depends on it (models.mail.caches); a team's or an org's deletion moves it too, since their
# memberships go with them.
MEMBERSHIPS_REVISION_KEY = "tenancy:memberships-revision"
# One revision per inbox, for its row, its e-mails and their attachments (models.mail.caches).
# An attachment names its e-mail, not its inbox: flushed with its e-mail (deleted with it), it
# is named through the e-mail; written alone, it moves the whole family.
INBOX_REVISIONS = RowRevisions("mail:inbox-revision",
                               {"inboxes": "id", "emails": "inbox_id", "attachments": None},
                               through={"attachments": ("email_id", "emails")})

# The chaos rules of inboxes (models.mail.chaos), as every mailin process keeps them: moved by
# each committed write of a rule, its counter included, so a spent rule stops at once.
CHAOS_REVISION_KEY = "mail:chaos-revision"
# The inboxes' SMTP capture credentials (models.mail.smtp_credentials), as every mailin process
# keeps them: moved by each committed write of a credential (created, rotated, revoked, its
# inbox deleted, its last use recorded), so a revoked or rotated secret fails at the next AUTH.
SMTP_CREDENTIALS_REVISION_KEY = "mail:smtp-credentials-revision"
# The administrator's platform settings (models.platform.settings), as web processes keep them:
# moved by each committed write of the settings row (PUT /admin/platform, setup's completion).
PLATFORM_REVISION_KEY = "platform:settings-revision"

# Every revision a unit of work reads (`Revisions`, in this order), each with the tables whose
# committed writes move it (none: it is moved explicitly). A row family's `whole` revision is
# moved by the writes to its tables that name no row. A cache built on tables must list them
# here: a write to a table no entry names moves nothing.
REVISIONS: Mapping[str, frozenset[str]] = MappingProxyType({
    CALLERS_REVISION_KEY: frozenset({"users", "sessions", "api_keys", "teams"}),
    GRANTS_REVISION_KEY: frozenset(),
    MEMBERSHIPS_REVISION_KEY: frozenset({"org_members", "team_members"}),
    INBOX_REVISIONS.whole: INBOX_REVISIONS.tables,
    CHAOS_REVISION_KEY: frozenset({"chaos_rules"}),
    SMTP_CREDENTIALS_REVISION_KEY: frozenset({"smtp_credentials"}),
    PLATFORM_REVISION_KEY: frozenset({"platform_settings"}),
})
# Tables whose deletion by a cascade (their parent deleted) moves none of their revisions:
# their caches keep rows only under the id of a live parent. Mailin's chaos rules are kept by
# inbox id, and the rules an inbox's deletion (or its team's, org's, domain's) cascades to sit
# under an id no live inbox will ever hold (ids are random, never reused), so they are never
# asked for again; an assignment's rules, which its deletion cascades to, are not cached at
# all. Every other write of their rows (a rule set, spent, replaced) moves them as ever. Why:
# a test suite deletes an inbox per test; each deletion moved the revision, and every mailin
# connection then read all the rules from the database again.
UNMOVED_BY_CASCADES = frozenset({"chaos_rules"})
# The families of row revisions (`RowRevisions`), by each of their tables.
ROW_FAMILIES: Mapping[str, RowRevisions] = MappingProxyType(
    {table: family for family in (INBOX_REVISIONS,) for table in family.tables})


def declared_revisions() -> list[str]:
    """Every revision key of `REVISIONS`, in the order `Revisions` reads them."""
    return list(REVISIONS)


def revisions_moved_by(tables: Collection[str]) -> list[str]:
    """The revision keys a commit moves that wrote rows of `tables`."""
    return [key for key, watched in REVISIONS.items() if not watched.isdisjoint(tables)]


def row_revision_of(table: str, entity: object,
                    flushed: Mapping[tuple[str, object], object] | None = None
                    ) -> tuple[str | None, frozenset[str]]:
    """The row revision a flush of `entity` (a row of `table`) moves, with the tables of its
    family (which it then need not move as a whole); (None, no tables) when it names none.
    `flushed`: the flush's entities by table and id (see `RowRevisions.of`)."""
    family = ROW_FAMILIES.get(table)
    if family is None:
        return None, frozenset()
    key = family.of(table, entity, flushed)
    return (None, frozenset()) if key is None else (key, family.tables)


def is_family_parent(table: str) -> bool:
    """Whether the rows of `table` are the parent rows of a row-revision family (inboxes).

    A parent row just inserted moves no revision (`models.db` notes nothing of its family):
    every cache entry of the family is kept under one parent's id, and no entry of a new row
    can exist before its insert commits. Its id is made by the code that inserts it, which
    tells nobody before the commit, and a cache keeps only what its load found. The first read
    after the commit sets the row's revision (`Revisions.establish`)."""
    family = ROW_FAMILIES.get(table)
    return family is not None and family.parents.get(table) == "id"


def family_tables(table: str) -> frozenset[str]:
    """The tables of the row-revision family `table` belongs to (none if it belongs to none)."""
    family = ROW_FAMILIES.get(table)
    return frozenset() if family is None else family.tables


def _ttl_of(key: str) -> timedelta | None:
    """How long a new token under `key` lasts: a row's revision, `ROW_REVISION_TTL`; one of
    `REVISIONS`, for ever (None)."""
    return ROW_REVISION_TTL if key not in REVISIONS else None


def new_revisions(store: KeyValueStore, keys: Iterable[str]) -> None:
    """Set a new token under each of `keys` now, in one round trip: every process reads
    again at its next use."""
    with store.batch() as batch:
        for key in keys:
            batch.set(key, uuid.uuid4().hex, _ttl_of(key))


class Revisions:
    """The revisions one unit of work checks its caches against: every one of `REVISIONS`, read
    from the store in one round trip on first use and then kept for the unit of work."""

    def __init__(self, store: KeyValueStore, tokens: dict[str, str | None] | None = None
                 ) -> None:
        """`tokens`: the revisions already read for this unit of work, by key (the web
        request's rate limiter reads them in its own round trip)."""
        self.store = store
        self._tokens = tokens

    def get(self, key: str) -> str | None:
        """The token under `key` (None when unset). Raise StoreUnavailable."""
        if self._tokens is None:
            keys = declared_revisions()
            self._tokens = dict(zip(keys, self.store.get_many(keys), strict=True))
        if key not in self._tokens:  # a row's revision not read ahead: one more round trip
            self._tokens[key] = self.store.get(key)
        return self._tokens[key]

    def establish(self, key: str) -> str:
        """The token under `key`, set to a new one if there is none. Raise StoreUnavailable."""
        token = uuid.uuid4().hex
        if not self.store.set_if_absent(key, token, _ttl_of(key) or ESTABLISHED_TTL):
            token = self.store.get(key) or token  # set meanwhile by another process
        if self._tokens is not None:
            self._tokens[key] = token
        return token


class RevisionedCache(Generic[V]):
    """Values of one process, each served while the revision under `revision_key` (and those
    its `get` named) stands and for at most `max_age` seconds; at most `capacity` of them, and
    with a `budget`, at most that many bytes of them as `weigh` estimates. The oldest entry
    goes first when either bound is reached."""

    def __init__(self, revision_key: str, *, max_age: float = REVISION_MAX_AGE,
                 capacity: int = DEFAULT_CAPACITY, budget: int | None = None) -> None:
        self.revision_key = revision_key
        self.max_age = max_age
        self.capacity = capacity
        self.budget = budget
        self._lock = threading.Lock()
        # key -> (revisions, when loaded, value, weight)
        self._entries: dict[Hashable, tuple[tuple[str, ...], float, V, int]] = {}
        self._weight = 0

    def keeps(self, value: V) -> bool:
        """Whether to keep `value` once loaded: every value, unless a subclass says not."""
        return True

    def weigh(self, value: V) -> int:
        """An estimate of the memory `value` holds, in bytes, counted against the `budget`:
        0 unless a subclass says (a cache without a budget counts entries only)."""
        return 0

    def peek(self, key: Hashable) -> V | None:
        """The value kept under `key`, whatever its revision or age: a hint only, for work
        that is checked or undone once the value is looked up properly with `get`."""
        entry = self._entries.get(key)
        return None if entry is None else entry[2]

    def get(self, revisions: Revisions, key: Hashable, load: Callable[[], V | None],
            also: Sequence[str] = ()) -> V | None:
        """The value under `key`: cached, or `load()`ed (and kept, unless None) when a
        revision moved (the cache's, or one of `also`, which the entry then depends on too),
        the entry is too old, or there is none. With the store unreachable, `load()` every
        time and forget every entry."""
        try:
            revision = tuple(_token(revisions, name) for name in (self.revision_key, *also))
        except StoreUnavailable:
            log.warning("the key-value store is unreachable: reading from the database",
                        extra={"cache": self.revision_key})
            with self._lock:
                self._entries, self._weight = {}, 0
            return load()
        now = time.monotonic()
        entry = self._entries.get(key)
        if entry is not None and entry[0] == revision and now - entry[1] < self.max_age:
            return entry[2]
        value = load()
        with self._lock:
            self._forget(key)  # gone or replaced: `peek` must not find the old value either
            if value is not None and self.keeps(value):
                self._keep(key, (revision, now, value, self.weigh(value)))
        return value

    def _forget(self, key: Hashable) -> None:
        """Drop the entry under `key`, if any (the lock held)."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._weight -= entry[3]

    def _keep(self, key: Hashable, entry: tuple[tuple[str, ...], float, V, int]) -> None:
        """Keep `entry` under `key`, dropping the oldest entries while a bound would be
        passed (the lock held)."""
        weight = entry[3]
        while self._entries and (
                len(self._entries) >= self.capacity
                or (self.budget is not None and self._weight + weight > self.budget)):
            self._forget(next(iter(self._entries)))
        self._entries[key] = entry
        self._weight += weight


def kept_in(caches: dict[str, Any], key: str, make: Callable[[], C]) -> C:
    """The process's cache under `key` in `caches` (the Runtime's), made by `make` on first
    use."""
    cache = caches.get(key)
    if cache is None:
        cache = caches.setdefault(key, make())
    return cast(C, cache)


def _token(revisions: Revisions, key: str) -> str:
    """The token under `key`. None is never an answer: a missing revision (a new store, one
    flushed or restarted, a row's that expired) is set now, so that no entry is ever kept under
    "none", which a later loss of the store would match again after a change it never heard
    of. Raise StoreUnavailable."""
    return revisions.get(key) or revisions.establish(key)


class Lookup(Protocol[V]):
    """A cache as the domain actions are given it: `RevisionedCache.get` bound to the unit of
    work's revisions, or `uncached`."""

    def __call__(self, key: Hashable, load: Callable[[], V | None],
                 also: Sequence[str] = ()) -> V | None: ...


def uncached(_key: Hashable, load: Callable[[], V | None], also: Sequence[str] = ()) -> V | None:
    """The `Lookup` that caches nothing: it loads every time."""
    return load()
