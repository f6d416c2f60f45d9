"""Acknowledged means stored: a real `burnbox mailin` process is killed with SIGKILL in the
middle of a load from several sender threads, and every message that got its 250 is in the
database afterwards (the sender forgets a message once it has its 250)."""

import os
import signal
import smtplib
import subprocess
import threading
import time
import uuid

from sqlalchemy import select

from models.mail.entities import Email
from tests.factories.mail import make_inbox, make_mail_world, message
from tests.processes import BIN, ROOT, free_port, mailin_env, wait_for_port

SENDERS = 6


def _mailin(runtime, port):
    return subprocess.Popen([str(BIN / "burnbox"), "mailin", "--processes", "1"], cwd=ROOT,
                            env=mailin_env(runtime, port), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _send_until_refused(port, addresses, acknowledged, lock, stop):
    """Send messages with unique Message-IDs until the server goes away; note each one that
    got its 250."""
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp:
            n = 0
            while not stop.is_set():
                to = addresses[n % len(addresses)]
                message_id = f"<{uuid.uuid4().hex}@load.example>"
                smtp.sendmail("load@sender.example", [to], message(to, message_id=message_id))
                with lock:
                    acknowledged.append(message_id)
                n += 1
    except (OSError, smtplib.SMTPException):
        return  # killed mid-conversation: whatever was in flight got no 250


def test_every_message_acknowledged_before_a_sigkill_is_in_the_database(committed_runtime):
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        addresses = [make_inbox(session, committed_runtime.settings, world).full_address
                     for _ in range(4)]
    port = free_port()
    process = _mailin(committed_runtime, port)
    try:
        wait_for_port(port)
        acknowledged, lock, stop = [], threading.Lock(), threading.Event()
        senders = [threading.Thread(target=_send_until_refused,
                                    args=(port, addresses, acknowledged, lock, stop))
                   for _ in range(SENDERS)]
        for sender in senders:
            sender.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)  # in the middle of the load
        process.wait(timeout=10)
        stop.set()
        for sender in senders:
            sender.join(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL, process.stderr.read().decode()[-2000:]
    assert len(acknowledged) >= 60, "the load never got going"
    with committed_runtime.db.session() as session:
        stored = set(session.scalars(select(Email.message_id)))
    missing = [message_id for message_id in acknowledged if message_id not in stored]
    assert missing == [], f"{len(missing)} of {len(acknowledged)} acknowledged messages lost"
