"""Resolving the client IP: X-Forwarded-For counts only when it comes from a configured proxy."""

import pytest

from burnbox.metrics import may_scrape as is_internal
from burnbox.settings import SettingsError
from web.client_ip import parse_networks, resolve_client_ip

PROXIES = parse_networks(["10.0.0.0/8", "203.0.113.7"])


def test_without_a_forwarding_header_the_peer_is_the_client():
    assert resolve_client_ip("8.8.8.8", None, PROXIES) == "8.8.8.8"
    assert resolve_client_ip("10.1.2.3", "", PROXIES) == "10.1.2.3"


def test_an_untrusted_peer_cannot_choose_its_address():
    assert resolve_client_ip("8.8.8.8", "127.0.0.1", PROXIES) == "8.8.8.8"
    assert resolve_client_ip("8.8.8.8", "127.0.0.1", ()) == "8.8.8.8"


def test_a_trusted_proxy_is_believed():
    assert resolve_client_ip("10.0.0.5", "8.8.8.8", PROXIES) == "8.8.8.8"
    assert resolve_client_ip("203.0.113.7", "1.1.1.1", PROXIES) == "1.1.1.1"


def test_through_a_chain_of_trusted_proxies_the_rightmost_untrusted_hop_is_the_client():
    # The client put "127.0.0.1" there itself; its real address was appended by the first proxy.
    header = "127.0.0.1, 8.8.8.8, 10.0.0.9, 203.0.113.7"
    assert resolve_client_ip("10.0.0.5", header, PROXIES) == "8.8.8.8"


def test_when_every_hop_is_a_trusted_proxy_the_leftmost_known_hop_is_not_guessed():
    assert resolve_client_ip("10.0.0.5", "10.0.0.9, 10.0.0.8", PROXIES) == "10.0.0.5"


@pytest.mark.parametrize("header", ["garbage", "8.8.8.8, not-an-ip", "999.1.1.1", ",,", " "])
def test_a_garbage_header_from_a_proxy_falls_back_to_the_peer(header):
    assert resolve_client_ip("10.0.0.5", header, PROXIES) == "10.0.0.5"


def test_a_garbage_hop_stops_the_walk_before_anything_the_client_wrote():
    assert resolve_client_ip("10.0.0.5", "127.0.0.1, bogus, 10.0.0.9", PROXIES) == "10.0.0.5"


def test_ipv4_mapped_ipv6_addresses_are_read_as_ipv4():
    assert resolve_client_ip("::ffff:8.8.8.8", None, PROXIES) == "8.8.8.8"
    assert resolve_client_ip("::ffff:10.0.0.5", "::ffff:1.1.1.1", PROXIES) == "1.1.1.1"
    assert is_internal("::ffff:127.0.0.1")
    assert not is_internal("::ffff:8.8.8.8")


def test_ipv6_peers_and_proxies_work():
    proxies = parse_networks(["2001:db8::/32"])
    assert resolve_client_ip("2001:db8::1", "2a00:1450::1", proxies) == "2a00:1450::1"
    assert resolve_client_ip("2a00:1450::1", "::1", proxies) == "2a00:1450::1"


def test_an_unknown_peer_is_reported_and_never_internal():
    assert resolve_client_ip(None, "127.0.0.1", PROXIES) == "0.0.0.0"
    assert resolve_client_ip("", None, PROXIES) == "0.0.0.0"
    assert not is_internal("0.0.0.0")
    assert not is_internal("::")


@pytest.mark.parametrize("address", [
    "127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "fd00::1", "fe80::1",
    "169.254.1.1",
])
def test_loopback_and_private_addresses_are_internal(address):
    assert is_internal(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "2a00:1450::1", "100.64.0.1", "not-an-ip", ""])
def test_public_and_malformed_addresses_are_not_internal(address):
    assert not is_internal(address)


def test_parse_networks_accepts_addresses_and_ranges_and_names_a_bad_entry():
    networks = parse_networks(["10.0.0.0/8", " 192.168.1.1 ", "fd00::/8", "10.1.2.3/8"])
    assert [str(n) for n in networks] == ["10.0.0.0/8", "192.168.1.1/32", "fd00::/8",
                                          "10.0.0.0/8"]
    with pytest.raises(ValueError, match=r"'proxy\.example'"):
        parse_networks(["10.0.0.0/8", "proxy.example"])


def test_a_bad_trusted_proxy_entry_stops_the_app_naming_the_key(make_app):
    with pytest.raises(SettingsError, match=r"http\.trusted_proxies: 'proxy\.example'"):
        make_app(**{"http.trusted_proxies": ("10.0.0.0/8", "proxy.example")})
