"""Bootstrap: everything a script needs before its first inbox, made once; a second run changes
nothing, mints no second key, and a key given in advance is stored like any key (hash only)."""

import hashlib

import pytest
from sqlalchemy import func, select

from models.admin.bootstrap import BOOTSTRAP, KEY_NAME, BootstrapRequest, run_bootstrap
from models.admin.setup import complete_setup, is_complete
from models.apikeys.keys import ApiKey, authenticate_key
from models.domains.assignments import DomainAssignment
from models.domains.domains import OPERATOR, VERIFIED, DomainCheck
from models.errors import Conflict, Unauthenticated, ValidationFailed
from models.identity.users import User
from models.mail.inboxes import create_inbox
from models.platform.audit import AuditEntry, Origin
from models.tenancy.orgs import Org
from models.tenancy.rbac import TEAM_PERMISSIONS
from models.tenancy.teams import Team
from tests.factories.identity import make_user
from tests.identity import PASSWORD

CLI = Origin(user_agent="burnbox bootstrap")
GIVEN = "bb_" + "0123456789abcdef" * 4
OTHER = "bb_" + "fedcba9876543210" * 4


def _request(**changes):
    values = {"email": "admin@burnbox.test", "org_name": "Burnbox", "team_name": "Default",
              "domain_name": "burnbox.test", **changes}
    return BootstrapRequest(**values)


def _run(rt, **changes):
    with rt.db.transaction() as session:
        done = run_bootstrap(session, rt.settings, _request(**changes), CLI)
        return done, done.key.prefix


def _count(rt, entity):
    with rt.db.session() as session:
        return session.scalar(select(func.count()).select_from(entity))


def test_a_first_run_makes_everything_and_the_key_creates_an_inbox(committed_runtime):
    rt = committed_runtime
    done, _ = _run(rt)
    assert done.made == ["admin", "setup", "api_key"]
    assert done.admin_password  # made up, shown once
    assert done.raw_key.startswith("bb_")
    with rt.db.transaction() as session:
        assert is_complete(session)
        admin = session.get(User, done.admin.id)
        assert admin.is_system_admin and admin.email == "admin@burnbox.test"
        [assignment] = session.scalars(select(DomainAssignment)).all()
        assert assignment.access_level == "full"
        assert (assignment.domain.domain_name, assignment.domain.status) == (
            "burnbox.test", VERIFIED)
        assert session.scalars(select(DomainCheck.trigger)).all() == [OPERATOR]
        key = session.get(ApiKey, done.key.id)
        assert key.name == KEY_NAME and key.created_by == admin.id
        user, grant = authenticate_key(session, done.raw_key, "127.0.0.1")
        assert user.id == admin.id and grant.team_id == assignment.team_id
        assert {"team.inboxes.create", "team.emails.view"} <= grant.scopes
        # Every scope but the one that sends mail out to real mailboxes.
        assert "team.emails.release" not in grant.scopes
        assert len(grant.scopes) == len(TEAM_PERMISSIONS) - 1
        inbox = create_inbox(session, rt.settings, assignment, created_by=admin.id,
                             alias="signup")
        assert inbox.full_address == "signup@burnbox.test"
        [entry] = session.scalars(select(AuditEntry).where(AuditEntry.action == BOOTSTRAP))
        assert entry.user_agent == "burnbox bootstrap"
        assert entry.after["made"] == ["admin", "setup", "api_key"]


def test_a_second_run_changes_nothing_and_mints_no_second_key(committed_runtime):
    rt = committed_runtime
    first, prefix = _run(rt)
    audit_rows = _count(rt, AuditEntry)
    again, again_prefix = _run(rt, password="ignored-for-an-existing-admin")
    assert again.made == []
    assert again.raw_key is None and again.admin_password is None
    assert again_prefix == prefix
    for entity in (User, Org, Team, DomainAssignment, ApiKey):
        assert _count(rt, entity) == 1, entity
    assert _count(rt, AuditEntry) == audit_rows
    with rt.db.session() as session:  # the first key still works
        authenticate_key(session, first.raw_key, "127.0.0.1")


def test_a_given_key_is_stored_as_its_hash_and_a_new_given_key_replaces_it(committed_runtime):
    rt = committed_runtime
    done, prefix = _run(rt, api_key=GIVEN, password=PASSWORD)
    assert done.made == ["admin", "setup", "api_key"]
    assert done.raw_key is None and done.admin_password is None  # given: never echoed
    assert prefix == GIVEN[:11]
    with rt.db.session() as session:
        key = session.get(ApiKey, done.key.id)
        assert key.key_hash == hashlib.sha256(GIVEN.encode()).hexdigest()
        authenticate_key(session, GIVEN, "127.0.0.1")
    assert _run(rt, api_key=GIVEN)[0].made == []
    # The CI job changes its fixed key: the bootstrap key is rotated to it, still one key.
    assert _run(rt, api_key=OTHER)[0].made == ["api_key_rotated"]
    assert _count(rt, ApiKey) == 1
    with rt.db.session() as session:
        authenticate_key(session, OTHER, "127.0.0.1")
        with pytest.raises(Unauthenticated):
            authenticate_key(session, GIVEN, "127.0.0.1")


@pytest.mark.parametrize("key", ["bb_123", "bb_" + "0123456789ABCDEF" * 4, "x" * 67])
def test_a_malformed_given_key_is_refused_and_nothing_is_made(committed_runtime, key):
    with pytest.raises(ValidationFailed) as refused:
        _run(committed_runtime, api_key=key)
    assert list(refused.value.details) == ["api_key"]
    assert _count(committed_runtime, User) == 0


def test_an_address_of_a_user_who_is_not_an_admin_is_refused(committed_runtime):
    with committed_runtime.db.transaction() as session:
        make_user(session, email="admin@burnbox.test")
    with pytest.raises(Conflict, match="not a system administrator"):
        _run(committed_runtime)
    assert _count(committed_runtime, Org) == 0


def test_after_setup_by_the_api_it_adds_its_admin_and_its_own_org(committed_runtime):
    rt = committed_runtime
    with rt.db.transaction() as session:
        complete_setup(session, rt.settings, email="first@example.test", password=PASSWORD,
                       display_name="First", org_name="First Org", origin=Origin())
    done, _ = _run(rt)
    assert done.made == ["admin", "org", "team", "domain", "assignment", "api_key"]
    assert done.org.name == "Burnbox"
    assert _count(rt, Org) == 2
