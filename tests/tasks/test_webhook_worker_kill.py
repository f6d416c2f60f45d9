"""A worker process killed in the middle of a delivery loses nothing: a real `dramatiq tasks.boot`
on Redis is SIGKILLed while the receiver holds its request; after the lease runs out the sweep
hands the attempt to a new worker and the receiver gets the same delivery again."""

import os
import signal
import subprocess
import time

import pytest
from sqlalchemy import select

from models.delivery.webhooks import DeliveryLogEntry, WebhookDelivery
from tasks.webhooks import sweep_webhook_deliveries
from tests.factories.delivery import make_event, make_webhook
from tests.factories.tenancy import make_owned_team
from tests.processes import BIN, ROOT, process_env
from tests.receiver import Answer
from tests.tasks.conftest import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _worker(settings):
    env = process_env(
        BURNBOX_DATABASE__URL=settings.database.url, BURNBOX_REDIS__URL=settings.redis.url,
        BURNBOX_WEBHOOKS__ALLOW_PRIVATE_TARGETS="true", BURNBOX_DEFAULTS__WEBHOOK_TIMEOUT="2s",
        BURNBOX_WEBHOOKS__LEASE_GRACE="1s", BURNBOX_AUTH__JWT_SECRET="x" * 40)
    # A session of its own, so the kill reaches dramatiq's worker children too.
    return subprocess.Popen([str(BIN / "dramatiq"), "tasks.boot", "--processes", "1",
                             "--threads", "2"], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(process, sig=signal.SIGTERM):
    if process.poll() is None:
        os.killpg(process.pid, sig)
        process.wait(timeout=30)


def test_a_worker_killed_mid_delivery_does_not_lose_it(committed_runtime, receiver):
    with committed_runtime.db.transaction() as session:
        team = make_owned_team(session, committed_runtime.settings)
        hook = make_webhook(session, team, receiver.url)
    receiver.answer(Answer(200, hold=True))  # the first attempt hangs until released
    first = _worker(committed_runtime.settings)
    second = None
    try:
        with committed_runtime.db.transaction() as session:
            make_event(session, team)
        (held,) = receiver.wait_for(1, timeout=60)
        _stop(first, signal.SIGKILL)
        receiver.released.set()

        second = _worker(committed_runtime.settings)
        time.sleep(3.2)  # the lease: webhook_timeout 2 s + lease_grace 1 s
        sweep_webhook_deliveries.send()
        retried = receiver.wait_for(2, timeout=60)[1]
        with committed_runtime.db.session() as session:
            wait_until(lambda: session.scalar(
                select(WebhookDelivery.state).where(WebhookDelivery.webhook_id == hook.id)
                .execution_options(populate_existing=True)) == "succeeded", timeout=30)
            log = session.scalars(select(DeliveryLogEntry)
                                  .where(DeliveryLogEntry.webhook_id == hook.id)).all()
    finally:
        _stop(first, signal.SIGKILL)
        if second is not None:
            _stop(second)
    assert retried.headers["X-Service-Delivery-ID"] == held.headers["X-Service-Delivery-ID"]
    assert retried.body != held.body  # a new attempt: its own timestamp, its own signature
    assert [(entry.attempt, entry.success) for entry in log] == [(1, True)]
