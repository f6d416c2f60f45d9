"""The admin context's user rules that no single request shows: foreign keys that let a user go,
and the last-administrator rule when two administrators act on each other."""

import pytest
from sqlalchemy import inspect, select

from models.admin.users import delete_user_as_admin, update_user
from models.errors import Conflict, Forbidden
from models.identity.accounts import confirm_account_deletion
from models.identity.users import User
from tests.factories.identity import make_password_user, make_user
from tests.factories.tenancy import caller_of
from tests.identity import PASSWORD

LETS_THE_USER_GO = {"CASCADE", "SET NULL"}


def test_every_foreign_key_to_users_cascades_or_is_set_null(engine):
    inspector = inspect(engine)
    found = []
    for table in inspector.get_table_names():
        for key in inspector.get_foreign_keys(table):
            if key["referred_table"] == "users":
                ondelete = (key.get("options") or {}).get("ondelete", "NO ACTION")
                found.append((table, tuple(key["constrained_columns"]), ondelete.upper()))
    assert len(found) >= 9  # sessions, tokens, memberships, keys, inboxes, invites...
    assert [row for row in found if row[2] not in LETS_THE_USER_GO] == []


def _admins(runtime):
    with runtime.db.session() as session:
        return set(session.scalars(select(User.id).where(User.is_system_admin.is_(True),
                                                         User.disabled_at.is_(None))))


@pytest.mark.parametrize("action", ["delete", "demote", "disable"])
def test_two_admins_removing_each_other_leave_one(committed_runtime, action):
    """Both requests began while both were administrators (their callers say so); the second
    to commit finds its actor gone or demoted under the lock and is refused."""
    with committed_runtime.db.transaction() as session:
        first = make_user(session, "first_root", is_system_admin=True)
        second = make_user(session, "second_root", is_system_admin=True)
    first_caller, second_caller = caller_of(first), caller_of(second)

    def remove(actor, target):
        with committed_runtime.db.transaction() as session:
            if action == "delete":
                delete_user_as_admin(session, actor, target.id)
            else:
                change = {"is_system_admin": False} if action == "demote" else {"disabled": True}
                update_user(session, actor, target.id, change)

    remove(first_caller, second)
    with pytest.raises(Forbidden):
        remove(second_caller, first)
    assert _admins(committed_runtime) == {first.id}


def test_a_disabled_administrator_does_not_count_as_the_one_who_remains(runtime):
    with runtime.db.transaction() as session:
        root = make_password_user(session, runtime.settings, is_system_admin=True)
        other = make_user(session, "disabled_root", is_system_admin=True)
        update_user(session, caller_of(root), other.id, {"disabled": True})
    with runtime.db.transaction() as session, pytest.raises(Conflict):
        confirm_account_deletion(session, runtime.store, runtime.settings,
                                 session.get(User, root.id), password=PASSWORD)
