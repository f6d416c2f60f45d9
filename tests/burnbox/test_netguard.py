"""The outbound guard on every address form that hides an internal target, and on names resolved
through a real DNS server whose answers the test controls (dns.nameservers)."""

import ipaddress
from datetime import timedelta

import pytest

from burnbox.dns import Resolver
from burnbox.netguard import (
    TargetRefused,
    embedded_ipv4,
    is_internal_address,
    parse_ip_literal,
    resolve_target,
)

REFUSED = [
    # private, loopback, link-local, unspecified, shared, multicast, broadcast
    "10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.0.10", "127.0.0.1", "127.9.9.9",
    "169.254.169.254", "169.254.10.10", "0.0.0.0", "100.64.0.1", "224.0.0.1",
    "255.255.255.255", "192.0.2.1",
    # IPv6 loopback, unspecified, link-local, unique-local, multicast, documentation
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "2001:db8::1",
    # IPv6 forms carrying an internal IPv4 address
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",  # IPv4-mapped
    "::127.0.0.1", "::10.0.0.1",  # IPv4-compatible (deprecated)
    "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::c0a8:101",  # NAT64 of internal addresses
    "64:ff9b:1::808:808",  # local-use NAT64: the operator's own gateway
    "2002:7f00:1::", "2002:c0a8:101::1", "2002:a9fe:a9fe::",  # 6to4
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo whose client is 10.0.0.1
    # numeric spellings of 127.0.0.1 and 10.0.0.1 the C library accepts
    "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1", "0x7F.0.0.1", "167772161",
]
ALLOWED = ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8",
           "64:ff9b::808:808", "2002:808:808::"]


@pytest.mark.parametrize("host", REFUSED)
def test_every_internal_address_form_is_refused(host):
    with pytest.raises(TargetRefused, match="internal address"):
        resolve_target(host, 443, allow_private=False)


@pytest.mark.parametrize("host", ALLOWED)
def test_public_addresses_in_any_form_are_allowed_and_returned_for_connecting(host):
    assert resolve_target(host, 443, allow_private=False) == str(ipaddress.ip_address(host))


@pytest.mark.parametrize(("text", "address"), [
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("0177.0.0.01", "127.0.0.1"),
    ("127.1", "127.0.0.1"), ("10.1", "10.0.0.1"), ("[::1]".strip("[]"), "::1"),
    ("fe80::1%eth0", "fe80::1"), ("127.0.0.1.", "127.0.0.1"),
])
def test_numeric_host_names_are_read_as_the_address_they_spell(text, address):
    assert parse_ip_literal(text) == ipaddress.ip_address(address)


@pytest.mark.parametrize("name", ["example.com", "123.example.com", "0x7f.example", "1.2.3.4.5",
                                  "08.0.0.1"])
def test_names_that_only_look_numeric_are_names(name):
    assert parse_ip_literal(name) is None


def test_ipv6_forms_yield_the_ipv4_address_they_carry():
    v4 = ipaddress.IPv4Address
    assert embedded_ipv4(ipaddress.IPv6Address("::ffff:1.2.3.4")) == [v4("1.2.3.4")]
    assert embedded_ipv4(ipaddress.IPv6Address("64:ff9b::102:304")) == [v4("1.2.3.4")]
    assert embedded_ipv4(ipaddress.IPv6Address("2002:102:304::")) == [v4("1.2.3.4")]
    assert embedded_ipv4(ipaddress.IPv6Address("2606:4700::1")) == []
    assert not is_internal_address(ipaddress.IPv6Address("64:ff9b::102:304"))


def test_the_setting_lets_internal_addresses_through():
    assert resolve_target("::ffff:127.0.0.1", 80, allow_private=True) == "::ffff:7f00:1"
    assert resolve_target("2130706433", 80, allow_private=True) == "127.0.0.1"


def _resolver(server):
    return Resolver([server.nameserver], timedelta(seconds=1))


def test_a_name_resolved_through_the_configured_server_is_judged_by_its_answers(dns_server):
    dns_server.publish("public.hooks.test. 60 IN A 93.184.215.14\n"
                       "private.hooks.test. 60 IN A 10.0.0.5\n"
                       "mapped.hooks.test. 60 IN AAAA ::ffff:7f00:1\n"
                       "mixed.hooks.test. 60 IN A 93.184.215.14\n"
                       "mixed.hooks.test. 60 IN A 192.168.0.1\n")
    resolver = _resolver(dns_server)
    assert resolve_target("public.hooks.test", 443, allow_private=False,
                          resolver=resolver) == "93.184.215.14"
    for name in ("private.hooks.test", "mapped.hooks.test", "mixed.hooks.test"):
        with pytest.raises(TargetRefused, match="internal address"):
            resolve_target(name, 443, allow_private=False, resolver=resolver)


def test_a_name_without_addresses_or_without_an_answer_is_refused(dns_server):
    resolver = _resolver(dns_server)
    with pytest.raises(TargetRefused, match="cannot resolve"):
        resolve_target("nothing.hooks.test", 443, allow_private=True, resolver=resolver)
    dns_server.fail("servfail")
    with pytest.raises(TargetRefused, match="cannot resolve"):
        resolve_target("public.hooks.test", 443, allow_private=True, resolver=resolver)
