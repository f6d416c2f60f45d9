"""Analytics rollups: the clock's job (`clock.analytics_rollup_interval`) that rolls every
org's closed UTC days of the hourly counters up into the daily rollups
(`models.analytics.rollups`). Each day is recomputed and replaced, never added to, so a message
delivered twice, or two clocks' jobs running together, leave the same rows."""

from __future__ import annotations

import logging

from burnbox.timeutil import utcnow
from models.analytics.rollups import roll_up
from tasks.broker import actor, session

log = logging.getLogger(__name__)


@actor(queue_name="clock", max_retries=0)
def roll_up_analytics() -> None:
    """Roll up the closed days of every org (committed in batches by the model); a failure
    propagates, and the next period starts again where the marks say."""
    done = roll_up(session(), utcnow())
    days = sum(done.values())
    if days:
        log.info("analytics rolled up", extra={"orgs": sum(1 for n in done.values() if n),
                                               "days": days})
