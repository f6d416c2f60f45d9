"""Outbound connection guard (SSRF): resolve a target host once, refuse internal addresses, and
hand back the checked address so the caller connects to it and not to the name again.

Connecting by name after checking would let a rebinding DNS server answer a public address to the
check and a private one to the connection (lessons #14).
"""

from __future__ import annotations

import ipaddress
import socket


class TargetRefused(ValueError):
    """The target cannot be resolved, or resolves to an address outbound calls may not reach."""


def is_internal_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True for private, unique-local, loopback, link-local, unspecified, multicast and reserved
    addresses (IPv4-mapped IPv6 addresses are judged by their IPv4 form)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return (address.is_private or address.is_loopback or address.is_link_local
            or address.is_unspecified or address.is_multicast or address.is_reserved)


def resolve_target(host: str, port: int, *, allow_private: bool) -> str:
    """The address to connect to for host:port, resolved once.

    Raise TargetRefused when the host does not resolve or when ANY of its addresses is internal
    and `allow_private` is off (webhooks.allow_private_targets): one bad record is enough,
    since a client may pick any of them."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise TargetRefused(f"cannot resolve {host}") from exc
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    if not addresses:
        raise TargetRefused(f"cannot resolve {host}")
    if not allow_private and any(is_internal_address(a) for a in addresses):
        raise TargetRefused(f"{host} resolves to an internal address; refused")
    return str(addresses[0])
