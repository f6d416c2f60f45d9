"""The store process (`burnbox mailin`): messages handed to it are stored and answered with their
e-mail ids; a message it cannot store gets the error; when it dies, what waits on it fails (451,
never a 250) and another one starts, again and again if it cannot start, but none once closing;
when its SMTP process stops or is killed, it stores what it received and exits."""

import asyncio
import dataclasses
import os
import signal
import smtplib
import subprocess
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from mailin.store_process import StoreFailed, StoreProcess, StoreProcessGone
from models.mail.entities import Email
from models.mail.ingest.store import accept_message
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.metrics_scrape import counted
from tests.processes import BIN, ROOT, children, free_port, mailin_env, wait_for_port, wait_until


def _settings(runtime, objects=None):
    """The runtime's settings, storing objects where the runtime reads them (or in `objects`)."""
    root = str(objects or runtime.storage.root)
    return dataclasses.replace(runtime.settings,
                               storage=dataclasses.replace(runtime.settings.storage, path=root))


def _accepted(inbox):
    return accept_message(message(inbox.full_address), mail_from="a@sender.example",
                          recipients=[inbox.full_address])


def test_messages_are_stored_and_answered_with_their_email_ids(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inboxes = [make_inbox(session, committed_runtime.settings, world) for _ in range(3)]
    messages = [_accepted(inbox) for inbox in inboxes * 4]

    async def main():
        store = await StoreProcess(_settings(committed_runtime)).start()
        try:
            return store, await asyncio.gather(*(store.commit(m) for m in messages))
        finally:
            await store.close()

    store, results = asyncio.run(main())
    assert all(len(ids) == 1 for ids in results)
    assert store.process is not None and store.process.returncode == 0  # close waited for it
    with committed_runtime.db.session() as session:
        for sent, [email_id] in zip(messages, results, strict=True):
            email = session.get(Email, email_id)
            assert email.message_id == sent.parsed.message_id
            assert committed_runtime.storage.get(email.raw_key) == sent.raw


def test_a_message_reaches_the_store_process_whole(committed_runtime):
    # The frame carries the time received as microseconds since the epoch: a lost microsecond
    # or time zone would show in the stored e-mail's time, a lost field in its other columns.
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)
    raw = message(inbox.full_address, subject="Your code is 482913", html="<p>Hi</p>",
                  attachments=(("report.pdf", "application/pdf", b"%PDF-1.4 report"),))
    sent = accept_message(raw, mail_from="a@sender.example", recipients=[inbox.full_address])
    sent = dataclasses.replace(sent, received_at=datetime(2026, 11, 28, 6, 1, 2, 345678,
                                                          tzinfo=timezone(timedelta(hours=2))))

    async def main():
        store = await StoreProcess(_settings(committed_runtime)).start()
        try:
            return await store.commit(sent)
        finally:
            await store.close()

    [email_id] = asyncio.run(main())
    with committed_runtime.db.session() as session:
        email = session.get(Email, email_id)
        assert email.received_at == sent.received_at
        assert email.received_at.astimezone(UTC).microsecond == 345678
        assert (email.subject, email.codes, email.body_html) == (
            sent.parsed.subject, ["482913"], sent.parsed.body_html)
        assert email.raw_key == sent.keys[0] and email.size_bytes == len(raw)
        [attachment] = email.attachments
        assert (attachment.filename, attachment.storage_key) == ("report.pdf", sent.keys[1])
        assert committed_runtime.storage.get(attachment.storage_key) == b"%PDF-1.4 report"


def test_a_message_the_store_process_cannot_store_gets_its_error(committed_runtime, tmp_path):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)
    objects = tmp_path / "broken"
    objects.mkdir()
    (objects / "mail").write_text("a file where the objects' folder should be")

    async def main():
        store = await StoreProcess(_settings(committed_runtime, objects)).start()
        try:
            with pytest.raises(StoreFailed, match="mail"):
                await store.commit(_accepted(inbox))
            assert store.process.poll() is None  # still serving
        finally:
            await store.close()

    asyncio.run(main())
    with committed_runtime.db.session() as session:
        assert session.scalars(select(Email)).all() == []


def test_when_the_store_process_dies_what_waits_fails_and_another_starts(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)
    restarts = counted("burnbox_smtp_store_process_restarts_total")

    async def main():
        store = await StoreProcess(_settings(committed_runtime)).start()
        try:
            first = store.process
            os.kill(first.pid, signal.SIGSTOP)  # it cannot answer before it is killed
            waiting = asyncio.create_task(store.commit(_accepted(inbox)))
            await asyncio.sleep(0.2)
            first.kill()
            with pytest.raises(StoreProcessGone):
                await waiting
            with pytest.raises(StoreProcessGone):
                await store.commit(_accepted(inbox))  # none running: refused at once
            await asyncio.to_thread(wait_until, lambda: store.process is not first)
            return await store.commit(_accepted(inbox))
        finally:
            await store.close()

    [email_id] = asyncio.run(main())
    with committed_runtime.db.session() as session:
        assert [email.id for email in session.scalars(select(Email))] == [email_id]
    assert counted("burnbox_smtp_store_process_restarts_total") == restarts + 1


def test_closing_while_a_store_process_is_due_to_start_starts_none(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)

    async def main():
        store = await StoreProcess(_settings(committed_runtime)).start()
        first = store.process
        first.kill()
        await asyncio.to_thread(first.wait)
        while store._writer is not None:  # until it has noticed
            await asyncio.sleep(0.01)
        started = time.monotonic()
        await store.close()  # during the pause before the next one
        assert time.monotonic() - started < 1.0
        assert store.process is first
        with pytest.raises(StoreProcessGone):
            await store.commit(_accepted(inbox))

    asyncio.run(main())


def test_a_store_process_that_cannot_start_is_retried_and_sessions_get_451(committed_runtime,
                                                                           caplog):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world)
    settings = committed_runtime.settings
    broken = dataclasses.replace(settings, storage=dataclasses.replace(
        settings.storage, backend="s3", s3_bucket=""))  # the store process stops at start

    async def main():
        store = await StoreProcess(broken).start()
        try:
            first = store.process
            with pytest.raises(StoreProcessGone):
                await store.commit(_accepted(inbox))
            await asyncio.to_thread(wait_until, lambda: store.process is not first)
        finally:
            await store.close()
        assert store.process.poll() is not None

    asyncio.run(main())
    assert "the store process exited; starting another" in caplog.text


def _mailin(runtime, port):
    return subprocess.Popen([str(BIN / "burnbox"), "mailin", "--processes", "1"], cwd=ROOT,
                            env=mailin_env(runtime, port), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _store_process_of(pid):
    [child] = children(pid)
    return child


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie is gone too: it has exited and waits for its (dead) parent's reaping.
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_the_store_process_exits_with_its_smtp_process(committed_runtime, how):
    """SIGTERM to the process group (a process manager) stops both cleanly; SIGKILL to the
    SMTP process alone leaves the store process to finish and exit by itself."""
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        address = make_inbox(session, committed_runtime.settings, world).full_address
    port = free_port()
    process = _mailin(committed_runtime, port)
    try:
        wait_for_port(port)
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
            smtp.sendmail("a@sender.example", [address], message(address))
        store = _store_process_of(process.pid)
        if how == signal.SIGTERM:
            os.killpg(process.pid, signal.SIGTERM)
        else:
            os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == (0 if how == signal.SIGTERM else -signal.SIGKILL)
        wait_until(lambda: _gone(store))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    with committed_runtime.db.session() as session:
        assert len(session.scalars(select(Email)).all()) == 1
