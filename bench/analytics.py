"""The analytics routes over a large history: p99 latency of each figure (the model calls the
routes make) over 1 million e-mails' worth of counters of one org (BURNBOX_BENCH_ANALYTICS_EMAILS,
default 1,000,000) across 100 teams, 10 domains, 37 sender domains and 365 days, against a
trivial indexed query (the org by primary key) measured in the same run.

The counters are the worst case for the readers: one `mail_counters` row per e-mail (no two
e-mails share a team, hour, sender domain and shard), and one `inbox_counters` row per team and
hour. PostgreSQL only (BURNBOX_BENCH_DATABASE_URL; that database's counters of the bench's org
are replaced, filled with generate_series, unless they already hold that many e-mails). Without
it the module prints nothing. BURNBOX_BENCH_ANALYTICS_SAMPLES (default 50) sets the timed calls
per figure.

The closed UTC days are rolled up first (`models.analytics.rollups`, as the clock's job and
`burnbox analytics backfill` do; the time it took is printed), so each figure reads the
rollups for them and the counters for the rest of its window, as the routes do.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable

from sqlalchemy import text

from bench.audit import _p99_ms
from bench.harness import Comparison
from burnbox.settings import load_settings
from burnbox.timeutil import utcnow
from models.analytics import figures
from models.analytics.rollups import roll_up
from models.analytics.window import Window, zone
from models.db import Database
from models.schema import upgrade
from models.tenancy.orgs import Org

ORG = uuid.UUID("00000000-0000-4000-8000-0000000a0a17")
TEAMS = 100
SLOTS = 365 * 24
_ORG_ROW = """
INSERT INTO orgs (id, name, slug, settings, created_at, updated_at)
VALUES (:org, 'Bench analytics', 'bench-analytics', '{}', now(), now())
ON CONFLICT (id) DO NOTHING
"""
# E-mail n: team n % 100, hour slot (n / 100) % 8760 back from now, shard n / 876000. The sizes
# are written into the text: psycopg sends a small Python int as smallint, and 100 * 8760
# overflows it.
_MAIL = f"""
INSERT INTO mail_counters (org_id, team_id, domain_id, sender_domain, day, hour, shard, emails,
                           bytes)
SELECT :org,
       ('00000000-0000-4000-8000-' || lpad((n % {TEAMS})::text, 12, '0'))::uuid,
       ('00000000-0000-4000-9000-' || lpad((n % {TEAMS} / 10)::text, 12, '0'))::uuid,
       'sender' || (n % 37) || '.example',
       (slot)::date, extract(hour FROM slot)::smallint, (n / {TEAMS * SLOTS})::smallint,
       1, 2048 + n % 4096
FROM (SELECT n, date_trunc('hour', now() AT TIME ZONE 'UTC')
                - ((n / {TEAMS}) % {SLOTS}) * interval '1 hour' AS slot
      FROM generate_series(0, CAST(:emails AS integer) - 1) AS n) AS e
"""
_INBOXES = f"""
INSERT INTO inbox_counters (org_id, team_id, domain_id, day, hour, inboxes)
SELECT :org, ('00000000-0000-4000-8000-' || lpad(t::text, 12, '0'))::uuid,
       ('00000000-0000-4000-9000-' || lpad((t / 10)::text, 12, '0'))::uuid,
       (slot)::date, extract(hour FROM slot)::smallint, 1
FROM generate_series(0, {TEAMS - 1}) AS t,
     (SELECT date_trunc('hour', now() AT TIME ZONE 'UTC') - h * interval '1 hour' AS slot
      FROM generate_series(0, {SLOTS - 1}) AS h) AS hours
"""


def _fill(db: Database, emails: int) -> None:
    params = {"org": str(ORG), "emails": emails}
    with db.engine.begin() as connection:
        connection.execute(text(_ORG_ROW), params)
        held = connection.scalar(text(
            "SELECT coalesce(sum(emails), 0) FROM mail_counters WHERE org_id = :org"), params)
        if held == emails:
            return
        for table in ("mail_counters", "inbox_counters", "analytics_days",
                      "analytics_domain_days", "analytics_sender_days", "analytics_rollup_marks"):
            connection.execute(text(f"DELETE FROM {table} WHERE org_id = :org"), params)
        connection.execute(text(_MAIL), params)
        connection.execute(text(_INBOXES), params)
        connection.execute(text("ANALYZE mail_counters"))
        connection.execute(text("ANALYZE inbox_counters"))


def _roll_up(db: Database) -> float:
    """Roll the bench org's closed days up, as the clock's job does (only the days closed since
    the last run when the counters were kept); the seconds it took."""
    started = time.perf_counter()
    with db.session() as session:
        roll_up(session, utcnow(), ORG)
    took = time.perf_counter() - started
    # What autovacuum does soon after a large write: statistics for the planner, and the
    # visibility map that lets the sums read the indexes alone.
    with db.engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT")
        for table in ("analytics_days", "analytics_domain_days", "analytics_sender_days"):
            connection.execute(text(f"VACUUM ANALYZE {table}"))
    return took


def run() -> list[Comparison]:
    """Fill the counters and compare each figure's p99 with a primary-key lookup's."""
    database = os.environ.get("BURNBOX_BENCH_DATABASE_URL", "")
    if not database.startswith("postgresql"):
        print("skipped: set BURNBOX_BENCH_DATABASE_URL to a PostgreSQL database")
        return []
    emails = int(os.environ.get("BURNBOX_BENCH_ANALYTICS_EMAILS", "1000000"))
    samples = int(os.environ.get("BURNBOX_BENCH_ANALYTICS_SAMPLES", "50"))
    db = Database(load_settings(environ={}, overrides={"database.url": database,
                                                       "log.level": "WARNING"}))
    upgrade(db.engine)
    _fill(db, emails)
    print(f"rollup of the closed days: {_roll_up(db):.1f} s")
    session = db.session()
    team_id = uuid.UUID("00000000-0000-4000-8000-000000000007")
    org, team = figures.Scope(ORG), figures.Scope(ORG, team_id)
    year, month = (Window.ending(utcnow(), days, zone("Europe/Paris")) for days in (365, 30))
    cases: dict[str, Callable[[], object]] = {
        "org totals": lambda: figures.org_summary(session, ORG),
        "team totals": lambda: figures.team_summary(session, ORG, team_id),
    }
    for label, window in (("365 days", year), ("30 days", month)):
        for whose, scope in (("org", org), ("team", team)):
            cases[f"{whose} emails-per-day {label}"] = (
                lambda s=scope, w=window: figures.emails_per_day(session, s, w))
            cases[f"{whose} insights {label}"] = (
                lambda s=scope, w=window: figures.insights(session, s, w))
        cases[f"org domain-series {label}"] = (
            lambda w=window: figures.domain_series(session, org, w))
    lookup = lambda: session.get(Org, ORG, populate_existing=True)  # noqa: E731
    lookup()  # the first call opens the connection: not part of any figure
    baseline = _p99_ms(lookup, samples)
    comparisons = [Comparison(f"analytics {name} ({emails} e-mails), p99",
                              _p99_ms(call, samples), baseline, unit="ms")
                   for name, call in cases.items()]
    session.close()
    return comparisons
