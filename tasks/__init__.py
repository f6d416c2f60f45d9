"""Background work: the broker set-up, one module per side effect, and the clock.

Importing this package declares every actor (on a placeholder broker; nothing connects).
`setup_broker(runtime)` (`tasks.wiring`) binds them to the real broker and wires the process's
hand-offs. The worker process runs
`dramatiq tasks.boot`, whose import does that set-up from the environment.
"""

from tasks import (
    analytics,
    apikeys,
    authentication,
    checksums,
    cleanup,
    clock,
    dns,
    events,
    exports,
    mail,
    notifications,
    publishers,
    release,
    spam_engine,
    thumbnails,
    webhook_manual,
    webhooks,
)
from tasks.wiring import setup_broker, start_worker

__all__ = ["analytics", "apikeys", "authentication", "checksums", "cleanup", "clock", "dns",
           "events", "exports", "mail", "notifications", "publishers", "release",
           "setup_broker", "spam_engine", "start_worker", "thumbnails", "webhook_manual",
           "webhooks"]
