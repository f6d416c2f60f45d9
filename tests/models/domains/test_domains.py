"""Domain actions: registration rules, listing, edits, deletion and its impact, transfer, bulk
operations (deletion and transfer through `models.lifecycle.domains`), and team assignments."""

import uuid

import pytest
from sqlalchemy import select

from models.domains.assignments import (
    FULL,
    READ_ONLY,
    DomainAssignment,
    assign_domain,
    domain_settings,
)
from models.domains.domains import (
    AUTO_CREATE,
    CHECK_REQUESTED,
    FAILED,
    MANUAL,
    Domain,
    bulk_verify,
    get_domain,
    list_domains,
    normalise_domain_name,
    register_domain,
    update_domain,
)
from models.errors import Conflict, NotFound, ValidationFailed
from models.events import Event
from models.lifecycle.domains import bulk_delete, delete_domain, domain_impact, transfer_domain
from models.lifecycle.teams import team_impact
from models.mail.inboxes import Inbox
from models.platform.audit import AuditEntry
from models.tenancy.teams import Team
from tests.factories.identity import make_user
from tests.factories.mail import make_inbox_rows
from tests.factories.tenancy import caller_of, make_org


@pytest.fixture
def session(runtime):
    with runtime.db.session() as session:
        yield session


@pytest.fixture
def owner(session):
    return make_user(session)


@pytest.fixture
def org(session, owner):
    return make_org(session, owner)


@pytest.fixture
def caller(owner):
    return caller_of(owner)


@pytest.fixture
def register(session, settings, caller, org):
    def register(name, **kwargs):
        return register_domain(session, settings, caller, org.id, name, **kwargs)
    return register


def _team(session, org, name="Blue"):
    team = Team(id=uuid.uuid4(), org_id=org.id, name=name, slug=name.lower(), description="",
                is_archived=False, settings={})
    session.add(team)
    session.flush()
    return team


def _events(session, name):
    return [event.data for event in session.scalars(select(Event).where(Event.name == name))]


def _audit_actions(session):
    return [entry.action for entry in session.scalars(select(AuditEntry)
                                                      .order_by(AuditEntry.created_at))]


@pytest.mark.parametrize(("given", "stored"), [
    ("Mail.Example.COM.", "mail.example.com"),
    ("  example.org ", "example.org"),
    ("bücher.example", "xn--bcher-kva.example"),
    ("a-b.c-d.example", "a-b.c-d.example"),
])
def test_domain_names_are_stored_as_lower_case_a_labels(given, stored):
    assert normalise_domain_name(given) == stored


@pytest.mark.parametrize("given", [
    "", "localhost", "example..com", "-bad.example", "bad-.example", "under_score.example",
    "192.168.1.1", "a" * 64 + ".example", ".".join(["abcdefghi"] * 26), "spa ce.example",
    "http://example.com",
])
def test_malformed_domain_names_are_refused_naming_the_field(given):
    with pytest.raises(ValidationFailed) as refused:
        normalise_domain_name(given)
    assert "domain_name" in refused.value.details


def test_registration_stores_the_domain_and_requests_an_auto_create_check(session, register):
    domain = register("Example.COM", description="  for QA  ")
    assert (domain.domain_name, domain.description, domain.status) == ("example.com", "for QA",
                                                                      "pending")
    assert len(domain.verification_token) == 32
    assert _events(session, CHECK_REQUESTED) == [{"domain_id": str(domain.id),
                                                  "trigger": AUTO_CREATE}]
    assert _audit_actions(session) == ["domain.create"]


def test_two_domains_get_different_tokens(register):
    assert register("a.example").verification_token != register("b.example").verification_token


def test_a_name_taken_by_any_org_is_a_conflict(session, settings, register):
    register("taken.example")
    other_owner = make_user(session)
    other_org = make_org(session, other_owner, "Other")
    with pytest.raises(Conflict, match="already registered"):
        register_domain(session, settings, caller_of(other_owner), other_org.id, "TAKEN.example.")


def test_the_org_max_domains_setting_limits_registration(session, register, org):
    org.settings = {"max_domains": 2}
    session.flush()
    register("one.example")
    register("two.example")
    with pytest.raises(Conflict, match="at most 2") as refused:
        register("three.example")
    assert refused.value.extra == {"limit": 2}


def test_the_platform_default_max_domains_applies_without_an_org_setting(session, settings,
                                                                         caller, org):
    limited = settings.replace(**{"defaults.max_domains": 1})
    register_domain(session, limited, caller, org.id, "one.example")
    with pytest.raises(Conflict):
        register_domain(session, limited, caller, org.id, "two.example")


def test_a_long_description_is_refused(register):
    with pytest.raises(ValidationFailed) as refused:
        register("x.example", description="d" * 501)
    assert "description" in refused.value.details


def test_get_domain_hides_another_orgs_domain(session, register, org):
    domain = register("mine.example")
    assert get_domain(session, org.id, domain.id) is domain
    with pytest.raises(NotFound):
        get_domain(session, uuid.uuid4(), domain.id)
    with pytest.raises(NotFound):
        get_domain(session, org.id, uuid.uuid4())


