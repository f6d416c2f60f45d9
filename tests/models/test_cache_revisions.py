"""Every per-process cache is kept exact by revisions (models.caching), which only the committed
writes of the tables `REVISIONS` names move. A cache whose load reads a table no revision it
depends on names goes stale when that table changes: nothing tells the process to read again.
This test runs each cache's real load, records the tables its statements read, and fails for a
table outside the revisions the cache depends on, unless `NOT_FOLLOWED` says why that is safe.
A new cache (a new `RevisionedCache`, or a new revision in `REVISIONS`) must add its load here."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import select

import models
from burnbox.security import hash_token
from compat.caches import InboxScopeReads
from compat.mailhog.messages import MESSAGE_COLUMNS
from mailin.chaos import ChaosGate
from mailin.logins import LoginGate
from models.apikeys.keys import _known_key
from models.caching import (
    CALLERS_REVISION_KEY,
    CHAOS_REVISION_KEY,
    GRANTS_REVISION_KEY,
    INBOX_REVISIONS,
    MEMBERSHIPS_REVISION_KEY,
    PLATFORM_REVISION_KEY,
    REVISIONS,
    SMTP_CREDENTIALS_REVISION_KEY,
    RevisionedCache,
)
from models.identity.callers import CallerCache
from models.identity.sessions import UserSession, _known_session
from models.mail.caches import EmailReads, InboxPages, InboxStandings
from models.mail.chaos import active_rules
from models.mail.emails import _INBOX_PAGE, _email_copy, inbox_scope
from models.mail.inboxes import _standing
from models.mail.smtp_credentials import find_login
from models.platform.audit import Origin
from models.platform.settings import PlatformCache, read_platform
from models.tenancy.access import Caller
from models.tenancy.rbac import GrantsCache, load_grants
from tests.factories.apikeys import make_api_key
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.factories.tenancy import make_owned_team
from tests.statements import recorded

# Tables a cache reads that no revision of it follows, each with why a change there cannot make
# a cached value wrong.
NOT_FOLLOWED = {
    # The login's inbox: its expiry is read again when the cached one has passed (an extended
    # inbox is found then), and mail for an inbox deleted since is not stored by ingest.
    (LoginGate.CACHE, "inboxes"),
}
# Revisions moved by the actions that change their tables, not by table writes (REVISIONS
# names no table for them): the grants, moved by every change of a role or its permissions.
MOVED_EXPLICITLY = {GRANTS_REVISION_KEY: {"roles", "role_permissions", "permissions"}}


def _tables_of(revisions: list[str]) -> set[str]:
    tables: set[str] = set()
    for key in revisions:
        tables |= REVISIONS.get(key, frozenset()) | MOVED_EXPLICITLY.get(key, set())
    return tables


def _tables_read(statements: list[str]) -> set[str]:
    """The tables of the schema that `statements` name after FROM or JOIN."""
    names = set(models.Base.metadata.tables)
    return {name for statement in statements
            for name in re.findall(r'\b(?:FROM|JOIN)\s+"?(\w+)"?', statement, re.IGNORECASE)
            if name in names}


@pytest.fixture
def loads(runtime) -> dict[str, tuple[list[str], Callable[[], object]]]:
    """Each cache (by its key) with the revisions it depends on and its real load."""
    settings = runtime.settings
    with runtime.db.transaction() as session:
        world = make_mail_world(session, settings)
        inbox = make_inbox(session, settings, world)
        member = world.users["team_member"]
        raw_key = "bb_" + uuid.uuid4().hex * 2
        make_api_key(session, make_owned_team(session, settings), key_hash=hash_token(raw_key))
        user_session = session.query(UserSession).filter_by(user_id=member.id).first()
        address, inbox_id, member_id = inbox.full_address, inbox.id, member.id
        session_id = user_session.id
    email_id = make_email(runtime, address, attachments=[("a.txt", "text/plain", b"hi")])
    caller = Caller(user_id=member_id, is_system_admin=False, origin=Origin())
    opened = []

    def db():
        # Closed after the test: a session left to the garbage collector keeps its write
        # transaction counted by the outbound guard until it is collected, and a later test's
        # SMTP call in this thread failed as "inside a write transaction".
        session = runtime.db.session()
        opened.append(session)
        return session

    inbox_family = [INBOX_REVISIONS.whole]
    yield {
        InboxStandings.KEY: ([*inbox_family, MEMBERSHIPS_REVISION_KEY],
                             lambda: _standing(db(), caller, inbox_id, copy=True)),
        InboxPages.KEY: (inbox_family,
                         lambda: _INBOX_PAGE.run(db(), 1, 20, {"inbox_id": inbox_id})),
        EmailReads.KEY: (inbox_family, lambda: _email_copy(db(), email_id)),
        # An inbox scope's page of the MailHog face (its one message is a row of the same).
        InboxScopeReads.KEY: (inbox_family, lambda: db().execute(
            select(*MESSAGE_COLUMNS).where(inbox_scope(inbox_id)).limit(50)).all()),
        CallerCache.KEY: ([CALLERS_REVISION_KEY],
                          lambda: (_known_session(db(), session_id),
                                   _known_key(db(), hash_token(raw_key)))),
        GrantsCache.KEY: ([GRANTS_REVISION_KEY], lambda: load_grants(db())),
        ChaosGate.CACHE: ([CHAOS_REVISION_KEY], lambda: active_rules(db())),
        LoginGate.CACHE: ([SMTP_CREDENTIALS_REVISION_KEY], lambda: find_login(db(), address)),
        PlatformCache.KEY: ([PLATFORM_REVISION_KEY],
                            lambda: read_platform(db(), settings)),
    }
    for session in reversed(opened):  # the newest savepoint first
        session.close()


def test_every_table_a_cache_reads_moves_a_revision_it_depends_on(runtime, engine, loads):
    stale = []
    for cache, (revisions, load) in loads.items():
        with recorded(engine) as statements:
            load()
        read = _tables_read(statements)
        assert read, f"{cache}'s load read nothing: the recorder missed it"
        followed = _tables_of(revisions)
        stale += [(cache, table) for table in sorted(read - followed)
                  if (cache, table) not in NOT_FOLLOWED]
    assert stale == [], ("a cache reads a table none of its revisions follows: name the table "
                         "in models/caching.py's REVISIONS, or say here why it is safe")


def test_every_cache_and_revision_has_its_load_here(loads):
    def subclasses(cls: type) -> set[type]:
        return {sub for direct in cls.__subclasses__() for sub in {direct, *subclasses(direct)}}

    # The code's caches only: a test module's own subclasses (tests/models/test_caching.py) are
    # there too once it is imported, which a whole-suite run always does first.
    caches = {cls for cls in subclasses(RevisionedCache) if not cls.__module__.startswith("tests.")}
    assert {cls.KEY for cls in caches} <= set(loads)
    covered = {key for revisions, _ in loads.values() for key in revisions}
    assert set(REVISIONS) <= covered
