"""Revisions and revisioned caches (models.caching), and the callers' cache built on them
(models.identity.callers): which commits move a revision, what an entry serves, and what
happens with the store down."""

from __future__ import annotations

import socket
import uuid
from datetime import timedelta
from functools import partial

import pytest
from sqlalchemy import delete

from burnbox.kv import RedisStore
from burnbox.security import hash_token
from burnbox.timeutil import utcnow
from models.apikeys.keys import ApiKey, KeyUsage, authenticate_key, write_usage
from models.caching import INBOX_REVISIONS, REVISIONS, ROW_FAMILIES, RevisionedCache, Revisions
from models.db import Base, Database, deleted_with
from models.errors import Unauthenticated
from models.identity.callers import CALLERS_REVISION_KEY, CallerCache
from models.identity.users import User
from models.tenancy.orgs import Org
from models.tenancy.teams import Team
from tests.factories.apikeys import make_api_key
from tests.factories.identity import make_user
from tests.factories.mail import make_email, make_inbox
from tests.statements import recorded

RAW = "bb_" + "c" * 64


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def key(runtime, owned_team) -> ApiKey:
    """A committed key of the owned team whose raw secret is RAW."""
    with runtime.db.transaction() as session:
        return make_api_key(session, owned_team, key_hash=hash_token(RAW))


def _callers_revision(runtime) -> str | None:
    return runtime.store.get(CALLERS_REVISION_KEY)


@pytest.fixture
def revision(runtime) -> str:
    """A callers revision set in the store, as the first commit of a write sets one."""
    runtime.store.set(CALLERS_REVISION_KEY, "first")
    return "first"


def test_a_missing_revision_is_set_before_anything_is_kept(runtime):
    # Never kept under "none": after the store is lost again, "none" would match entries
    # read before a change the new store never heard of.
    cache: RevisionedCache[str] = RevisionedCache(CALLERS_REVISION_KEY)
    assert _callers_revision(runtime) is None  # a new store, or one flushed or restarted
    assert cache.get(Revisions(runtime.store), "k", lambda: "one") == "one"
    assert _callers_revision(runtime) is not None
    assert cache.get(Revisions(runtime.store), "k", lambda: "two") == "one"
    runtime.store.delete(CALLERS_REVISION_KEY)  # lost again
    assert cache.get(Revisions(runtime.store), "k", lambda: "three") == "three"


def test_a_committed_write_to_a_team_moves_the_callers_revision(runtime, owned_team):
    # A key's org is read from its team's row: a team moved to another org must be seen.
    before = _callers_revision(runtime)
    with runtime.db.transaction() as session:
        session.get(Team, owned_team.team_id).name = "Renamed"
    assert _callers_revision(runtime) != before


def test_deleting_an_org_or_a_user_reaches_the_tables_the_database_changes_with_it():
    assert {"teams", "api_keys", "team_members"} <= deleted_with("orgs")
    assert {"sessions", "api_keys"} <= deleted_with("users")  # api_keys.created_by: SET NULL
    assert deleted_with("sessions") >= {"sessions"}


def test_a_committed_statement_deleting_an_org_moves_the_callers_revision(runtime, key,
                                                                         owned_team):
    before = _callers_revision(runtime)
    with runtime.db.transaction() as session:
        session.execute(delete(Org).where(Org.id == owned_team.org_id))
    assert _callers_revision(runtime) != before


def test_a_rolled_back_write_moves_nothing(runtime, key):
    before = _callers_revision(runtime)
    session = runtime.db.session()
    session.get(ApiKey, key.id).is_active = False
    session.flush()
    session.rollback()
    session.close()
    assert _callers_revision(runtime) == before


def test_writing_a_key_s_usage_keeps_the_callers_caches(runtime, key):
    before = _callers_revision(runtime)
    with runtime.db.transaction() as session:
        assert write_usage(session, [KeyUsage(key.id, 3, None)]) == 1
    assert _callers_revision(runtime) == before


def test_a_cached_key_still_expires_without_a_write(runtime, engine, key):
    with runtime.db.transaction() as session:
        session.get(ApiKey, key.id).expires_at = utcnow() + timedelta(hours=1)
    lookup = partial(CallerCache(CALLERS_REVISION_KEY).get, Revisions(runtime.store))
    with runtime.db.session() as session:
        authenticate_key(session, RAW, "127.0.0.1", lookup=lookup)
        with recorded(engine) as sent, pytest.raises(Unauthenticated,
                                                              match="API key expired"):
            authenticate_key(session, RAW, "127.0.0.1", now=utcnow() + timedelta(hours=2),
                             lookup=lookup)
        assert sent == []  # refused from the cached row


def test_an_entry_serves_while_its_revision_stands_and_not_after(runtime, revision):
    cache: RevisionedCache[str] = RevisionedCache(CALLERS_REVISION_KEY)
    loads = []

    def load() -> str:
        loads.append(1)
        return f"value {len(loads)}"

    assert cache.get(Revisions(runtime.store), "k", load) == "value 1"
    assert cache.get(Revisions(runtime.store), "k", load) == "value 1"
    runtime.store.set(CALLERS_REVISION_KEY, uuid.uuid4().hex)
    assert cache.get(Revisions(runtime.store), "k", load) == "value 2"


