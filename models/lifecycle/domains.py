"""Deleting a domain and moving it to another org: what the other contexts keep on it (team
assignments, inboxes and their e-mails), counted, discarded, dropped or lapsed, then the domain.

Actions flush but do not commit: the caller commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.orm import Session

from models.domains.assignments import count_domain_assignments, drop_domain_assignments
from models.domains.domains import (
    BulkResult,
    Domain,
    check_transfer,
    each_org_domain,
    move_domain,
    remove_domain,
)
from models.errors import Conflict
from models.mail.inboxes import (
    count_active_domain_inboxes,
    count_domain_emails,
    count_domain_inboxes,
    discard_domain_objects,
    lapse_domain_inboxes,
)
from models.tenancy.access import Caller


def domain_impact(session: Session, domain: Domain) -> dict[str, int]:
    """What deleting the domain would remove: its assignments, inboxes (live ones apart) and
    e-mails."""
    return {"assignments": count_domain_assignments(session, domain.id),
            "inboxes": count_domain_inboxes(session, domain.id),
            "active_inboxes": count_active_domain_inboxes(session, domain.id),
            "emails": count_domain_emails(session, domain.id)}


def delete_domain(session: Session, caller: Caller, domain: Domain, *, force: bool = False
                  ) -> None:
    """Delete the domain with its assignments, history, inboxes and e-mails: the stored objects
    of the e-mails are handed over first (they go after commit), then the database cascades
    from the domain row.

    Raise Conflict, with the impact counts in the body, when the domain still has active inboxes
    and `force` is false.
    """
    impact = domain_impact(session, domain)
    if impact["active_inboxes"] and not force:
        raise Conflict(f"the domain has {impact['active_inboxes']} active inboxes; "
                       "delete with force=true to remove them too", extra={"impact": impact})
    discard_domain_objects(session, domain.id)
    remove_domain(session, caller, domain, impact)


def bulk_delete(session: Session, caller: Caller, org_id: uuid.UUID,
                ids: Sequence[uuid.UUID], *, force: bool = False) -> list[BulkResult]:
    """Delete each of the org's domains among `ids` as `delete_domain` would; one that cannot be
    deleted is reported failed with the reason and the others still go (see
    `domains.domains.each_org_domain`)."""
    return each_org_domain(session, org_id, ids,
                           lambda domain: delete_domain(session, caller, domain, force=force))


def transfer_domain(session: Session, caller: Caller, domain: Domain, target_org_id: uuid.UUID
                    ) -> Domain:
    """Move the domain to another org (system administrators only; the view checks that): its
    live inboxes, which belong to the old org's teams, lapse now, and its team assignments go.
    Its verification state stays: DNS did not change.

    Raise ValidationFailed when the domain already belongs to the target, NotFound when the
    target org does not exist.
    """
    check_transfer(session, domain, target_org_id)
    lapse_domain_inboxes(session, domain.id)
    dropped = drop_domain_assignments(session, domain.id)
    return move_domain(session, caller, domain, target_org_id, dropped)
