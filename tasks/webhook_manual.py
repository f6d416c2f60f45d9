"""The attempts a team asks for by hand (`models.delivery.redelivery`): a redelivery or a ping.

One attempt each, on the delivery queue like every other attempt: claimed with the same lease
(so it never runs beside another attempt of its delivery), sent by the same code, then logged
and finished without a retry.
"""

from __future__ import annotations

import uuid

from models.delivery import redelivery, webhooks
from tasks.broker import actor, commit_step, runtime, session
from tasks.webhooks import attempt_lease, send_attempt


@actor(queue_name="webhooks", max_retries=0,
       commits_in_steps="the lease is committed before any byte goes out")
def send_requested_attempt(delivery_id: str, attempt: int) -> None:
    """Make attempt `attempt` of a redelivered or ping delivery and log it (committed when the
    actor returns); a no-op when it was already made or another worker holds the delivery."""
    settings, db = runtime().settings, session()
    claimed = webhooks.claim_attempts(db, [uuid.UUID(delivery_id)], attempt,
                                      lease=attempt_lease(settings, 1))
    commit_step(db)
    made = [(claim, send_attempt(claim, settings)) for claim in claimed]
    for claim, outcome in made:
        redelivery.record_single_attempt(db, claim, outcome)
