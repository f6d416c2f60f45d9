"""A real authoritative DNS server on loopback (dnslib), with zone data the test controls.

It answers over UDP and TCP on one free port. Records are loaded from zone-file text, so a test
can publish exactly what the documentation tells operators to publish. `fail("servfail")` makes it
answer SERVFAIL and `fail("silent")` makes it never answer, for one record type or all, so tests
can produce the look-up errors verification must survive.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator

import pytest
from dnslib import QTYPE, RCODE, RR, DNSError, DNSRecord
from dnslib.server import DNSLogger, DNSServer

SERVFAIL = "servfail"
SILENT = "silent"


class ZoneServer:
    """An authoritative server for whatever `publish` loaded; see the module docstring."""

    def __init__(self) -> None:
        self.records: list[RR] = []
        self.failures: dict[str | None, str] = {}
        self.queries: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._servers = self._bind()
        self.port = self._servers[0].server.server_address[1]
        self.nameserver = f"127.0.0.1:{self.port}"

    def _bind(self) -> list[DNSServer]:
        quiet = DNSLogger(prefix=False, logf=lambda _text: None)
        for _attempt in range(20):
            udp = DNSServer(self, address="127.0.0.1", port=0, logger=quiet)
            port = udp.server.server_address[1]
            try:
                tcp = DNSServer(self, address="127.0.0.1", port=port, tcp=True, logger=quiet)
            except OSError:  # the TCP side of that port is taken; try another port
                udp.server.server_close()
                continue
            return [udp, tcp]
        raise RuntimeError("no free port for the test DNS server")

    def start(self) -> None:
        """Serve in background threads."""
        for server in self._servers:
            server.start_thread()

    def stop(self) -> None:
        """Stop serving and release the port."""
        for server in self._servers:
            server.stop()
            server.server.server_close()

    def publish(self, zone_text: str) -> None:
        """Replace every record with those of `zone_text` (zone-file lines with absolute names)."""
        records = RR.fromZone(zone_text)
        with self._lock:
            self.records = records

    def fail(self, how: str, rtype: str | None = None) -> None:
        """Answer queries of `rtype` (every type when None) with SERVFAIL, or never (SILENT)."""
        with self._lock:
            self.failures[rtype] = how

    def heal(self) -> None:
        """Answer every query normally again."""
        with self._lock:
            self.failures.clear()

    def resolve(self, request: DNSRecord, _handler: socketserver.BaseRequestHandler
                ) -> DNSRecord:
        """dnslib's resolver hook: answer from the published records."""
        qname = str(request.q.qname).rstrip(".").lower()
        qtype = QTYPE[request.q.qtype]
        with self._lock:
            self.queries.append((qname, qtype))
            failure = self.failures.get(qtype) or self.failures.get(None)
            records = list(self.records)
        if failure == SILENT:
            raise DNSError("dropped on purpose")  # dnslib then sends nothing back
        reply = request.reply()
        if failure == SERVFAIL:
            reply.header.rcode = RCODE.SERVFAIL
            return reply
        at_name = [rr for rr in records if str(rr.rname).rstrip(".").lower() == qname]
        if not at_name:
            reply.header.rcode = RCODE.NXDOMAIN
        for rr in at_name:
            if rr.rtype == request.q.qtype:
                reply.add_answer(rr)
        return reply


@pytest.fixture(scope="session")
def dns_server_process() -> Iterator[ZoneServer]:
    """One loopback DNS server for the test session."""
    server = ZoneServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def dns_server(dns_server_process: ZoneServer) -> Iterator[ZoneServer]:
    """The loopback DNS server, empty and healthy at the start of the test and afterwards."""
    dns_server_process.publish("")
    dns_server_process.heal()
    dns_server_process.queries.clear()
    yield dns_server_process
    dns_server_process.publish("")
    dns_server_process.heal()
