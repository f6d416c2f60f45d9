"""The analytics routes over a large history: p99 latency of each figure over 1 million e-mails'
worth of counters of one org (BURNBOX_BENCH_ANALYTICS_EMAILS, default 1,000,000) across 100
teams, 10 domains, 37 sender domains and 365 days, measured twice:

- the model calls the routes make, in this process, against a trivial indexed query (the org
  by primary key) measured in the same run;
- the routes themselves over HTTP, through `burnbox web` (gunicorn, one gevent worker) with an
  owner's JWT, one request at a time, against `GET /orgs/:id` through the same process (the
  org by primary key behind the same sign-in and permission check). Only with
  BURNBOX_BENCH_REDIS_URL set as well: the web process runs the scaled shape.

The counters are the worst case for the readers: one `mail_counters` row per e-mail (no two
e-mails share a team, hour, sender domain and shard), and one `inbox_counters` row per team and
hour. PostgreSQL only (BURNBOX_BENCH_DATABASE_URL; that database's counters of the bench's org
are replaced, filled with generate_series, unless they already hold that many e-mails). Without
it the module prints nothing. BURNBOX_BENCH_ANALYTICS_SAMPLES (default 50) sets the timed calls
per figure. Windows are in Europe/Paris, whose days start off UTC midnight.

Every figure and route is called once before it is timed, and this process tunes its collector
(`burnbox.gc_tuning`) as a web worker does.

The closed UTC days are rolled up first (`models.analytics.rollups`, as the clock's job and
`burnbox analytics backfill` do; the time it took is printed), so each figure reads the
rollups for them and the counters for the rest of its window, as the routes do."""

from __future__ import annotations

import http.client
import os
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlencode

from sqlalchemy import text

from bench.audit import _p99_ms
from bench.events import Shape, running
from bench.harness import Comparison
from burnbox.gc_tuning import tune_collector
from burnbox.settings import load_settings
from burnbox.timeutil import utcnow
from models.analytics import figures
from models.analytics.window import Window, zone
from models.db import Database
from models.schema import upgrade
from models.tenancy.orgs import Org, OrgMember
from tasks.analytics import roll_up_committing
from tests.factories.identity import auth_headers, make_user
from tests.processes import free_port, wait_for_http

ORG = uuid.UUID("00000000-0000-4000-8000-0000000a0a17")
TEAM = uuid.UUID("00000000-0000-4000-8000-000000000007")  # one of the 100 teams counted
ZONE = "Europe/Paris"  # days that start off UTC midnight: the partial days at both edges
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
_TEAM_ROW = """
INSERT INTO teams (id, org_id, name, slug, description, is_archived, settings, created_at,
                   updated_at)
VALUES (:team, :org, 'Bench team', 'bench-team', '', false, '{}', now(), now())
ON CONFLICT (id) DO NOTHING
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
    params: dict[str, object] = {"org": str(ORG), "emails": emails}
    with db.engine.begin() as connection:
        connection.execute(text(_ORG_ROW), params)
        connection.execute(text(_TEAM_ROW), params | {"team": str(TEAM)})
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
        roll_up_committing(session, utcnow(), ORG)
    took = time.perf_counter() - started
    # What autovacuum does soon after a large write: statistics for the planner, and the
    # visibility map that lets the sums read the indexes alone.
    with db.engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT")
        for table in ("analytics_days", "analytics_domain_days", "analytics_sender_days"):
            connection.execute(text(f"VACUUM ANALYZE {table}"))
    return took


def _owner_headers(db: Database, shape: Shape) -> dict[str, str]:
    """The Authorization header of a new owner of the bench org (signed in with a JWT)."""
    with db.transaction() as session:
        user = make_user(session, "bench_analytics_owner")
        session.add(OrgMember(org_id=ORG, user_id=user.id, role="owner"))
        session.flush()
        return auth_headers(session, shape.settings, user)


def _routes(db: Database, samples: int) -> list[Comparison]:
    """Each analytics route over HTTP, one request at a time on a kept connection, through
    `burnbox web` (gunicorn, one gevent worker) on the same database, against `GET /orgs/:id`
    (the org by primary key, behind the same sign-in and permission check)."""
    shape = Shape()
    if not shape.scaled:
        print("routes skipped: set BURNBOX_BENCH_REDIS_URL too (the web process of the scaled "
              "shape)")
        return []
    headers = _owner_headers(db, shape)
    port = free_port()
    org, team = f"/api/v1/orgs/{ORG}", f"/api/v1/orgs/{ORG}/teams/{TEAM}"
    paths = {"org totals": f"{org}/analytics", "team totals": f"{team}/analytics"}
    for days in (365, 30):
        window = urlencode({"days": days, "tz": ZONE})
        for whose, prefix in (("org", org), ("team", team)):
            paths[f"{whose} emails-per-day {days} days"] = (
                f"{prefix}/analytics/emails-per-day?{window}")
            paths[f"{whose} insights {days} days"] = f"{prefix}/analytics/insights?{window}"
        paths[f"org domain-series {days} days"] = f"{org}/analytics/domain-series?{window}"
    with running([shape.web(port)]):
        wait_for_http(f"http://127.0.0.1:{port}/healthz")
        connection = http.client.HTTPConnection("127.0.0.1", port)

        def getter(path: str) -> Callable[[], None]:
            def get() -> None:
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                body = response.read()
                if response.status != 200:
                    raise RuntimeError(f"GET {path}: {response.status} {body[:200]!r}")
            return get

        lookup = getter(org)
        for call in (lookup, *map(getter, paths.values())):
            call()  # warm: the worker's connection, compiled statements, caches
        baseline = _p99_ms(lookup, samples)
        comparisons = [Comparison(f"analytics route {name}, p99", _p99_ms(getter(path), samples),
                                  baseline, unit="ms")
                       for name, path in paths.items()]
        connection.close()
    return comparisons


def run() -> list[Comparison]:
    """Fill the counters; compare each figure's p99 with a primary-key lookup's, then each
    route's with `GET /orgs/:id` (the routes only with BURNBOX_BENCH_REDIS_URL set too)."""
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
    org, team = figures.Scope(ORG), figures.Scope(ORG, TEAM)
    year, month = (Window.ending(utcnow(), days, zone(ZONE)) for days in (365, 30))
    cases: dict[str, Callable[[], object]] = {
        "org totals": lambda: figures.org_summary(session, ORG),
        "team totals": lambda: figures.team_summary(session, ORG, TEAM),
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
    # Measured as a web worker runs them: warm (the first call opens the connection and
    # compiles the statements) and with the collector tuned as gunicorn's post_worker_init
    # does, so no full collection of everything the setup left walks through a call.
    for call in (lookup, *cases.values()):
        call()
    tune_collector()
    baseline = _p99_ms(lookup, samples)
    comparisons = [Comparison(f"analytics {name} ({emails} e-mails), p99",
                              _p99_ms(call, samples), baseline, unit="ms")
                   for name, call in cases.items()]
    session.close()
    comparisons += _routes(db, samples)
    db.dispose()
    return comparisons


if __name__ == "__main__":
    for comparison in run():
        print(comparison.line())