def test_the_list_searches_names_and_descriptions_and_filters_by_status(session, register, org):
    register("alpha.example", description="Billing tests")
    beta = register("beta.example")
    register("gamma.example", description="100%_off")
    beta.status = FAILED
    session.flush()

    def names(**kwargs):
        page = list_domains(session, org.id, 1, 20, **kwargs)
        return [domain.domain_name for domain in page.data]

    assert names() == ["alpha.example", "beta.example", "gamma.example"]
    assert names(q="BILLING") == ["alpha.example"]
    assert names(q="eta") == ["beta.example"]
    assert names(q="%_") == ["gamma.example"]  # wildcards are matched literally
    assert names(status=FAILED) == ["beta.example"]
    assert names(q="alpha", status=FAILED) == []
    assert list_domains(session, org.id, 2, 2).data[0].domain_name == "gamma.example"


def test_update_changes_description_and_merges_settings(session, settings, caller, register):
    domain = register("edit.example")
    update_domain(session, settings, caller, domain, description="new",
                  domain_settings={"inbox_default_ttl": "30m", "inbox_max_ttl": "2h"})
    update_domain(session, settings, caller, domain, domain_settings={"inbox_default_ttl": None})
    assert domain.description == "new"
    assert domain.settings == {"inbox_max_ttl": "2h"}
    effective = domain_settings(session, settings, domain.org_id, domain.id)
    assert effective.inbox_max_ttl.total_seconds() == 7200
    assert _audit_actions(session)[-2:] == ["domain.update", "domain.update"]


def test_the_domain_team_and_assignment_levels_apply_in_that_order(session, settings, caller,
                                                                   register, org):
    domain, team = register("levels.example"), _team(session, org)
    assignment = assign_domain(session, settings, caller, team, domain.id, FULL)
    domain.settings = {"inbox_default_ttl": "30m", "max_inboxes_per_domain": 9}
    team.settings = {"inbox_default_ttl": "20m"}
    assignment.settings = {"max_inboxes_per_domain": 4}
    session.flush()

    def resolved(**narrower):
        found = domain_settings(session, settings, org.id, domain.id, **narrower)
        return found.inbox_default_ttl.total_seconds() / 60, found.max_inboxes_per_domain

    assert resolved() == (30, 9)
    assert resolved(team_id=team.id) == (20, 9)
    assert resolved(team_id=team.id, assignment_id=assignment.id) == (20, 4)
    other = make_org(session, make_user(session), "Other")
    with pytest.raises(NotFound, match="domain"):
        domain_settings(session, settings, other.id, domain.id)
    with pytest.raises(NotFound, match="team"):
        resolved(team_id=uuid.uuid4())
    with pytest.raises(NotFound, match="assignment"):
        resolved(team_id=team.id, assignment_id=uuid.uuid4())


def test_update_refuses_settings_the_org_level_does_not_allow(session, settings, caller,
                                                              register):
    domain = register("strict.example")
    with pytest.raises(ValidationFailed) as refused:
        update_domain(session, settings, caller, domain,
                      domain_settings={"inbox_max_ttl": "999h", "max_domains": 3})
    assert set(refused.value.details) == {"inbox_max_ttl", "max_domains"}


def test_the_impact_counts_assignments_inboxes_and_emails(session, settings, caller, register,
                                                          org):
    domain = register("impact.example")
    assign_domain(session, settings, caller, _team(session, org), domain.id, FULL)
    assert domain_impact(session, domain) == {"assignments": 1, "inboxes": 0,
                                              "active_inboxes": 0, "emails": 0}


def test_active_inboxes_block_deletion_unless_forced(session, caller, register, org):
    domain = register("busy.example")
    make_inbox_rows(session, domain, _team(session, org).id, 3)
    with pytest.raises(Conflict, match="3 active inboxes") as refused:
        delete_domain(session, caller, domain)
    assert refused.value.extra["impact"]["active_inboxes"] == 3
    delete_domain(session, caller, domain, force=True)
    session.expire_all()
    assert session.get(Domain, domain.id) is None
    assert session.scalars(select(Inbox)).all() == []


def test_deleting_a_domain_removes_its_assignments(session, settings, caller, register, org):
    domain = register("gone.example")
    assign_domain(session, settings, caller, _team(session, org), domain.id, FULL)
    delete_domain(session, caller, domain)
    session.expire_all()
    assert session.scalars(select(DomainAssignment)).all() == []
    assert "domain.delete" in _audit_actions(session)


def test_transfer_moves_the_domain_and_drops_its_assignments(session, settings, caller,
                                                             register, org):
    domain = register("moving.example")
    assign_domain(session, settings, caller, _team(session, org), domain.id, FULL)
    target = make_org(session, make_user(session), "Target")
    transfer_domain(session, caller, domain, target.id)
    assert domain.org_id == target.id
    assert session.scalars(select(DomainAssignment)).all() == []
    entries = session.scalars(select(AuditEntry).where(AuditEntry.action == "domain.transfer"))
    assert {entry.org_id for entry in entries} == {org.id, target.id}


