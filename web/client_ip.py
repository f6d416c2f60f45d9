"""The client's IP address, resolved once per request.

X-Forwarded-For is believed only when the direct peer is a configured trusted proxy; then the
rightmost address that is not itself a trusted proxy is the client. The same value feeds rate
limits, API-key allowlists, audit entries and the metrics rule: believed from any client, the
header would let anyone pass for a trusted address, dodge rate limits and write audit IPs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """Parse addresses and CIDR ranges; raise ValueError naming the first bad entry."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError as exc:
            raise ValueError(f"{entry!r} is not an IP address or CIDR range") from exc
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None,
             proxies: tuple[IPNetwork, ...]) -> bool:
    return address is not None and any(address in network for network in proxies)


def resolve_client_ip(peer: str | None, forwarded_for: str | None,
                      proxies: tuple[IPNetwork, ...]) -> str:
    """The client address for a request from `peer` carrying `forwarded_for`."""
    peer_address = _address(peer or "")
    if peer_address is None:
        return peer or "0.0.0.0"  # noqa: S104 (not a bind address: an unknown peer)
    if not forwarded_for or not _trusted(peer_address, proxies):
        return str(peer_address)
    for hop in reversed(forwarded_for.split(",")):
        hop_address = _address(hop)
        if hop_address is None:
            break
        if not _trusted(hop_address, proxies):
            return str(hop_address)
    return str(peer_address)
