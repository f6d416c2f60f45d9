"""Outbound connection guard (SSRF): resolve a target host once, refuse internal addresses, and
hand back the checked address so the caller connects to it and not to the name again.

Connecting by name after checking would let a rebinding DNS server answer a public address to the
check and a private one to the connection.

An address is internal unless it is globally routable unicast. IPv6 forms that carry an IPv4
address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
`2002::/16`, Teredo `2001::/32`) are judged by the IPv4 address they carry, so `::ffff:127.0.0.1`
is loopback while a NAT64 address of a public server stays reachable on IPv6-only networks. Host
names written as numbers (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`) are read the way the
C library would read them: as the IPv4 address they spell.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Protocol

from burnbox.outbound_guard import DNS, check_outbound

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# RFC 8215 local-use NAT64: translated by the operator's own gateway, so never public.
LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
# inet_aton accepts one to four parts, each decimal, octal (leading 0) or hex (0x).
_NUMERIC_IPV4 = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$", re.IGNORECASE)


class TargetRefused(ValueError):
    """The target cannot be resolved, or resolves to an address outbound calls may not reach."""


class InternalTarget(TargetRefused):
    """The target resolves to an internal address and internal addresses are not allowed (each
    caller names the setting that allows them)."""


class AddressResolver(Protocol):
    """Something that turns a host name into its IP addresses (see `burnbox.dns.Resolver`)."""

    def addresses(self, name: str) -> list[str]:
        """Every A and AAAA address of `name`; raise an exception when no answer came."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for (empty when it carries none)."""
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    packed = address.packed
    if address in NAT64 or (packed[:12] == bytes(12) and int(address) > 1):
        # NAT64 and the deprecated IPv4-compatible form keep the IPv4 address in the low 32 bits.
        return [ipaddress.IPv4Address(packed[12:])]
    return []


def is_internal_address(address: IPAddress) -> bool:
    """True unless `address` is globally routable unicast: private, unique-local, loopback,
    link-local, unspecified, shared (CGNAT), documentation, reserved and multicast addresses are
    internal, and so is an IPv6 address that carries an internal IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in LOCAL_NAT64:
            return True
        inner = embedded_ipv4(address)
        if inner:
            return any(is_internal_address(carried) for carried in inner)
    return not address.is_global or address.is_multicast


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address `host` spells, or None when it is a name: dotted, bracketless IPv6 (a zone
    suffix is dropped), and the numeric IPv4 forms the C library accepts."""
    text = host.strip().rstrip(".")
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        pass
    if _NUMERIC_IPV4.match(text):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def _system_addresses(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def resolve_target(host: str, port: int, *, allow_private: bool,
                   resolver: AddressResolver | None = None) -> str:
    """The address to connect to for host:port, resolved once (through `resolver` when given,
    else the system resolver).

    Raise TargetRefused when the host does not resolve or when ANY of its addresses is internal
    and `allow_private` is off (webhooks.allow_private_targets): one bad record is enough,
    since a client may pick any of them."""
    literal = parse_ip_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        # Before the `try`: the guard's error must not read as "cannot resolve".
        check_outbound(DNS, host)
        try:
            found = resolver.addresses(host) if resolver else _system_addresses(host, port)
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        except Exception as exc:  # any resolver failure means "no address to check"
            raise TargetRefused(f"cannot resolve {host}") from exc
    if not addresses:
        raise TargetRefused(f"cannot resolve {host}")
    if not allow_private:
        _refuse_internal(host, addresses)
    return str(addresses[0])


def refuse_internal_literal(host: str, *, allow_private: bool) -> None:
    """Raise InternalTarget, in `resolve_target`'s words, for a host that names an internal
    address without a DNS look-up: an IP literal, or `localhost` and its subdomains (RFC 6761
    keeps them on loopback). Names that need DNS pass: `resolve_target` checks them when a
    connection is made. For checks at the time a target is configured, where no look-up may
    run (one inside the configuring request's transaction would hold it open)."""
    if allow_private:
        return
    literal = parse_ip_literal(host)
    if literal is not None:
        _refuse_internal(host, [literal])
    elif host.lower().rstrip(".") == "localhost" or host.lower().rstrip(".").endswith(
            ".localhost"):
        _refuse_internal(host, [ipaddress.ip_address("127.0.0.1")])


def _refuse_internal(host: str, addresses: list[IPAddress]) -> None:
    """InternalTarget when any of `addresses` is internal."""
    refused = [a for a in addresses if is_internal_address(a)]
    if refused:
        raise InternalTarget(f"{host} resolves to an internal address ({refused[0]}); refused")