def test_transfer_lapses_the_live_inboxes_of_the_old_orgs_teams(session, caller, register,
                                                                 org):
    domain = register("lapsing.example")
    make_inbox_rows(session, domain, _team(session, org).id, 2)
    target = make_org(session, make_user(session), "Target")
    transfer_domain(session, caller, domain, target.id)
    session.expire_all()
    inboxes = session.scalars(select(Inbox)).all()
    assert len(inboxes) == 2
    assert all(inbox.org_id == org.id and not inbox.is_active for inbox in inboxes)


def test_transfer_refuses_the_same_org_and_an_unknown_one(session, caller, register, org):
    domain = register("stay.example")
    with pytest.raises(ValidationFailed):
        transfer_domain(session, caller, domain, org.id)
    with pytest.raises(NotFound):
        transfer_domain(session, caller, domain, uuid.uuid4())


def test_bulk_verify_requests_checks_only_for_the_orgs_domains(session, settings, caller,
                                                               register, org):
    mine = register("mine.example")
    other_owner = make_user(session)
    other_org = make_org(session, other_owner, "Other")
    theirs = register_domain(session, settings, caller_of(other_owner), other_org.id,
                             "theirs.example")
    missing = uuid.uuid4()
    results = bulk_verify(session, caller, org.id, [mine.id, theirs.id, missing, mine.id])
    assert [(r.id, r.status) for r in results] == [(mine.id, "ok"), (theirs.id, "not_found"),
                                                   (missing, "not_found")]
    manual = [e for e in _events(session, CHECK_REQUESTED) if e["trigger"] == MANUAL]
    assert manual == [{"domain_id": str(mine.id), "trigger": MANUAL}]


def test_bulk_delete_reports_each_id_and_never_touches_another_orgs(session, settings, caller,
                                                                    register, org):
    free, busy = register("free.example"), register("busy.example")
    make_inbox_rows(session, busy, _team(session, org).id, 1)
    other_owner = make_user(session)
    theirs = register_domain(session, settings, caller_of(other_owner),
                             make_org(session, other_owner, "Other").id, "theirs.example")
    results = bulk_delete(session, caller, org.id, [free.id, busy.id, theirs.id])
    assert [(r.id, r.status) for r in results] == [(free.id, "ok"), (busy.id, "failed"),
                                                   (theirs.id, "not_found")]
    assert "active inboxes" in results[1].error
    session.expire_all()
    assert {d.domain_name for d in session.scalars(select(Domain))} == {"busy.example",
                                                                        "theirs.example"}


def test_bulk_requests_take_at_most_fifty_ids(session, caller, org):
    with pytest.raises(ValidationFailed):
        bulk_verify(session, caller, org.id, [uuid.uuid4() for _ in range(51)])


def test_an_assignment_needs_a_domain_of_the_teams_org(session, settings, caller, register,
                                                       org):
    team = _team(session, org)
    other_owner = make_user(session)
    theirs = register_domain(session, settings, caller_of(other_owner),
                             make_org(session, other_owner, "Other").id, "theirs.example")
    with pytest.raises(ValidationFailed) as refused:
        assign_domain(session, settings, caller, team, theirs.id, FULL)
    assert "domain_id" in refused.value.details


def test_a_team_has_at_most_one_assignment_per_domain(session, settings, caller, register,
                                                      org):
    team, domain = _team(session, org), register("once.example")
    assign_domain(session, settings, caller, team, domain.id, FULL)
    with pytest.raises(Conflict):
        assign_domain(session, settings, caller, team, domain.id, READ_ONLY)


def test_an_unknown_access_level_is_refused(session, settings, caller, register, org):
    with pytest.raises(ValidationFailed) as refused:
        assign_domain(session, settings, caller, _team(session, org),
                      register("lvl.example").id, "owner")
    assert "access_level" in refused.value.details


def test_assignment_settings_cannot_exceed_the_domains(session, settings, caller, register,
                                                       org):
    domain = register("cascade.example")
    update_domain(session, settings, caller, domain, domain_settings={"inbox_max_ttl": "1h"})
    with pytest.raises(ValidationFailed) as refused:
        assign_domain(session, settings, caller, _team(session, org), domain.id, FULL,
                      {"inbox_max_ttl": "2h"})
    assert "inbox_max_ttl" in refused.value.details


def test_team_impact_counts_the_teams_assignments(session, settings, caller, register, org):
    team = _team(session, org)
    assign_domain(session, settings, caller, team, register("t.example").id, FULL)
    assert team_impact(session, team)["domain_assignments"] == 1


def test_an_archived_team_takes_no_new_assignment(session, settings, caller, register, org):
    team = _team(session, org)
    team.is_archived = True
    with pytest.raises(Conflict, match="archived"):
        assign_domain(session, settings, caller, team, register("arch.example").id, FULL)


def test_tabs_and_line_breaks_are_fine_in_a_description(register):
    assert register("lines.example", description="one\ntwo\tthree").description == \
        "one\ntwo\tthree"
