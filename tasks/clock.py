"""The clock: enqueues periodic jobs (outbox sweep, DNS re-check, webhook_retry and the delivery
sweep, admin stats, cleanup, API-key usage, analytics rollups).

Each job fires once per period slot. The slot is claimed with a set-if-absent key in the shared
key-value store, so a second clock process (or a restarted one) never fires a slot twice.

While the store (or the broker: both are Redis when scaled) fails, the clock retries every
`OUTAGE_TICK`; on the first tick that reaches it again it fires the after-outage jobs (the
outbox sweep and the delivery sweep without their grace), each also once per slot across
clocks.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

import dramatiq

from burnbox import metrics
from burnbox.kv import KeyValueStore, StoreUnavailable
from burnbox.settings import Settings
from burnbox.timeutil import utcnow
from tasks.analytics import roll_up_analytics
from tasks.apikeys import flush_api_key_usage
from tasks.cleanup import cleanup
from tasks.dns import recheck_domains
from tasks.events import sweep_outbox, sweep_outbox_after_outage
from tasks.publishers import publish_admin_stats
from tasks.webhooks import (
    sweep_webhook_deliveries,
    sweep_webhook_deliveries_after_outage,
    webhook_retry,
)

log = logging.getLogger(__name__)

# How often a clock that saw the store fail tries again: the after-outage jobs should start
# within a second of Redis coming back, not a whole tick later.
OUTAGE_TICK = timedelta(seconds=1)


@dataclass(frozen=True)
class Job:
    """A periodic job: send `actor` once every `every`."""

    name: str
    every: timedelta
    actor: dramatiq.Actor


def default_jobs(settings: Settings) -> list[Job]:
    """The jobs every deployment runs, with periods from the settings."""
    return [Job("sweep_outbox", settings.clock.outbox_grace, sweep_outbox),
            Job("dns_recheck", settings.clock.dns_recheck_interval, recheck_domains),
            Job("webhook_retry", settings.clock.webhook_retry_interval, webhook_retry),
            Job("webhook_sweep", settings.clock.webhook_sweep_interval, sweep_webhook_deliveries),
            Job("admin_stats", settings.clock.admin_stats_interval, publish_admin_stats),
            Job("cleanup", settings.clock.cleanup_interval, cleanup),
            Job("api_key_usage", settings.clock.api_key_usage_interval, flush_api_key_usage),
            Job("analytics_rollup", settings.clock.analytics_rollup_interval,
                roll_up_analytics)]


def after_outage_jobs(settings: Settings) -> list[Job]:
    """The jobs fired as soon as the store answers again after an outage (once per `every`)."""
    return [Job("sweep_outbox_after_outage", settings.clock.outbox_grace,
                sweep_outbox_after_outage),
            Job("webhook_sweep_after_outage", settings.clock.webhook_sweep_interval,
                sweep_webhook_deliveries_after_outage)]


class Clock:
    """Fires due jobs; safe to run in several processes at once."""

    def __init__(self, store: KeyValueStore, jobs: list[Job], tick: timedelta,
                 after_outage: list[Job] | None = None, sent_level: int = logging.INFO) -> None:
        self.store = store
        self.jobs = jobs
        self.tick = tick
        self.after_outage = after_outage or []
        # The level of the "job sent" lines: INFO in the clock process, whose log is read to
        # see that it is alive; `burnbox serve` passes DEBUG, since there they were a few
        # lines every 10 s on an idle terminal.
        self.sent_level = sent_level
        self.in_outage = False  # the last tick could not reach the store or the broker

    def run_once(self, now: datetime | None = None) -> list[str]:
        """Send every job whose current slot nobody claimed yet (first the after-outage jobs,
        when the previous tick failed); return the names sent."""
        moment = (now or utcnow()).timestamp()
        recovering, self.in_outage = self.in_outage, False
        fired = []
        for job in [*(self.after_outage if recovering else []), *self.jobs]:
            period = max(job.every.total_seconds(), 1.0)
            slot = int(moment // period)
            try:
                claimed = self.store.set_if_absent(f"clock:{job.name}:{slot}", "1",
                                                   timedelta(seconds=period * 2))
            except StoreUnavailable:
                # The other jobs' claims would fail alike: one line a tick, not one per job
                # (ticks come every OUTAGE_TICK during an outage).
                log.warning("clock store unavailable; skipping this tick", extra={"job": job.name})
                metrics.CLOCK_TICKS_FAILED.inc()
                self.in_outage = True
                break
            if claimed:
                try:
                    job.actor.send()
                except Exception:
                    self.in_outage = True
                    raise
                # One line per job sent, naming the slot: an operator sees the clock is alive,
                # and that with two clocks running each slot is still sent once.
                log.log(self.sent_level, "job sent", extra={"job": job.name, "slot": slot})
                metrics.CLOCK_JOBS_SENT.labels(job.name).inc()
                fired.append(job.name)
        return fired

    def run_forever(self, stop: threading.Event) -> None:
        """Tick until `stop` is set."""
        log.info("clock started with %d periodic jobs", len(self.jobs),
                 extra={"jobs": [job.name for job in self.jobs]})
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:
                # A broker hiccup must not end the clock; the next tick tries again.
                log.exception("clock tick failed")
                metrics.CLOCK_TICKS_FAILED.inc()
            stop.wait(min(self.tick, OUTAGE_TICK).total_seconds() if self.in_outage
                      else self.tick.total_seconds())
