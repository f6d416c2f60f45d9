"""Deleting a user, by themselves (`delete_account`) or by a system administrator
(`models.admin.users.delete_user_as_admin`): the tenancy rule that no org is left without an
owner, the user's API keys revoked, then the user row (its sessions, tokens and memberships
cascade), in `remove_user`, the one place that says what removing a user does.

It flushes but never commits: the caller does.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from burnbox.kv import KeyValueStore
from burnbox.settings import Settings
from models.apikeys.keys import revoke_user_keys
from models.errors import Conflict
from models.identity.accounts import confirm_account_deletion
from models.identity.users import User, delete_user
from models.platform import audit
from models.platform.audit import Origin, record_audit
from models.tenancy.orgs import sole_owner_org_ids


def delete_account(session: Session, store: KeyValueStore, settings: Settings, user: User, *,
                   password: str | None, origin: Origin) -> None:
    """Delete the user and everything hanging off the account (sessions, tokens, memberships),
    revoking their API keys.

    A user with a password must confirm with it; an SSO-only user is confirmed by the session
    making the request. Raise Conflict for the last system administrator and for the only owner
    of an org; Forbidden for a wrong password."""
    locked = confirm_account_deletion(session, store, settings, user, password=password)
    check_no_sole_ownership(session, locked, "transfer ownership of your orgs or delete them "
                            "first")
    record_audit(session, audit.ACCOUNT_DELETE, actor_id=locked.id, resource_type="user",
                 resource_id=locked.id, ip=origin.ip, user_agent=origin.user_agent,
                 before={"email": locked.email, "display_name": locked.display_name})
    remove_user(session, locked)


def check_no_sole_ownership(session: Session, user: User, refusal: str) -> None:
    """Raise Conflict(`refusal`, with the org ids in `org_ids`) when the user is the only
    owner of some orgs: removing them would leave those orgs without one."""
    owned = sole_owner_org_ids(session, user.id)
    if owned:
        raise Conflict(refusal, extra={"org_ids": [str(org_id) for org_id in owned]})


def remove_user(session: Session, user: User) -> int:
    """Revoke the user's API keys (a deleted user's keys must not keep working), then delete
    the row; return how many keys were revoked. The caller has checked the identity rules and
    `check_no_sole_ownership`."""
    revoked = revoke_user_keys(session, user.id)
    delete_user(session, user)
    return revoked
