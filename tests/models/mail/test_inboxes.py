"""Inbox actions: creation rules (aliases, TTLs, quota, access levels, verified domains, archived
teams, live and lapsed addresses), extension, removal, access, and what removing or moving a
domain or a team does to inboxes."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.exc import OperationalError

from burnbox.timeutil import utcnow
from models.domains.assignments import CREATE_INBOX, READ_ONLY, DomainAssignment
from models.domains.domains import PENDING, Domain
from models.errors import Conflict, Forbidden, NotFound, ValidationFailed
from models.events import INBOX_CREATED, INBOX_EXPIRED, Event
from models.lifecycle.domains import domain_impact
from models.lifecycle.teams import team_impact, transfer_team
from models.mail import inboxes
from models.mail.inboxes import (
    Inbox,
    create_inbox,
    extend_inbox,
    inbox_access,
    normalise_address,
    normalise_alias,
)
from models.tenancy.access import resolve_org_access
from models.tenancy.rbac import load_grants
from models.tenancy.teams import Team, resolve_team_access, set_archived
from tests.factories.mail import lapse, make_inbox, make_mail_world
from tests.factories.tenancy import caller_of


def _assignment(session, mail_world, name="assignment"):
    return session.get(DomainAssignment, mail_world.ids[name])


def _events(runtime, name):
    with runtime.db.session() as session:
        return list(session.scalars(select(Event).where(Event.name == name)))


def _access(session, mail_world, role, inbox_id):
    return inbox_access(session, load_grants(session), caller_of(mail_world.users[role]),
                        session.get(Inbox, inbox_id))


# Creation

def test_an_inbox_gets_the_alias_on_the_domain_and_the_default_ttl(runtime, mail_world):
    before = utcnow()
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, alias="Signup.Test")
    assert inbox.address == "signup.test"
    assert inbox.full_address == f"signup.test@{mail_world.domain}"
    assert (inbox.team_id, inbox.org_id, inbox.domain_id, inbox.domain_assignment_id) == (
        mail_world.ids["team"], mail_world.ids["org"], mail_world.ids["domain"],
        mail_world.ids["assignment"])
    assert inbox.created_by == mail_world.users["team_member"].id
    assert timedelta(minutes=10) <= inbox.expires_at - before < timedelta(minutes=10, seconds=5)
    assert (inbox.email_count, inbox.unread_count, inbox.is_active) == (0, 0, True)


def test_without_an_alias_the_local_part_is_ten_random_lowercase_characters(runtime, mail_world):
    with runtime.db.transaction() as session:
        first = make_inbox(session, runtime.settings, mail_world)
        second = make_inbox(session, runtime.settings, mail_world)
    for inbox in (first, second):
        assert len(inbox.address) == 10
        assert inbox.address.isalnum() and inbox.address == inbox.address.lower()
    assert first.address != second.address


@pytest.mark.parametrize("alias", ["ab", "a.b-c_d9", "x" * 64, "0signup0"])
def test_aliases_of_two_to_64_allowed_characters_are_accepted(alias):
    assert normalise_alias(alias) == alias


@pytest.mark.parametrize("alias", ["a", "x" * 65, "-ab", "ab.", "a b", "a+b", "ünï", "a..b",
                                   "a@b", ""])
def test_other_aliases_are_refused_naming_the_alias(alias):
    with pytest.raises(ValidationFailed) as refused:
        normalise_alias(alias)
    assert "alias" in refused.value.details


def test_a_ttl_sets_the_lifetime_within_the_max(runtime, mail_world):
    before = utcnow()
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, ttl="2h30m")
    assert timedelta(hours=2, minutes=30) <= inbox.expires_at - before < timedelta(hours=2,
                                                                                 minutes=31)


@pytest.mark.parametrize(("ttl", "message"), [("25h", "must not exceed 24h0m0s"),
                                              ("0s", "longer than 0s"), ("soon", "invalid")])
def test_a_ttl_above_the_max_or_not_positive_or_not_a_duration_is_refused(runtime, mail_world,
                                                                          ttl, message):
    with pytest.raises(ValidationFailed) as refused, runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world, ttl=ttl)
    assert message in refused.value.details["ttl"][0]


def test_the_settings_cascade_decides_the_default_and_max_ttl(runtime, mail_world):
    with runtime.db.transaction() as session:
        session.get(Team, mail_world.ids["team"]).settings = {"inbox_max_ttl": "1h"}
        _assignment(session, mail_world).settings = {"inbox_default_ttl": "5m"}
    before = utcnow()
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    assert timedelta(minutes=5) <= inbox.expires_at - before < timedelta(minutes=6)
    with pytest.raises(ValidationFailed), runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world, ttl="2h")


def test_creating_records_inbox_created_with_its_data(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, alias="events")
    [event] = _events(runtime, INBOX_CREATED)
    assert event.data == {"inbox_id": str(inbox.id), "address": inbox.full_address,
                          "team_id": str(mail_world.ids["team"]),
                          "expires_at": inbox.expires_at.isoformat().replace("+00:00", "Z"),
                          "created_by": str(mail_world.users["team_member"].id)}
    assert (event.org_id, event.team_id) == (mail_world.ids["org"], mail_world.ids["team"])


def test_a_live_address_cannot_be_taken_twice(runtime, mail_world):
    with runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world, alias="taken")
    with pytest.raises(Conflict), runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world, alias="taken", role="lead")


@pytest.mark.parametrize("holder", ["live", "lapsed"])
def test_a_random_address_someone_holds_gives_way_to_another(runtime, mail_world, monkeypatch,
                                                            holder):
    # The INSERT gives way on the address's unique key (no look for a holder first): a random
    # local part that meets one, live or lapsed and not yet removed, is drawn again, and the
    # holder is left as it was.
    with runtime.db.transaction() as session:
        held = make_inbox(session, runtime.settings, mail_world, alias="aaaaaaaaaa")
        if holder == "lapsed":
            lapse(session, held.id)
    drawn = iter("a" * inboxes.RANDOM_LENGTH + "b" * inboxes.RANDOM_LENGTH)
    monkeypatch.setattr(inboxes.secrets, "choice", lambda _alphabet: next(drawn))
    with runtime.db.transaction() as session:
        inbox = create_inbox(session, runtime.settings, _assignment(session, mail_world),
                             created_by=None)
    assert inbox.address == "b" * inboxes.RANDOM_LENGTH
    with runtime.db.session() as session:
        kept = session.get(Inbox, held.id)
        assert kept is not None and kept.address == "aaaaaaaaaa"
        assert session.get(Inbox, inbox.id).full_address == inbox.full_address


def test_a_lapsed_inbox_holding_the_address_is_removed_with_its_expired_event(runtime, mail_world):
    with runtime.db.transaction() as session:
        old = make_inbox(session, runtime.settings, mail_world, alias="again")
        lapse(session, old.id)
        new = make_inbox(session, runtime.settings, mail_world, alias="again")
    with runtime.db.session() as session:
        assert session.get(Inbox, old.id) is None
        assert session.get(Inbox, new.id) is not None
    [expired] = _events(runtime, INBOX_EXPIRED)
    assert expired.data["inbox_id"] == str(old.id)
    assert expired.data["address"] == f"again@{mail_world.domain}"
    assert expired.data["created_by"] == str(mail_world.users["team_member"].id)


def test_the_cleanup_records_inbox_expired_naming_the_creator_to_notify(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="lead")
        lapse(session, inbox.id)
    with runtime.db.transaction() as session:
        assert inboxes.remove_lapsed_inboxes(session, 10) == 1
    [expired] = _events(runtime, INBOX_EXPIRED)
    assert set(expired.data) == {"inbox_id", "address", "expired_at", "created_by"}
    assert (expired.data["inbox_id"], expired.data["created_by"]) == (
        str(inbox.id), str(mail_world.users["lead"].id))


def test_read_only_assignments_refuse_new_inboxes(runtime, mail_world):
    with runtime.db.transaction() as session:
        _assignment(session, mail_world).access_level = READ_ONLY
    with pytest.raises(Forbidden), runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world)


def test_unverified_domains_refuse_new_inboxes(runtime, mail_world):
    with runtime.db.transaction() as session:
        session.execute(update(Domain).where(Domain.id == mail_world.ids["domain"])
                        .values(status=PENDING))
    with pytest.raises(Conflict, match="not verified"), runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world)


def test_archived_teams_refuse_new_inboxes(runtime, mail_world):
    with runtime.db.transaction() as session:
        owner = resolve_org_access(session, load_grants(session),
                                   caller_of(mail_world.users["owner"]), mail_world.ids["org"])
        set_archived(session, resolve_team_access(session, owner, mail_world.ids["team"]), True)
    with pytest.raises(Conflict, match="archived"), runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world)


def test_max_inboxes_per_domain_counts_live_inboxes_only(runtime, mail_world):
    with runtime.db.transaction() as session:
        session.get(Domain, mail_world.ids["domain"]).settings = {"max_inboxes_per_domain": 2}
    with runtime.db.transaction() as session:
        first = make_inbox(session, runtime.settings, mail_world)
        make_inbox(session, runtime.settings, mail_world)
    with pytest.raises(Conflict) as refused, runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world)
    assert refused.value.extra == {"limit": 2}
    with runtime.db.transaction() as session:
        lapse(session, first.id)
        make_inbox(session, runtime.settings, mail_world)


def _create_beside(runtime, world, **options):
    """Create an inbox in a transaction of another thread (so another counter shard) that
    gives up on any lock it waits for after one second; the error, or None."""
    def create():
        with runtime.db.session() as session:
            session.execute(text("SET LOCAL lock_timeout = '1s'"))
            make_inbox(session, runtime.settings, world, **options)
            session.commit()
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(create).exception()


@pytest.mark.postgres
@pytest.mark.parametrize("needs_the_lock", [None, "cap", "alias"])
def test_random_addresses_without_a_cap_are_created_side_by_side(committed_runtime,
                                                                 needs_the_lock):
    # A test suite's parallel creations on one domain once queued on the domain's row, one
    # commit after another, though only a cap or an alias needs that lock.
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        if needs_the_lock == "cap":
            session.get(Domain, world.ids["domain"]).settings = {"max_inboxes_per_domain": 5}
    options = {"alias": "first"} if needs_the_lock == "alias" else {}
    holder = runtime.db.session()
    try:
        make_inbox(holder, runtime.settings, world, **options)  # uncommitted: holds its locks
        beside = _create_beside(runtime, world,
                                **({"alias": "second"} if needs_the_lock == "alias" else {}))
    finally:
        holder.rollback()
        holder.close()
    if needs_the_lock:
        assert isinstance(beside, OperationalError) and "lock timeout" in str(beside)
    else:
        assert beside is None


# Where a new inbox goes

def test_a_domain_name_finds_the_callers_one_usable_assignment(runtime, mail_world):
    with runtime.db.session() as session:
        target = inboxes.resolve_create_target(
            session, load_grants(session), caller_of(mail_world.users["team_member"]),
            domain=mail_world.domain.upper())
        assert target.assignment.id == mail_world.ids["assignment"]
        assert inboxes.CREATE in target.team.permissions


@pytest.mark.parametrize("role", ["org_member", "outsider", "stranger"])
def test_a_domain_name_without_a_usable_assignment_is_not_found(runtime, mail_world, role):
    with runtime.db.session() as session, pytest.raises(NotFound):
        inboxes.resolve_create_target(session, load_grants(session),
                                      caller_of(mail_world.users[role]), domain=mail_world.domain)


def test_an_assignment_of_an_org_the_caller_is_not_in_is_not_found(runtime, mail_world):
    with runtime.db.session() as session, pytest.raises(NotFound):
        inboxes.resolve_create_target(session, load_grants(session),
                                      caller_of(mail_world.users["outsider"]),
                                      assignment_id=mail_world.ids["assignment"])


# Extension

def test_extending_adds_the_duration_but_never_passes_created_at_plus_max_ttl(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, ttl="23h")
    with runtime.db.transaction() as session:
        access = _access(session, mail_world, "team_member", inbox.id)
        extended = extend_inbox(session, runtime.settings, access, "30m")
        assert extended.expires_at == inbox.expires_at + timedelta(minutes=30)
        capped = extend_inbox(session, runtime.settings, access, "2h")
        assert capped.expires_at == inbox.created_at + timedelta(hours=24)
        with pytest.raises(Conflict) as refused:
            extend_inbox(session, runtime.settings, access)
        assert "max_expires_at" in refused.value.extra


def test_a_lapsed_inbox_cannot_be_extended(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
        lapse(session, inbox.id)
    with runtime.db.transaction() as session, pytest.raises(Conflict, match="expired"):
        extend_inbox(session, runtime.settings, _access(session, mail_world, "lead", inbox.id),
                     "5m")


def test_create_inbox_assignments_let_only_the_creator_manage(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="team_member")
    with runtime.db.transaction() as session:
        _assignment(session, mail_world).access_level = CREATE_INBOX
    with runtime.db.transaction() as session:
        extend_inbox(session, runtime.settings,
                     _access(session, mail_world, "team_member", inbox.id), "1m")
        with pytest.raises(Forbidden):
            extend_inbox(session, runtime.settings, _access(session, mail_world, "lead", inbox.id),
                         "1m")


# Access

def test_team_members_hold_their_team_permissions_and_the_creator_more(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world, role="lead")
    with runtime.db.session() as session:
        creator = _access(session, mail_world, "lead", inbox.id)
        member = _access(session, mail_world, "team_member", inbox.id)
        org_member = _access(session, mail_world, "org_member", inbox.id)
    assert creator.is_creator and not member.is_creator
    assert {inboxes.VIEW, inboxes.MANAGE, inboxes.EMAILS_VIEW} <= member.permissions
    assert inboxes.VIEW not in org_member.permissions


@pytest.mark.parametrize("role", ["outsider", "stranger"])
def test_inboxes_of_other_orgs_do_not_exist_for_the_caller(runtime, mail_world, role):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    with runtime.db.session() as session, pytest.raises(NotFound):
        _access(session, mail_world, role, inbox.id)


# Removals and transfers of domains and teams

def test_the_domain_impact_counts_inboxes_live_inboxes_and_emails(runtime, mail_world):
    with runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world)
        lapse(session, make_inbox(session, runtime.settings, mail_world).id)
    with runtime.db.session() as session:
        impact = domain_impact(session, session.get(Domain, mail_world.ids["domain"]))
    assert (impact["inboxes"], impact["active_inboxes"], impact["emails"]) == (2, 1, 0)


def test_the_team_impact_counts_its_inboxes(runtime, mail_world):
    with runtime.db.transaction() as session:
        make_inbox(session, runtime.settings, mail_world)
    with runtime.db.session() as session:
        assert team_impact(session, session.get(Team, mail_world.ids["team"]))["inboxes"] == 1


def test_a_team_moved_to_another_org_stops_receiving_on_its_old_domains(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    with runtime.db.transaction() as session:
        admin = caller_of(mail_world.users["owner"])
        owner = resolve_org_access(session, load_grants(session), admin, mail_world.ids["org"])
        transfer_team(session, resolve_team_access(session, owner, mail_world.ids["team"]),
                      mail_world.ids["other_org"])
    with runtime.db.session() as session:
        moved = session.get(Inbox, inbox.id)
        assert moved.org_id == mail_world.ids["other_org"]
        assert not moved.is_active


def test_removing_the_assignment_keeps_the_inbox_but_nobody_can_extend_it(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = make_inbox(session, runtime.settings, mail_world)
    with runtime.db.transaction() as session:
        session.delete(_assignment(session, mail_world))
    with runtime.db.transaction() as session:
        access = _access(session, mail_world, "lead", inbox.id)
        assert access.inbox.domain_assignment_id is None
        with pytest.raises(Forbidden):
            extend_inbox(session, runtime.settings, access, "1m")


def test_creating_on_another_teams_assignment_needs_its_own_assignment(runtime, mail_world):
    with runtime.db.transaction() as session, pytest.raises(NotFound):
        inboxes.resolve_create_target(session, load_grants(session),
                                      caller_of(mail_world.users["team_member"]),
                                      domain=mail_world.other_domain)


def test_demo_inboxes_have_no_creator(runtime, mail_world):
    with runtime.db.transaction() as session:
        inbox = create_inbox(session, runtime.settings, _assignment(session, mail_world),
                             created_by=None)
    assert inbox.created_by is None
    [created] = _events(runtime, INBOX_CREATED)
    assert created.data["created_by"] is None  # nobody to notify


# The routing form of an address

@pytest.mark.parametrize(("given", "routed"), [
    ("Signup@Mail.Example.TEST", "signup@mail.example.test"),
    ("  a.b@bücher.example ", "a.b@xn--bcher-kva.example"),
])
def test_addresses_route_in_lower_case_with_idna_domains(given, routed):
    assert normalise_address(given) == routed


@pytest.mark.parametrize("given", [
    "no-at-sign", "@example.com", "user@", "user@exa mple.com",
    # No address holds a control character or a surrogate (undecodable bytes), and none is
    # longer than the column: each used to reach the query (PostgreSQL refuses NUL: a 500).
    "us\x00er@example.com", "user@example.com\x00", "us\x1ber@example.com",
    "us\x85er@example.com", "us\udcffer@example.com", "u" * 400 + "@example.com"])
def test_things_that_cannot_be_inbox_addresses_do_not_route(given):
    assert normalise_address(given) is None
