"""Membership helpers: unique keys taken concurrently become Conflict, and bulk steps are
independent of each other."""

import uuid

import pytest
from sqlalchemy import select

from burnbox.timeutil import utcnow
from models.errors import Conflict, ValidationFailed
from models.tenancy.org_actions import add_org
from models.tenancy.orgs import OrgMember
from models.tenancy.roster import Skip, flush_or_conflict, run_bulk
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of


def test_a_key_taken_by_a_concurrent_request_is_a_conflict_and_the_session_stays_usable(
        runtime):
    with runtime.db.transaction() as session:
        owner = make_user(session, "owner")
        joiner = make_user(session, "joiner")
        org = add_org(session, caller_of(owner), "Raced")
    ours = runtime.db.session()
    with runtime.db.transaction() as theirs:  # commits between our check and our insert
        theirs.add(OrgMember(org_id=org.id, user_id=joiner.id, role="admin",
                             created_at=utcnow()))
    late = OrgMember(org_id=org.id, user_id=joiner.id, role="member", created_at=utcnow())
    with pytest.raises(Conflict, match="already a member"):
        flush_or_conflict(ours, "already a member of this org", late)
    assert ours.scalar(select(OrgMember.role).where(OrgMember.user_id == joiner.id)) == "admin"
    ours.close()


def test_a_failed_or_skipped_bulk_item_leaves_the_others_done(runtime):
    with runtime.db.session() as session:
        owner = make_user(session, "owner")
        org = add_org(session, caller_of(owner), "Bulk")
        names = ["ok", "skip", "fail", "ok-too"]
        users = {name: make_user(session, name) for name in names}

        def step(name):
            session.add(OrgMember(org_id=org.id, user_id=users[name].id, role="member",
                                  created_at=utcnow()))
            session.flush()
            if name == "skip":
                raise Skip("nothing to do")
            if name == "fail":
                raise ValidationFailed("bad item")
            return users[name].id

        result = run_bulk(session, names, str, step, "added")
        assert [item.status for item in result.results] == ["added", "skipped", "failed", "added"]
        assert result.counts == {"added": 2, "skipped": 1, "failed": 1}
        joined = set(session.scalars(select(OrgMember.user_id).where(OrgMember.org_id == org.id)))
        assert joined == {owner.id, users["ok"].id, users["ok-too"].id}


def test_bulk_requests_are_limited_to_100_items(runtime):
    with runtime.db.session() as session, pytest.raises(ValidationFailed):
        run_bulk(session, [uuid.uuid4()] * 101, str, lambda item: item, "done")
