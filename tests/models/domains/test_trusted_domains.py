"""Operator-trusted domains (`domains.trusted`): verified on registration without DNS, and only
a system administrator may register one, so no org can claim a name by being first."""

import pytest
from sqlalchemy import select

from models.domains.domains import (
    AUTO_CREATE,
    CHECK_REQUESTED,
    OPERATOR,
    PENDING,
    VERIFIED,
    Domain,
    DomainCheck,
    is_trusted,
    register_domain,
)
from models.errors import Forbidden
from models.events import Event
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of, make_org


@pytest.fixture
def session(runtime):
    with runtime.db.session() as session:
        yield session


@pytest.fixture
def trusting(settings):
    return settings.replace(**{"domains.trusted": ("burnbox.test", "Mail.Corp.Example.")})


def test_trusted_names_compare_in_their_stored_form(trusting):
    assert is_trusted(trusting, "mail.corp.example")
    assert is_trusted(trusting, "burnbox.test")
    assert not is_trusted(trusting, "sub.burnbox.test")  # names, not suffixes
    assert not is_trusted(trusting.replace(**{"domains.trusted": ()}), "burnbox.test")


def test_a_system_admin_registers_a_trusted_name_verified_at_once_without_dns(session, trusting):
    admin = make_user(session, "admin", is_system_admin=True)
    org = make_org(session, admin)
    domain = register_domain(session, trusting, caller_of(admin), org.id, "MAIL.corp.example.")
    assert (domain.domain_name, domain.status) == ("mail.corp.example", VERIFIED)
    # The DNS flags say what DNS said: nothing was looked up.
    assert (domain.txt_verified, domain.mx_verified, domain.dns_last_checked_at) == (
        False, False, None)
    [check] = session.scalars(select(DomainCheck).where(DomainCheck.domain_id == domain.id))
    assert (check.trigger, check.status) == (OPERATOR, VERIFIED)
    assert check.details["trusted"] is True
    assert check.details["requested_by"] == AUTO_CREATE
    # No DNS check is requested for it.
    assert session.scalars(select(Event).where(Event.name == CHECK_REQUESTED)).all() == []


def test_an_org_cannot_claim_a_trusted_name_by_registering_it_first(session, trusting):
    owner = make_user(session, "owner")
    org = make_org(session, owner)
    with pytest.raises(Forbidden, match="reserved by the operator"):
        register_domain(session, trusting, caller_of(owner), org.id, "burnbox.test")
    assert session.scalars(select(Domain)).all() == []


def test_an_untrusted_name_is_registered_pending_as_ever(session, trusting):
    admin = make_user(session, "admin", is_system_admin=True)
    org = make_org(session, admin)
    domain = register_domain(session, trusting, caller_of(admin), org.id, "other.example")
    assert domain.status == PENDING
    assert session.scalars(select(DomainCheck)).all() == []
