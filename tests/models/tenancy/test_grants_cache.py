"""The per-process grants cache (models.tenancy.rbac.GrantsCache): no SQL while the grants
revision stands, every process reloading once a role write commits its invalidation, nothing
bumped by a rolled-back write, and the database read directly while the store is down."""

from __future__ import annotations

import socket

from sqlalchemy import event, select

from burnbox.kv import RedisStore
from models.caching import Revisions
from models.tenancy.rbac import (
    TEAM_SCOPE,
    GrantsCache,
    Role,
    RolePermission,
    bump_grants_revision,
    invalidate_grants,
)

PERMISSION = "team.members.view"


def _member_role_holds(grants) -> bool:
    return PERMISSION in grants.permissions_of(TEAM_SCOPE, "member")


def _revoke(session) -> None:
    role_id = session.scalar(select(Role.id).where(Role.scope == TEAM_SCOPE,
                                                   Role.name == "member"))
    session.execute(RolePermission.__table__.delete().where(
        RolePermission.role_id == role_id, RolePermission.permission_key == PERMISSION))


def _statements(engine, action) -> int:
    sent = []

    def note(_conn, _cursor, statement, *_args) -> None:
        if not statement.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK TO")):
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        action()
    finally:
        event.remove(engine, "before_cursor_execute", note)
    return len(sent)


def test_cached_grants_cost_no_sql_until_the_revision_moves(runtime, engine):
    cache = GrantsCache()
    with runtime.db.session() as session:
        assert _statements(engine, lambda: cache.get(session, Revisions(runtime.store))) == 3
        assert _statements(engine, lambda: cache.get(session, Revisions(runtime.store))) == 0
        bump_grants_revision(runtime.store)
        assert _statements(engine, lambda: cache.get(session, Revisions(runtime.store))) == 3


def test_a_committed_role_write_reaches_every_process_sharing_the_store(runtime, any_store):
    web_one, web_two = GrantsCache(), GrantsCache()  # the caches of two processes
    with runtime.db.session() as session:
        assert _member_role_holds(web_one.get(session, Revisions(any_store)))
        assert _member_role_holds(web_two.get(session, Revisions(any_store)))
    with runtime.db.transaction() as session:
        _revoke(session)
        invalidate_grants(session, any_store)
        with runtime.db.session() as reader:  # before the commit: nothing moved yet
            assert _member_role_holds(web_one.get(reader, Revisions(any_store)))
    with runtime.db.session() as session:
        assert not _member_role_holds(web_one.get(session, Revisions(any_store)))
        assert not _member_role_holds(web_two.get(session, Revisions(any_store)))


def test_a_rolled_back_role_write_bumps_nothing(runtime):
    cache = GrantsCache()
    with runtime.db.session() as session:
        cache.get(session, Revisions(runtime.store))
    revision_before = runtime.store.get("rbac:grants-revision")
    session = runtime.db.session()
    _revoke(session)
    invalidate_grants(session, runtime.store)
    session.rollback()
    session.close()
    assert runtime.store.get("rbac:grants-revision") == revision_before


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_with_the_store_down_the_grants_come_from_the_database_every_time(runtime, engine):
    down = RedisStore(f"redis://127.0.0.1:{_closed_port()}/0")
    cache = GrantsCache()
    with runtime.db.session() as session:
        assert _statements(engine, lambda: cache.get(session, Revisions(down))) == 3
        assert _statements(engine, lambda: cache.get(session, Revisions(down))) == 3
        assert _member_role_holds(cache.get(session, Revisions(down)))


def test_grants_older_than_the_max_age_are_read_again(runtime, engine):
    cache = GrantsCache(max_age=0.0)
    with runtime.db.session() as session:
        cache.get(session, Revisions(runtime.store))
        assert _statements(engine, lambda: cache.get(session, Revisions(runtime.store))) == 3