def test_nothing_is_kept_for_a_missing_value_nor_past_the_max_age_nor_the_capacity(
        runtime, revision):
    revisions = Revisions(runtime.store)
    cache: RevisionedCache[str] = RevisionedCache(CALLERS_REVISION_KEY, capacity=2)
    assert cache.get(revisions, "gone", lambda: None) is None
    assert cache.get(revisions, "gone", lambda: "now here") == "now here"
    cache.get(revisions, "b", lambda: "b")
    cache.get(revisions, "c", lambda: "c")  # over the capacity: the oldest ("gone") goes
    assert cache.get(revisions, "gone", lambda: "read again") == "read again"
    aged: RevisionedCache[str] = RevisionedCache(CALLERS_REVISION_KEY, max_age=0.0)
    aged.get(revisions, "k", lambda: "first")
    assert aged.get(revisions, "k", lambda: "second") == "second"


class Weighed(RevisionedCache[str]):
    """A cache whose values weigh their length."""

    def weigh(self, value: str) -> int:
        return len(value)


def test_entries_past_the_budget_push_the_oldest_out_and_a_replaced_entry_weighs_once(
        runtime, revision):
    revisions = Revisions(runtime.store)
    cache = Weighed(CALLERS_REVISION_KEY, budget=10)
    cache.get(revisions, "a", lambda: "aaaa")
    cache.get(revisions, "b", lambda: "bbbb")
    cache.get(revisions, "c", lambda: "cccc")  # 12 bytes: "a" goes
    assert cache.peek("a") is None and cache.peek("b") == "bbbb"
    runtime.store.set(CALLERS_REVISION_KEY, uuid.uuid4().hex)
    cache.get(revisions, "c", lambda: "cc")  # reloaded: its old weight is given back
    cache.get(Revisions(runtime.store), "c", lambda: "cc")
    assert cache.peek("b") == "bbbb" and cache.peek("c") == "cc"
    cache.get(revisions, "huge", lambda: "x" * 50)  # heavier than the budget: kept alone
    assert (cache.peek("b"), cache.peek("huge")) == (None, "x" * 50)


def test_with_the_store_down_every_use_loads_and_earlier_entries_are_forgotten(runtime, revision):
    cache: RevisionedCache[str] = RevisionedCache(CALLERS_REVISION_KEY)
    assert cache.get(Revisions(runtime.store), "k", lambda: "before") == "before"
    down = Revisions(RedisStore(f"redis://127.0.0.1:{_closed_port()}/0"))
    assert cache.get(down, "k", lambda: "during") == "during"
    assert cache.get(down, "k", lambda: "during, again") == "during, again"
    # Back up with the revision unmoved: a change made meanwhile may not have moved it.
    assert cache.get(Revisions(runtime.store), "k", lambda: "after") == "after"


@pytest.mark.postgres
def test_a_command_without_a_runtime_still_moves_the_revision_in_redis(settings, runtime):
    # `burnbox bootstrap` and `burnbox create-admin` open a Database of their own: their
    # commits must reach the web processes' caches all the same.
    database = Database(settings)
    before = _callers_revision(runtime)
    try:
        with database.transaction() as session:
            user_id = make_user(session, email="no-runtime@example.test").id
        assert _callers_revision(runtime) != before
    finally:
        with database.transaction() as session:
            session.execute(delete(User).where(User.id == user_id))
        database.dispose()


def test_every_table_the_revision_table_names_is_a_table_of_the_models():
    # The table names tables by their names: a misspelt one would never move its revision,
    # and the caches built on it would serve stale rows until their maximum age. (Importing
    # any module of `models` loads every entity, so the metadata holds every table.)
    named = set().union(*REVISIONS.values(), ROW_FAMILIES)
    assert named - set(Base.metadata.tables) == set()
    for table, family in ROW_FAMILIES.items():
        assert family.whole in REVISIONS and REVISIONS[family.whole] == family.tables
        attribute = family.parents[table]
        column, _ = family.through.get(table, (attribute, None))
        assert column in Base.metadata.tables[table].columns


def test_a_new_inbox_moves_no_revision_and_its_first_mail_moves_its_own(runtime, mail_world):
    # Nothing of a row can be cached before its insert commits (models.caching.is_family_parent):
    # creating an inbox costs no round trip to the store; what changes it afterwards does.
    whole = runtime.store.get(INBOX_REVISIONS.whole)
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    assert runtime.store.get(INBOX_REVISIONS.key(inbox.id)) is None
    assert runtime.store.get(INBOX_REVISIONS.whole) == whole
    make_email(runtime, inbox.full_address)
    assert runtime.store.get(INBOX_REVISIONS.key(inbox.id)) is not None
    assert runtime.store.get(INBOX_REVISIONS.whole) == whole
