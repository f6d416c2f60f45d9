"""Analytics rollups: the clock's job (`clock.analytics_rollup_interval`) that rolls every
org's closed UTC days of the hourly counters up into the daily rollups
(`models.analytics.rollups`). Each day is recomputed and replaced, never added to, so a message
delivered twice, or two clocks' jobs running together, leave the same rows."""

from __future__ import annotations

import logging
import uuid
from datetime import date, datetime

from sqlalchemy.orm import Session

from burnbox.timeutil import utcnow
from models.analytics.rollups import roll_up_batches
from tasks.broker import actor, commit_step, session

log = logging.getLogger(__name__)


@actor(queue_name="clock", max_retries=0,
       commits_in_steps="each batch of days is committed before the model yields the next")
def roll_up_analytics() -> None:
    """Roll up the closed days of every org, committing each batch the model yields; a failure
    propagates, and the next period starts again where the marks say."""
    done = roll_up_committing(session(), utcnow())
    days = sum(done.values())
    if days:
        log.info("analytics rolled up", extra={"orgs": sum(1 for n in done.values() if n),
                                               "days": days})


def roll_up_committing(session: Session, now: datetime, org_id: uuid.UUID | None = None,
                       since: date | None = None) -> dict[uuid.UUID, int]:
    """Roll up as `roll_up_batches` says, committing `session` at each batch it yields (the
    one rule of its callers: commit before asking for the next batch); the days recomputed per
    org. The job, the CLI's backfill and the benchmark run it."""
    done: dict[uuid.UUID, int] = {}
    for each, days in roll_up_batches(session, now, org_id, since):
        commit_step(session)
        done[each] = done.get(each, 0) + days
    return done
