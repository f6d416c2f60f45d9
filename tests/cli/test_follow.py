"""`burnbox inboxes follow`, run as its own process: mail delivered over SMTP meanwhile is
printed as it arrives (read from the database on the embedded default, from Redis pub/sub when
Redis is configured)."""

import json
import smtplib
import subprocess

import dramatiq
import pytest

from mailin.server import MailinThread
from tasks import start_worker
from tests.cli.conftest import cli_env
from tests.factories.mail import message
from tests.processes import BIN, ROOT, process_env


@pytest.fixture
def delivering(committed_runtime, inbox_address):
    """The SMTP server and two worker threads (the fan-out that publishes to Redis)."""
    server = MailinThread(committed_runtime, host="127.0.0.1", port=0).start_and_wait()
    worker = start_worker(dramatiq.get_broker(), threads=2)
    yield server.address
    worker.stop()
    server.stop()


def _follow(runtime, *args):
    return subprocess.Popen([str(BIN / "burnbox"), "inboxes", "follow", *args], cwd=ROOT,
                            env={**process_env(), **cli_env(runtime)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_follow_prints_each_new_email_as_it_arrives(committed_runtime, inbox_address,
                                                    delivering):
    follower = _follow(committed_runtime, inbox_address, "--json", "--count", "2",
                       "--timeout", "60", "--interval", "0.2")
    try:
        announced = follower.stderr.readline()
        redis = committed_runtime.settings.redis.url
        how = "live, from Redis" if redis else "reading the database"
        assert announced.startswith(f"following {inbox_address} ({how}"), announced
        for subject in ("First", "Second"):
            with smtplib.SMTP(*delivering, timeout=10) as smtp:
                smtp.sendmail("shop@sender.example", [inbox_address],
                              message(inbox_address, subject=subject))
            line = json.loads(follower.stdout.readline())
            assert (line["subject"], line["to_address"]) == (subject, inbox_address)
            assert set(line) == {"id", "inbox_id", "message_id", "from_address", "to_address",
                                 "subject", "snippet", "has_attachments", "is_read",
                                 "size_bytes", "received_at"}
        assert follower.wait(timeout=20) == 0
    finally:
        follower.kill()
        follower.communicate()


def test_follow_gives_up_at_its_timeout_with_one_line(committed_runtime, inbox_address):
    follower = _follow(committed_runtime, inbox_address, "--timeout", "1", "--interval", "0.2")
    _out, err = follower.communicate(timeout=30)
    assert follower.returncode == 1
    assert err.splitlines()[-1] == (
        f"Error: no more e-mail to {inbox_address} within 1s (0 received)")
    assert "Traceback" not in err
