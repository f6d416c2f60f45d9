"""The verification actor end to end: real commits, the backend's broker and worker threads, and
the loopback DNS server. Registration's auto_create check, manual checks, the clock's hourly
background re-check of every domain, a check of a deleted domain, and the operator-trusted
domains that no check looks up."""

import dataclasses
import uuid

import dramatiq
import pytest
from sqlalchemy import select

import tasks
from models.domains.domains import (
    AUTO_CREATE,
    BACKGROUND,
    MANUAL,
    OPERATOR,
    PENDING,
    VERIFIED,
    Domain,
    register_domain,
    verify_domain,
)
from models.domains.verification import DomainCheck
from tasks import start_worker
from tasks.clock import default_jobs
from tasks.dns import check_domain, recheck_domains
from tests.domain_helpers import MX_HOST, dns_settings, zone
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of, make_org
from tests.tasks.conftest import drain, wait_until


@pytest.fixture
def dns_runtime(committed_runtime, dns_server):
    """A committing runtime whose settings point verification at the loopback DNS server."""
    rt = dataclasses.replace(committed_runtime,
                             settings=dns_settings(committed_runtime.settings, dns_server))
    tasks.setup_broker(rt)
    return rt


@pytest.fixture
def dns_worker(dns_runtime):
    running = start_worker(dramatiq.get_broker(), threads=2)
    yield running
    running.stop()


def _register(rt, name):
    with rt.db.transaction() as session:
        owner = make_user(session)
        org = make_org(session, owner)
        domain = register_domain(session, rt.settings, caller_of(owner), org.id, name)
    return domain, owner


def _checks(rt, domain_id):
    with rt.db.session() as session:
        query = select(DomainCheck.trigger, DomainCheck.status).where(
            DomainCheck.domain_id == domain_id).order_by(DomainCheck.checked_at)
        return [tuple(row) for row in session.execute(query)]


def _domain(rt, domain_id):
    with rt.db.session() as session:
        return session.get(Domain, domain_id)


def test_registration_runs_an_auto_create_check_after_commit(dns_runtime, dns_server,
                                                             dns_worker):
    dns_server.publish(f"auto.example.test. 300 IN MX 10 {MX_HOST}.\n")
    domain, _owner = _register(dns_runtime, "auto.example.test")
    wait_until(lambda: _checks(dns_runtime, domain.id))
    assert _checks(dns_runtime, domain.id) == [(AUTO_CREATE, "partially_verified")]
    assert ("auto.example.test", "TXT") in dns_server.queries


def test_a_manual_request_runs_a_manual_check(dns_runtime, dns_server, dns_worker):
    domain, owner = _register(dns_runtime, "manual.example.test")
    wait_until(lambda: len(_checks(dns_runtime, domain.id)) == 1)
    dns_server.publish(zone(domain))
    with dns_runtime.db.transaction() as session:
        verify_domain(session, caller_of(owner), session.get(Domain, domain.id))
    wait_until(lambda: len(_checks(dns_runtime, domain.id)) == 2)
    assert _checks(dns_runtime, domain.id)[-1] == (MANUAL, VERIFIED)
    assert _domain(dns_runtime, domain.id).status == VERIFIED


def test_the_clock_rechecks_every_domain_in_the_background(dns_runtime, dns_server, dns_worker):
    first, _ = _register(dns_runtime, "one.example.test")
    second, _ = _register(dns_runtime, "two.example.test")
    wait_until(lambda: _checks(dns_runtime, first.id) and _checks(dns_runtime, second.id))
    dns_server.publish(zone(first) + zone(second))
    jobs = {job.name: job for job in default_jobs(dns_runtime.settings)}
    assert jobs["dns_recheck"].actor is recheck_domains
    jobs["dns_recheck"].actor.send()
    for domain in (first, second):
        wait_until(lambda domain=domain: len(_checks(dns_runtime, domain.id)) == 2)
        assert _checks(dns_runtime, domain.id)[-1] == (BACKGROUND, VERIFIED)


def test_the_recheck_runs_hourly_by_default(settings):
    jobs = {job.name: job for job in default_jobs(settings)}
    assert jobs["dns_recheck"].every.total_seconds() == 3600


def test_a_check_of_a_domain_deleted_meanwhile_does_nothing(dns_runtime, dns_server,
                                                            dns_worker):
    missing = uuid.uuid4()
    check_domain.send(str(missing), MANUAL)
    # An exception would make Dramatiq retry it later, and the queue would not drain in time.
    drain(dramatiq.get_broker(), "dns")
    assert _checks(dns_runtime, missing) == []


def _trusting(rt, *names):
    """`rt` with `domains.trusted` set to `names`, its broker set up again."""
    trusted = dataclasses.replace(rt, settings=rt.settings.replace(**{"domains.trusted": names}))
    tasks.setup_broker(trusted)
    return trusted


def _check_once(rt, domain_id):
    """Run one background check of the domain on `rt`'s broker and wait for its history row."""
    before = len(_checks(rt, domain_id))
    running = start_worker(dramatiq.get_broker(), threads=2)
    try:
        check_domain.send(str(domain_id), BACKGROUND)
        wait_until(lambda: len(_checks(rt, domain_id)) > before)
    finally:
        running.stop()


def test_no_check_looks_a_trusted_domain_up_or_downgrades_it(dns_runtime, dns_server):
    rt = _trusting(dns_runtime, "qa.example.test")
    # The DNS server answers nothing for the name, as when it is down or knows nothing of it.
    dns_server.publish("other.example.test. 300 IN MX 10 elsewhere.example.\n")
    with rt.db.transaction() as session:
        admin = make_user(session, "admin", is_system_admin=True)
        org = make_org(session, admin)
        domain = register_domain(session, rt.settings, caller_of(admin), org.id,
                                 "qa.example.test")
    running = start_worker(dramatiq.get_broker(), threads=2)
    try:
        with rt.db.transaction() as session:
            verify_domain(session, caller_of(admin), session.get(Domain, domain.id))
        recheck_domains.send()
        wait_until(lambda: len(_checks(rt, domain.id)) == 3)
    finally:
        running.stop()
    assert _checks(rt, domain.id) == [(OPERATOR, VERIFIED)] * 3
    assert _domain(rt, domain.id).status == VERIFIED
    assert not [query for query in dns_server.queries if query[0] == "qa.example.test"]


def test_trusting_a_registered_name_verifies_it_at_its_next_check_and_distrust_asks_dns(
        dns_runtime, dns_server):
    # Registered while untrusted (no worker runs its auto_create check here); then the
    # operator trusts the name.
    domain, _owner = _register(dns_runtime, "later.example.test")
    assert _domain(dns_runtime, domain.id).status == PENDING
    rt = _trusting(dns_runtime, "later.example.test")
    _check_once(rt, domain.id)
    # Every check run now is an operator one (on Redis the queued auto_create may run too).
    assert set(_checks(rt, domain.id)) == {(OPERATOR, VERIFIED)}
    # The operator takes the name off the list: the next check is a DNS check again, and with
    # nothing published the domain has nothing that verifies it.
    untrusted = _trusting(rt)
    _check_once(untrusted, domain.id)
    assert _checks(untrusted, domain.id)[-1][0] in (BACKGROUND, AUTO_CREATE)
    assert _domain(untrusted, domain.id).status != VERIFIED
    assert ("later.example.test", "TXT") in dns_server.queries
