"""Org actions: create, list the caller's orgs, rename, the org settings, and the tenancy part of
a deletion.

The org entity and `create_org` live in `models.tenancy.orgs`; this module adds the audited actions
the API offers. Deleting an org removes everything that belongs to it, in every context: that
action is `models.lifecycle.orgs.delete_org`, which calls `remove_org` here last. Actions flush
but never commit: the caller does.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from burnbox.settings import Settings
from models.errors import ValidationFailed
from models.pagination import Page, paginate
from models.tenancy.access import Caller, OrgAccess, audit
from models.tenancy.orgs import MAX_NAME, Org, OrgMember, create_org
from models.tenancy.settings_cascade import (
    KEYS,
    ORG,
    EffectiveSettings,
    effective_settings,
    platform_layer,
    resolve,
    validate_layer,
)

ORG_SETTING_KEYS = tuple(name for name, key in KEYS.items() if ORG in key.levels)


def add_org(session: Session, caller: Caller, name: str) -> Org:
    """Create an org with the caller as its owner; ValidationFailed for a bad name."""
    org = create_org(session, name, caller.user_id)
    session.flush()
    audit(session, caller, "org.create", org_id=org.id, resource_type="org", resource_id=org.id,
          after={"name": org.name, "slug": org.slug})
    return org


def list_user_orgs(session: Session, user_id: uuid.UUID, page: int, per_page: int) -> Page[Org]:
    """The orgs `user_id` is a member of, by name."""
    query = (select(Org).join(OrgMember, OrgMember.org_id == Org.id)
             .where(OrgMember.user_id == user_id).order_by(Org.name, Org.id))
    return paginate(session, query, page, per_page)


def rename_org(session: Session, org: OrgAccess, name: str) -> Org:
    """Give the org a new name (1-200 characters; the slug stays, so links keep working)."""
    clean = name.strip()
    if not 1 <= len(clean) <= MAX_NAME:
        raise ValidationFailed("invalid org name",
                               details={"name": [f"must be 1-{MAX_NAME} characters"]})
    before = org.org.name
    if clean != before:
        org.org.name = clean
        session.flush()
        audit(session, org.caller, "org.update", org_id=org.org.id, resource_type="org",
              resource_id=org.org.id, before={"name": before}, after={"name": clean})
    return org.org


def remove_org(session: Session, caller: Caller, org: Org) -> None:
    """The tenancy part of an org deletion: audit it and delete the row (the database cascades:
    members, teams, invites, domains, inboxes, e-mails...). Unchecked: the whole action is
    `models.lifecycle.orgs.delete_org`."""
    audit(session, caller, "org.delete", org_id=org.id, resource_type="org", resource_id=org.id,
          before={"name": org.name, "slug": org.slug})
    session.delete(org)


def org_settings(session: Session, settings: Settings,
                 org: Org) -> tuple[dict[str, Any], EffectiveSettings]:
    """The org's own values of every org-level key (None: inherited) and the values in force."""
    own = {name: (org.settings or {}).get(name) for name in ORG_SETTING_KEYS}
    return own, effective_settings(session, settings, org.id)


def update_org_settings(session: Session, settings: Settings, org: OrgAccess,
                        values: dict[str, Any], *, replace: bool) -> Org:
    """Merge `values` into the org's settings (a None value clears a key), or with `replace`
    make them the whole set. Raise ValidationFailed naming every bad key; nothing changes then."""
    row = org.org
    before = dict(row.settings or {})
    merged = dict(values) if replace else {**before, **values}
    row.settings = validate_layer(ORG, merged, resolve([platform_layer(session, settings)]))
    session.flush()
    if row.settings != before:
        audit(session, org.caller, "org.settings_update", org_id=row.id, resource_type="org",
              resource_id=row.id, before=before, after=dict(row.settings))
    return row
