"""The resolver adapter against a real DNS server on loopback: definite answers, and the look-up
errors that must never be mistaken for "no records"."""

import time
from datetime import timedelta

import pytest

from burnbox.dns import (
    LookupFailed,
    MxRecord,
    Resolver,
    make_resolver,
    parse_nameserver,
    to_ascii_hostname,
)
from burnbox.settings import load_settings
from tests.dns_server import SERVFAIL, SILENT

ZONE = """
example.test.        300 IN TXT "burnbox-verify=abc" "123"
example.test.        300 IN TXT "v=spf1 -all"
example.test.        300 IN MX 20 backup.example.net.
example.test.        300 IN MX 10 MX.Example.NET.
only-a.example.test. 300 IN A 192.0.2.1
"""


def _resolver(server, timeout=2.0):
    return Resolver([server.nameserver], timeout=timedelta(seconds=timeout))


def test_txt_records_come_back_with_their_strings_joined(dns_server):
    dns_server.publish(ZONE)
    assert sorted(_resolver(dns_server).txt("example.test")) == ["burnbox-verify=abc123",
                                                                 "v=spf1 -all"]


def test_mx_records_come_back_lower_cased_without_the_final_dot_lowest_preference_first(
        dns_server):
    dns_server.publish(ZONE)
    assert _resolver(dns_server).mx("example.test") == [MxRecord(10, "mx.example.net"),
                                                        MxRecord(20, "backup.example.net")]


def test_a_name_that_does_not_exist_is_a_definite_empty_answer(dns_server):
    dns_server.publish(ZONE)
    assert _resolver(dns_server).txt("missing.example.test") == []
    assert _resolver(dns_server).mx("missing.example.test") == []


def test_a_name_without_records_of_the_type_is_a_definite_empty_answer(dns_server):
    dns_server.publish(ZONE)
    assert _resolver(dns_server).mx("only-a.example.test") == []


def test_servfail_is_a_lookup_error_not_an_empty_answer(dns_server):
    dns_server.publish(ZONE)
    dns_server.fail(SERVFAIL)
    with pytest.raises(LookupFailed, match="SERVFAIL"):
        _resolver(dns_server).txt("example.test")


def test_a_server_that_never_answers_is_a_lookup_error_after_the_timeout(dns_server):
    dns_server.publish(ZONE)
    dns_server.fail(SILENT, "MX")
    started = time.monotonic()
    with pytest.raises(LookupFailed, match="no answer within"):
        _resolver(dns_server, timeout=0.5).mx("example.test")
    assert time.monotonic() - started < 3
    # Only MX was broken: TXT still answers.
    assert _resolver(dns_server).txt("example.test")


def test_the_settings_nameservers_and_port_are_honoured(dns_server):
    dns_server.publish(ZONE)
    settings = load_settings(environ={"BURNBOX_DNS__NAMESERVERS": dns_server.nameserver,
                                      "BURNBOX_DNS__TIMEOUT": "2s"})
    assert make_resolver(settings).mx("example.test")[0].exchange == "mx.example.net"
    assert ("example.test", "MX") in dns_server.queries


def test_an_unparseable_nameserver_setting_is_a_lookup_error_not_a_crash():
    with pytest.raises(LookupFailed, match="malformed"):
        Resolver(["127.0.0.1:notaport"]).txt("example.test")


@pytest.mark.parametrize(("value", "expected"), [
    ("127.0.0.1", ("127.0.0.1", 53)),
    ("127.0.0.1:5353", ("127.0.0.1", 5353)),
    ("[::1]:5353", ("::1", 5353)),
    ("[::1]", ("::1", 53)),
    ("::1", ("::1", 53)),
    ("dns.internal:54", ("dns.internal", 54)),
])
def test_nameservers_are_written_host_colon_port_with_ipv6_in_brackets(value, expected):
    assert parse_nameserver(value) == expected


@pytest.mark.parametrize("value", ["", "[::1", "[::1]x", "1.2.3.4:0", "1.2.3.4:70000", ":53"])
def test_malformed_nameservers_are_refused(value):
    with pytest.raises(ValueError, match="malformed"):
        parse_nameserver(value)


@pytest.mark.parametrize(("name", "expected"), [
    ("Mail.Example.COM.", "mail.example.com"),
    ("bücher.example", "xn--bcher-kva.example"),
    ("  xn--bcher-kva.example ", "xn--bcher-kva.example"),
])
def test_host_names_become_lower_case_a_labels_without_the_final_dot(name, expected):
    assert to_ascii_hostname(name) == expected


@pytest.mark.parametrize("name", ["", ".", "under_score.example", "-lead.example",
                                  "a" * 64 + ".example", "sp ace.example"])
def test_invalid_host_names_are_refused(name):
    with pytest.raises(ValueError):
        to_ascii_hostname(name)
