"""Deleting an org: confirmed by the caller's password, the stored objects of every e-mail it
holds handed over, then the org row (members, teams, invites, domains, inboxes, e-mails...
cascade).

It never commits (the caller does), but it ends the access check's read-only transaction before
the password hash, so no lock is held through the slow check.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from burnbox.kv import KeyValueStore
from burnbox.settings import Settings
from models.db import end_read_only_transaction
from models.errors import Forbidden, NotFound, ValidationFailed
from models.identity.credentials import check_password
from models.identity.users import User
from models.mail.inboxes import discard_org_objects
from models.platform.settings import live_settings
from models.tenancy.access import OrgAccess
from models.tenancy.org_actions import remove_org
from models.tenancy.orgs import Org


def delete_org(session: Session, store: KeyValueStore, settings: Settings, org: OrgAccess,
               user: User, *, password: str | None, signed_in: bool) -> None:
    """Delete the org and everything in it.

    The caller confirms with their password (counted by the sign-in lockout); a user without
    one (SSO only) is confirmed by making the request from a signed-in session, which an API
    key is not. Raise ValidationFailed (password missing), Forbidden (wrong password, or an
    SSO-only caller without a session), NotFound (the org went meanwhile)."""
    org_id = org.org.id
    if user.password_hash is not None:
        if not password:
            raise ValidationFailed("confirm with your password",
                                   details={"password": ["required to delete the org"]})
        email, stored = user.email, user.password_hash
        live = live_settings(session, settings)  # the lockout keys (PUT /admin/platform)
        # The access check before this only read: end that transaction rather than hold its
        # locks (SQLite's write lock) through the slow hash; the deletion opens a new one.
        end_read_only_transaction(session)
        if not check_password(store, live, email, stored, password):
            raise Forbidden("password is incorrect")
    elif not signed_in:
        raise Forbidden("deleting an org needs a signed-in session")
    row = session.get(Org, org_id)
    if row is None:
        raise NotFound("org not found")
    discard_org_objects(session, org_id)
    remove_org(session, org.caller, row)
    session.flush()
