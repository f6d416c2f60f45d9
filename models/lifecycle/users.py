"""Deleting an account: the identity checks, the tenancy rule that no org is left without an
owner, the user's API keys revoked, then the user row (its sessions, tokens and memberships
cascade).

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
    owned = sole_owner_org_ids(session, locked.id)
    if owned:
        raise Conflict("transfer ownership of your orgs or delete them first",
                       extra={"org_ids": [str(org_id) for org_id in owned]})
    record_audit(session, audit.ACCOUNT_DELETE, actor_id=locked.id, resource_type="user",
                 resource_id=locked.id, ip=origin.ip, user_agent=origin.user_agent,
                 before={"email": locked.email, "display_name": locked.display_name})
    revoke_user_keys(session, locked.id)
    delete_user(session, locked)
