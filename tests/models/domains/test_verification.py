"""Domain verification against a real DNS server on loopback: every status, the every-MX rule,
SPF, and look-up errors that keep the previous result (a transient error must not downgrade a
verified domain); plus the documented zone example, loaded verbatim, verifies a domain (an
example that fails the check it documents misleads every operator who copies it)."""

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from models.domains.domains import (
    AUTO_CREATE,
    BACKGROUND,
    FAILED,
    MANUAL,
    PARTIALLY_VERIFIED,
    PENDING,
    VERIFIED,
    register_domain,
)
from models.domains.verification import DomainCheck, is_spf, list_checks, mx_target, status_of
from tests.dns_server import SERVFAIL, SILENT
from tests.domain_helpers import (
    MX_HOST,
    dns_settings,
    run_check,
    zone,
)
from tests.factories.identity import make_user
from tests.factories.tenancy import caller_of, make_org

DOCS = Path(__file__).resolve().parents[3] / "docs" / "domains.md"


@pytest.fixture
def session(runtime):
    with runtime.db.session() as session:
        yield session


@pytest.fixture
def check_settings(settings, dns_server):
    return dns_settings(settings, dns_server)


@pytest.fixture
def domain(session, settings):
    owner = make_user(session)
    org = make_org(session, owner)
    return register_domain(session, settings, caller_of(owner), org.id, "Mail.Example.TEST")


def _flags(domain):
    return (domain.status, domain.txt_verified, domain.mx_verified, domain.spf_verified)


def test_a_new_domain_is_pending_and_unchecked(domain):
    assert _flags(domain) == (PENDING, False, False, False)
    assert domain.dns_last_checked_at is None
    assert domain.verification_record.startswith("burnbox-verify=")


def test_txt_and_mx_published_verify_the_domain(session, check_settings, dns_server, domain):
    dns_server.publish(zone(domain, spf=True))
    check = run_check(session, check_settings, domain)
    assert _flags(domain) == (VERIFIED, True, True, True)
    assert domain.dns_last_checked_at == check.checked_at
    assert (check.trigger, check.status, check.txt_verified, check.mx_verified,
            check.spf_verified) == (MANUAL, VERIFIED, True, True, True)
    assert check.details["expected"] == {"txt": domain.verification_record, "mx": MX_HOST}
    assert check.details["found"]["mx"] == [{"preference": 10, "exchange": MX_HOST}]
    assert "errors" not in check.details


def test_only_the_txt_record_makes_the_domain_partially_verified(session, check_settings,
                                                                  dns_server, domain):
    dns_server.publish(zone(domain, mx=False))
    run_check(session, check_settings, domain)
    assert _flags(domain) == (PARTIALLY_VERIFIED, True, False, False)


def test_only_the_mx_record_makes_the_domain_partially_verified(session, check_settings,
                                                                 dns_server, domain):
    dns_server.publish(zone(domain, txt=False))
    run_check(session, check_settings, domain)
    assert _flags(domain) == (PARTIALLY_VERIFIED, False, True, False)


def test_a_domain_dns_knows_nothing_about_fails(session, check_settings, dns_server, domain):
    dns_server.publish("other.test. 300 IN TXT \"unrelated\"\n")
    check = run_check(session, check_settings, domain)
    assert _flags(domain) == (FAILED, False, False, False)
    assert domain.dns_last_checked_at is not None
    assert check.details["found"] == {"txt": [], "mx": []}


def test_a_wrong_token_or_a_foreign_mx_does_not_verify(session, check_settings, dns_server,
                                                       domain):
    dns_server.publish(f'{domain.domain_name}. 300 IN TXT "burnbox-verify=not-the-token"\n'
                       f"{domain.domain_name}. 300 IN MX 10 mx.elsewhere.test.\n")
    run_check(session, check_settings, domain)
    assert _flags(domain) == (FAILED, False, False, False)


def test_every_mx_must_name_the_smtp_host_so_a_backup_elsewhere_fails_mx(
        session, check_settings, dns_server, domain):
    dns_server.publish(zone(domain, extra=f"{domain.domain_name}. 300 IN MX 20 backup.test.\n"))
    run_check(session, check_settings, domain)
    assert _flags(domain) == (PARTIALLY_VERIFIED, True, False, False)


def test_the_mx_comparison_ignores_case_and_the_final_dot_of_the_setting(
        session, settings, dns_server, domain):
    dns_server.publish(zone(domain))
    shouting = dns_settings(settings, dns_server, **{"smtp.hostname": "MX.Burnbox.TEST."})
    assert mx_target(shouting) == MX_HOST
    run_check(session, shouting, domain)
    assert domain.status == VERIFIED


