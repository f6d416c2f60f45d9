"""The audit list over a large trail: p99 latency of a filtered page of `list_entries` (the
query, count included, that GET /orgs/:id/audit runs) over BURNBOX_BENCH_AUDIT_ROWS entries
(default 1,000,000) of one org spread over 365 days, against a trivial indexed query (one entry
by primary key) measured in the same run.

PostgreSQL only (BURNBOX_BENCH_DATABASE_URL; that database's audit_log is emptied and filled
with generate_series, which is minutes faster than inserts from Python, unless it already holds
exactly that many entries of the bench's org). Without it the module prints nothing.
BURNBOX_BENCH_AUDIT_SAMPLES (default 200) sets the timed calls per query.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import select, text

from bench.harness import Comparison
from burnbox.settings import load_settings
from burnbox.timeutil import utcnow
from models.db import Database
from models.platform.audit import AuditEntry
from models.platform.audit_log import AuditFilter, list_entries
from models.schema import upgrade

ORG = uuid.UUID("00000000-0000-4000-8000-00000000a0d1")
ACTORS = 50
_FILL = """
INSERT INTO audit_log (id, created_at, action, actor_id, actor_email, org_id, resource_type,
                       resource_id, resource_name, ip, user_agent, channel, severity, category)
SELECT md5(n::text || 'audit')::uuid,
       now() - (n * interval '31.536 seconds'),
       (ARRAY['inbox.create','inbox.delete','team.update','org.member_role','webhook.create',
              'domain.verify','apikey.revoke','email.delete'])[1 + n % 8],
       ('00000000-0000-4000-8000-' || lpad((n % :actors)::text, 12, '0'))::uuid,
       'actor' || (n % :actors) || '@example.com',
       :org,
       (ARRAY['inbox','inbox','team','member','webhook','domain','apikey','email'])[1 + n % 8],
       n::text, 'box' || n || '@mail.example.com', '192.0.2.1', 'bench', 'api',
       (ARRAY['info','warning','info','critical','info','info','warning','warning'])[1 + n % 8],
       (ARRAY['inbox','inbox','team','member','webhook','domain','apikey','email'])[1 + n % 8]
FROM generate_series(1, :rows) AS n
"""


def _p99_ms(call: Callable[[], object], samples: int) -> float:
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.quantiles(timings, n=100)[98]


def run() -> list[Comparison]:
    """Fill the trail and compare each filtered page's p99 with a primary-key lookup's."""
    database = os.environ.get("BURNBOX_BENCH_DATABASE_URL", "")
    if not database.startswith("postgresql"):
        print("skipped: set BURNBOX_BENCH_DATABASE_URL to a PostgreSQL database")
        return []
    rows = int(os.environ.get("BURNBOX_BENCH_AUDIT_ROWS", "1000000"))
    db = Database(load_settings(environ={}, overrides={"database.url": database,
                                                       "log.level": "WARNING"}))
    upgrade(db.engine)
    samples = int(os.environ.get("BURNBOX_BENCH_AUDIT_SAMPLES", "200"))
    with db.engine.connect() as connection:
        # Autocommit: VACUUM runs outside a transaction. It does what autovacuum does soon
        # after a bulk load (statistics, and the visibility map that lets the capped count read
        # the index alone).
        connection.execution_options(isolation_level="AUTOCOMMIT")
        held = connection.scalar(text("SELECT count(*) FROM audit_log WHERE org_id = :org"),
                                 {"org": str(ORG)})
        if held != rows:
            connection.execute(text("TRUNCATE audit_log"))
            connection.execute(text(_FILL), {"rows": rows, "org": str(ORG), "actors": ACTORS})
            connection.execute(text("VACUUM ANALYZE audit_log"))
    session = db.session()
    some_id = session.scalar(select(AuditEntry.id).limit(1))
    week_ago = utcnow() - timedelta(days=7)
    filters = {
        "no filter": AuditFilter(),
        "action": AuditFilter(action="org.member_role"),
        "actor_id": AuditFilter(actor_id=uuid.UUID("00000000-0000-4000-8000-000000000007")),
        "actor_email": AuditFilter(actor_email="Actor7@Example.com"),
        "severity": AuditFilter(severity="critical"),
        "category + date_from (last 7 days)": AuditFilter(category="inbox", date_from=week_ago),
        "resource_name substring": AuditFilter(resource_name="box12345@"),
    }
    baseline = _p99_ms(lambda: session.get(AuditEntry, some_id, populate_existing=True),
                       samples)
    comparisons = []
    for name, where in filters.items():
        p99 = _p99_ms(lambda where=where: list_entries(session, ORG, where, 1, 20), samples)
        comparisons.append(Comparison(f"audit page, {name} ({rows} entries), p99", p99,
                                      baseline, unit="ms"))
    session.close()
    return comparisons
