"""The audit trail keeps platform events (no org) and outlives the users it names."""

import uuid

from sqlalchemy import select

from models.identity.users import User
from models.platform.audit import AuditEntry, record_audit


def test_a_platform_event_without_an_org_is_stored(runtime, user):
    with runtime.db.transaction() as session:
        record_audit(session, "auth.login", actor_id=user.id, resource_type="session",
                     resource_id=uuid.UUID(int=7), ip="203.0.113.9", user_agent="x" * 600,
                     after={"reason": "test"})
    with runtime.db.session() as session:
        [entry] = session.scalars(select(AuditEntry)).all()
    assert entry.org_id is None
    assert entry.resource_id == str(uuid.UUID(int=7))
    assert (entry.ip, len(entry.user_agent), entry.after) == ("203.0.113.9", 512,
                                                              {"reason": "test"})
    assert entry.created_at.tzinfo is not None


def test_entries_survive_the_deletion_of_their_actor(runtime, user):
    with runtime.db.transaction() as session:
        record_audit(session, "auth.account_delete", actor_id=user.id, resource_type="user",
                     resource_id=user.id, ip=None, user_agent=None, before={"email": user.email})
        session.delete(session.get(User, user.id))
    with runtime.db.session() as session:
        [entry] = session.scalars(select(AuditEntry)).all()
    assert entry.actor_id == user.id
