"""Group commit for one SMTP server: accepted messages are stored in batches by a single
thread: the objects of the whole batch written with one flush to disk, then one transaction.

Why: a flush and a commit each wait for the disk (milliseconds), and every statement is a round
trip. SMTP sessions that reach DATA at the same time would each pay for their own; instead the
committer takes every message that arrived while the previous batch was being stored and stores
them together (`models.mail.ingest.store.store_messages`), then answers each session. Under light
load a batch is one message and nothing waits; under heavy load batches grow and throughput with
them.

Each message's session is answered only once its batch has committed: acknowledged means stored.
What the commit hands on (`models.handoffs`) runs right after the answers, except the caches'
revisions, which move before them (`Database.holding_hand_offs`): the next batch then starts
once they are done, and a session never waits for Redis round trips it does not need.
When a batch fails, its objects are deleted and its messages retried one by one, so one message
that storage or the database refuses cannot take others down with it; a message that fails
alone gets the error (mailin answers 451) and keeps nothing. A session that went away while
waiting (its future cancelled) is skipped: it never got its 250, so the sender will try again.

With a single committing thread per process, SQLite (one writer at a time) never makes the
committer wait on itself, and PostgreSQL sees one ingest transaction per process at a time.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import uuid
from concurrent.futures import Future

from burnbox import metrics
from burnbox.outages import disk_full
from burnbox.storage import ObjectStorage
from models.db import Database
from models.mail.ingest.store import Accepted, store_messages
from models.runtime import Runtime

log = logging.getLogger(__name__)

Pending = tuple[Accepted, "Future[list[uuid.UUID]]"]


class Committer:
    """Stores accepted messages in batches of at most `max_batch` on its own thread; start it
    with `start()`, stop it with `stop()` (which first stores what is queued)."""

    def __init__(self, db: Database, storage: ObjectStorage, max_batch: int) -> None:
        self.db = db
        self.storage = storage
        self.max_batch = max(1, max_batch)
        self._queue: queue.SimpleQueue[Pending | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="mailin-commit", daemon=True)

    @classmethod
    def of(cls, runtime: Runtime) -> Committer:
        """The committer of a mailin process: batches of `smtp.commit_batch_size`. What each
        batch hands on (the webhook deliveries of its e-mails committed with them, their first
        attempts and the live push of the e-mails after the commit) is the process's hand-offs
        (`models.handoffs`, wired by `tasks.setup_broker`)."""
        return cls(runtime.db, runtime.storage, runtime.settings.smtp.commit_batch_size)

    def start(self) -> Committer:
        """Start the committing thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Store what is queued, then end the thread."""
        self._queue.put(None)
        self._thread.join()

    def submit(self, message: Accepted) -> Future[list[uuid.UUID]]:
        """Queue the message for the next batch; the future gets its new e-mail ids (empty: no
        recipient was live any more, and its objects are gone), or what made its transaction
        fail. Cancelling the future before its batch starts drops the message."""
        future: Future[list[uuid.UUID]] = Future()
        self._queue.put((message, future))
        return future

    async def commit(self, message: Accepted) -> list[uuid.UUID]:
        """Store the message with its batch (`submit`) and return its new e-mail ids; raise
        what made its transaction fail."""
        return await asyncio.wrap_future(self.submit(message))

    async def close(self) -> None:
        """`stop` without blocking the event loop."""
        await asyncio.to_thread(self.stop)

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stopping = False
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stopping = True
                    break
                batch.append(item)
            wanted = [item for item in batch if self._wanted(item)]
            if wanted:
                metrics.SMTP_COMMIT_BATCH.observe(len(wanted))
            # The sessions are answered first, the batch's hand-offs (events, first webhook
            # attempts, the live push) run after: they are Redis round trips that the 250
            # need not wait for. The caches' revisions still move before the answers.
            with self.db.holding_hand_offs() as held:
                self._store(wanted)
            self.db.hand_on(held)
            if stopping:
                return

    @staticmethod
    def _wanted(item: Pending) -> bool:
        """False for a message whose session went away while it waited (nothing was written
        for it yet)."""
        return item[1].set_running_or_notify_cancel()

    def _store(self, batch: list[Pending]) -> None:
        if not batch:
            return
        try:
            results = store_messages(self.db, self.storage, [message for message, _ in batch])
        except Exception as exc:
            if len(batch) > 1:
                # A full disk is said once by the SMTP server (mailin/full_disk.py), not here
                # for every batch; its messages are still tried alone: a small one may fit.
                if not disk_full(exc):
                    log.warning("a batch of mail failed to store; storing its messages one "
                                "by one", extra={"messages": len(batch)})
                for item in batch:
                    self._store([item])
                return
            batch[0][1].set_exception(exc)
            return
        for (_, future), email_ids in zip(batch, results, strict=True):
            future.set_result(email_ids)
