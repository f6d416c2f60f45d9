"""DNS look-ups for domain verification, through dnspython.

A look-up ends in one of two ways, and callers must tell them apart (a transient DNS error read
as "no records" would downgrade verified domains):

- a definite answer: the records, or none at all (NXDOMAIN, or the name exists without records of
  that type). Returned as a list, possibly empty.
- no answer: every server timed out, answered SERVFAIL/REFUSED, or could not be reached. Raised as
  `LookupFailed`, because it says nothing about what the zone holds.

`dns.nameservers` (`host[:port]`, IPv6 as `[addr]:port`) replaces the system resolver when set;
`dns.timeout` bounds each look-up. Building a `Resolver` reads no files and sends nothing.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import dns.exception
import dns.nameserver
import dns.rdata
import dns.rdatatype
import dns.resolver
import idna

from burnbox.outbound_guard import DNS, check_outbound
from burnbox.settings import Settings

DEFAULT_PORT = 53


class LookupFailed(Exception):
    """No definite answer came back (timeout, SERVFAIL, unreachable or misconfigured resolver)."""


@dataclass(frozen=True)
class MxRecord:
    """One MX record: its preference and its exchange host (A-label, lower case, no final dot)."""

    preference: int
    exchange: str


# Remembered answers: every RCPT of mailin converts its domain, and the IDNA conversion costs
# some 10 µs each time (a few per cent of mailin's CPU per message) for the same few domains.
HOSTNAME_CACHE_SIZE = 1024


@functools.lru_cache(maxsize=HOSTNAME_CACHE_SIZE)
def to_ascii_hostname(name: str) -> str:
    """`name` as DNS carries it: IDNA A-labels (UTS 46 mapping), lower case, no final dot.

    Raise ValueError when it is not a valid host name (empty or over-long labels, characters
    outside letters, digits and hyphens, a label starting or ending with a hyphen). Valid
    answers are remembered (the last HOSTNAME_CACHE_SIZE names); refusals are not.
    """
    text = name.strip().rstrip(".")
    if not text:
        raise ValueError("empty host name")
    try:
        return idna.encode(text, uts46=True, std3_rules=True).decode("ascii").lower()
    except idna.IDNAError as exc:
        raise ValueError(str(exc)) from exc


def parse_nameserver(value: str) -> tuple[str, int]:
    """Split `host`, `host:port`, `[ipv6]` or `[ipv6]:port` into (host, port); ValueError if bad."""
    text = value.strip()
    if text.startswith("["):
        host, closed, rest = text[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            raise ValueError(f"malformed nameserver {value!r}")
        port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:  # a host name, an IPv4 address, or a bare IPv6 address
        host, port_text = text, ""
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
    except ValueError as exc:
        raise ValueError(f"malformed nameserver port in {value!r}") from exc
    if not host or not 0 < port < 65536:
        raise ValueError(f"malformed nameserver {value!r}")
    return host, port


def _address_of(host: str, port: int) -> str:
    """An IP address for a nameserver given by address or by name (e.g. a compose service)."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0][4][0]
    except OSError as exc:
        raise LookupFailed(f"nameserver {host} cannot be resolved: {exc}") from exc


class Resolver:
    """TXT and MX look-ups against the configured servers, or the system resolver."""

    def __init__(self, nameservers: Sequence[str] = (), timeout: timedelta = timedelta(seconds=5)
                 ) -> None:
        self.nameservers = tuple(nameservers)
        self.timeout = timeout.total_seconds()

    def _resolver(self) -> dns.resolver.Resolver:
        try:
            resolver = dns.resolver.Resolver(configure=not self.nameservers)
        except dns.exception.DNSException as exc:  # no /etc/resolv.conf, or an unusable one
            raise LookupFailed(f"system resolver unusable: {exc}") from exc
        if self.nameservers:
            servers = []
            for value in self.nameservers:
                try:
                    host, port = parse_nameserver(value)
                except ValueError as exc:
                    raise LookupFailed(str(exc)) from exc
                servers.append(dns.nameserver.Do53Nameserver(_address_of(host, port), port))
            resolver.nameservers = servers
        resolver.lifetime = self.timeout
        # Each server gets the whole budget; dnspython's default would retry it within it anyway.
        resolver.timeout = self.timeout
        return resolver

    def _query(self, name: str, rdtype: dns.rdatatype.RdataType) -> list[dns.rdata.Rdata]:
        """The records of one type at `name`; [] for a definite "none"; raise LookupFailed."""
        check_outbound(DNS, name)
        try:
            answer = self._resolver().resolve(name, rdtype, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return []
        except dns.resolver.LifetimeTimeout:
            raise LookupFailed(f"{rdtype.name} {name}: no answer within {self.timeout:g}s"
                               ) from None
        except dns.resolver.NoNameservers:
            raise LookupFailed(f"{rdtype.name} {name}: every nameserver failed (SERVFAIL or "
                               "REFUSED)") from None
        except dns.exception.DNSException as exc:
            raise LookupFailed(f"{rdtype.name} {name}: {exc}") from None
        return list(answer)

    def records(self, name: str, rdtype: str) -> list[dns.rdata.Rdata]:
        """The records of type `rdtype` ("A", "TXT"...) at `name`, for callers that read other
        types (the mail authentication checks); [] for a definite "none"; raise LookupFailed,
        also for a type dnspython does not know."""
        try:
            kind = dns.rdatatype.from_text(rdtype)
        except dns.exception.DNSException as exc:
            raise LookupFailed(f"unknown record type {rdtype!r}") from exc
        return self._query(name, kind)

    def txt(self, name: str) -> list[str]:
        """The TXT records at `name`, each one's strings joined (as SPF reads them)."""
        return [b"".join(rdata.strings).decode("utf-8", "replace")  # type: ignore[attr-defined]
                for rdata in self._query(name, dns.rdatatype.TXT)]

    def mx(self, name: str) -> list[MxRecord]:
        """The MX records at `name`, lowest preference first."""
        records = [MxRecord(rdata.preference,  # type: ignore[attr-defined]
                            rdata.exchange.to_text(omit_final_dot=True).lower())  # type: ignore[attr-defined]
                   for rdata in self._query(name, dns.rdatatype.MX)]
        return sorted(records, key=lambda record: (record.preference, record.exchange))

    def addresses(self, name: str) -> list[str]:
        """Every A and AAAA address of `name` (the outbound guard's resolver, see
        `burnbox.netguard`); raise LookupFailed when either look-up got no answer."""
        return [rdata.address  # type: ignore[attr-defined]
                for rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA)
                for rdata in self._query(name, rdtype)]


def make_resolver(settings: Settings) -> Resolver:
    """The resolver the settings describe (`dns.nameservers`, `dns.timeout`)."""
    return Resolver(settings.dns.nameservers, settings.dns.timeout)


def outbound_resolver(settings: Settings) -> Resolver | None:
    """What outbound HTTP (webhooks, link checks) resolves names with: the configured
    nameservers' resolver, or None for the system's when none is configured."""
    return make_resolver(settings) if settings.dns.nameservers else None
