"""Analytics rollups run as the clock's job runs them: every batch committed."""

import uuid
from datetime import date, datetime

from sqlalchemy.orm import Session

from models.analytics.rollups import roll_up_batches


def roll_up(session: Session, now: datetime, org_id: uuid.UUID | None = None,
            since: date | None = None) -> dict[uuid.UUID, int]:
    """Roll up as the job does, committing each batch; the days recomputed per org."""
    done: dict[uuid.UUID, int] = {}
    for each, days in roll_up_batches(session, now, org_id, since):
        session.commit()
        done[each] = done.get(each, 0) + days
    return done
