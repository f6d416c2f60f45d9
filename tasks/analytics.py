"""Analytics rollups: the clock's job (`clock.analytics_rollup_interval`) that rolls every
org's closed UTC days of the hourly counters up into the daily rollups
(`models.analytics.rollups`). Each day is recomputed and replaced, never added to, so a message
delivered twice, or two clocks' jobs running together, leave the same rows."""

from __future__ import annotations

import logging

from burnbox.timeutil import utcnow
from models.analytics.rollups import roll_up_batches
from tasks.broker import actor, session

log = logging.getLogger(__name__)


@actor(queue_name="clock", max_retries=0)
def roll_up_analytics() -> None:
    """Roll up the closed days of every org, committing each batch the model yields; a failure
    propagates, and the next period starts again where the marks say."""
    orgs, days = set(), 0
    for org_id, batch in roll_up_batches(session(), utcnow()):
        session().commit()
        if batch:
            orgs.add(org_id)
            days += batch
    if days:
        log.info("analytics rolled up", extra={"orgs": len(orgs), "days": days})
