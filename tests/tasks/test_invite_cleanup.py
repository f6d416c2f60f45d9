"""Lapsed invites go with the cleanup worker's run, on worker threads and real commits."""

from datetime import timedelta

from sqlalchemy import select, update

from burnbox.timeutil import utcnow
from models.tenancy.invites import Invite, create_invite
from models.tenancy.org_actions import add_org
from tasks.cleanup import cleanup
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of, org_access
from tests.tasks.conftest import drain


def test_the_cleanup_run_deletes_lapsed_invites_and_keeps_live_ones(committed_runtime, broker,
                                                                     worker):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        owner = make_user(session, "owner")
        org = add_org(session, caller_of(owner), "Cleanup Org")
        access = org_access(session, owner, org.id)
        for email in ("lapsed@example.test", "live@example.test"):
            create_invite(session, runtime.settings, access, email=email, role="member")
        session.execute(update(Invite).where(Invite.email == "lapsed@example.test")
                        .values(expires_at=utcnow() - timedelta(seconds=1)))

    cleanup.send()
    drain(broker, "clock")

    with runtime.db.session() as session:
        assert list(session.scalars(select(Invite.email))) == ["live@example.test"]
