"""The audit export streams: 100,000 entries (about 80 MB of CSV) leave the process's resident
memory within a bound far below the document's size, sampled at every chunk received."""

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import insert

from burnbox.timeutil import utcnow
from models.platform.audit import AuditEntry

ROWS = 100_000
# Growth of the resident set allowed while the body streams: a quarter of the document, far
# above one batch of rows (the server-side cursor's) and far below the whole export.
BOUND = 25 * 2**20


def _rss() -> int:
    """This process's resident set size in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.fixture
def many_entries(runtime, world):
    start = utcnow() - timedelta(days=1)
    agent = "Mozilla/5.0 " + "x" * 500
    with runtime.db.transaction() as session:
        for first in range(0, ROWS, 5000):
            session.execute(insert(AuditEntry), [
                {"id": uuid.uuid4(), "created_at": start + timedelta(milliseconds=n),
                 "action": "inbox.create", "actor_id": None, "org_id": world.ids["org"],
                 "resource_type": "inbox", "resource_id": str(uuid.uuid4()),
                 "resource_name": f"box{n}@mail.example.com", "ip": "192.0.2.1",
                 "user_agent": agent, "channel": "api", "severity": "info",
                 "category": "inbox", "after": {"address": f"box{n}@mail.example.com"}}
                for n in range(first, first + 5000)])


def test_a_100k_entry_export_streams_in_bounded_memory(client, world, many_entries):
    # Measured before the request: the test client runs the body up to its first chunk
    # before it returns.
    baseline = _rss()
    response = client.get(world.path("/orgs/{org}/audit/export"), headers=world.headers["owner"],
                          query_string={"format": "csv", "action": "inbox.create"},
                          buffered=False)
    assert response.status_code == 200
    peak, size, lines = baseline, 0, 0
    for chunk in response.response:
        size += len(chunk)
        lines += chunk.count(b"\n") if isinstance(chunk, bytes) else chunk.count("\n")
        peak = max(peak, _rss())
    response.close()
    assert lines == ROWS + 1
    assert size > 3 * BOUND, "the document must dwarf the bound for the test to mean anything"
    assert peak - baseline < BOUND, f"RSS grew {(peak - baseline) / 2**20:.1f} MiB"