@pytest.mark.parametrize("how", [SERVFAIL, SILENT])
def test_a_lookup_error_keeps_a_verified_domain_verified(session, check_settings, dns_server,
                                                         domain, how):
    dns_server.publish(zone(domain, spf=True))
    first = run_check(session, check_settings, domain)
    dns_server.fail(how)
    check = run_check(session, check_settings, domain, BACKGROUND)
    assert _flags(domain) == (VERIFIED, True, True, True)
    assert domain.dns_last_checked_at == first.checked_at
    assert (check.status, check.txt_verified, check.mx_verified) == (VERIFIED, True, True)
    assert set(check.details["errors"]) == {"txt", "mx"}
    assert check.details["kept_previous"] == ["txt_verified", "spf_verified", "mx_verified"]
    assert check.details["found"] == {"txt": None, "mx": None}


def test_a_failed_mx_lookup_keeps_mx_while_a_definite_txt_answer_still_counts(
        session, check_settings, dns_server, domain):
    dns_server.publish(zone(domain))
    run_check(session, check_settings, domain)
    # The TXT record is removed (a definite answer) while MX look-ups fail.
    dns_server.publish(zone(domain, txt=False))
    dns_server.fail(SERVFAIL, "MX")
    check = run_check(session, check_settings, domain)
    assert _flags(domain) == (PARTIALLY_VERIFIED, False, True, False)
    assert list(check.details["errors"]) == ["mx"]
    assert "SERVFAIL" in check.details["errors"]["mx"]
    assert check.details["kept_previous"] == ["mx_verified"]


def test_a_domain_that_only_ever_met_lookup_errors_stays_pending(session, check_settings,
                                                                  dns_server, domain):
    dns_server.fail(SERVFAIL)
    check = run_check(session, check_settings, domain, AUTO_CREATE)
    assert _flags(domain) == (PENDING, False, False, False)
    assert domain.dns_last_checked_at is None
    assert check.status == PENDING


def test_a_verified_domain_whose_records_are_removed_fails(session, check_settings,
                                                           dns_server, domain):
    dns_server.publish(zone(domain))
    run_check(session, check_settings, domain)
    dns_server.publish("")
    run_check(session, check_settings, domain)
    assert _flags(domain) == (FAILED, False, False, False)


def test_the_history_lists_every_check_newest_first(session, check_settings, dns_server,
                                                    domain):
    dns_server.publish(zone(domain))
    triggers = [AUTO_CREATE, BACKGROUND, MANUAL]
    for trigger in triggers:
        run_check(session, check_settings, domain, trigger)
    page = list_checks(session, domain, page=1, per_page=2)
    assert page.total == 3
    assert [check.trigger for check in page.data] == [MANUAL, BACKGROUND]


def test_a_check_of_a_deleted_domain_records_nothing(session, check_settings, dns_server,
                                                     domain):
    session.delete(domain)
    session.flush()
    assert run_check(session, check_settings, domain) is None
    assert session.scalars(select(DomainCheck)).all() == []


@pytest.mark.parametrize(("record", "expected"), [
    ("v=spf1 -all", True), ("V=SPF1 mx ~all", True), ("v=spf1", True),
    ("v=spf10 -all", False), ("spf v=spf1", False), ("burnbox-verify=x", False),
])
def test_an_spf_record_is_recognised_by_its_version_tag(record, expected):
    assert is_spf(record) is expected


@pytest.mark.parametrize(("txt", "mx", "answered", "expected"), [
    (True, True, True, VERIFIED), (True, False, True, PARTIALLY_VERIFIED),
    (False, True, True, PARTIALLY_VERIFIED), (False, False, True, FAILED),
    (False, False, False, PENDING),
])
def test_the_status_follows_the_flags(txt, mx, answered, expected):
    assert status_of(txt, mx, answered) == expected


def test_the_documented_zone_example_verifies_the_documented_domain(session, settings,
                                                                    dns_server):
    """docs/domains.md shows a domain, its verification record, the MX target and the zone to
    publish; loaded verbatim into DNS, that zone must verify that domain with SPF present."""
    text = DOCS.read_text(encoding="utf-8")
    zone_text = re.search(r"```zone\n(.*?)```", text, re.S).group(1)
    example = re.search(r'"domain_name": "([^"]+)".*?"verification_record": "([^"]+)".*?'
                        r'"mx_target": "([^"]+)"', text, re.S)
    name, record, target = example.groups()
    owner = make_user(session)
    org = make_org(session, owner)
    domain = register_domain(session, settings, caller_of(owner), org.id, name)
    domain.verification_token = record.removeprefix("burnbox-verify=")
    session.flush()
    assert domain.verification_record == record

    dns_server.publish(zone_text)
    run_check(session, dns_settings(settings, dns_server, **{"smtp.hostname": target}), domain)
    assert _flags(domain) == (VERIFIED, True, True, True)
