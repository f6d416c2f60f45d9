"""`burnbox worker` writes each log line once, in Burnbox's format: Dramatiq's own
logging.basicConfig handler, next to ours, used to print every line a second time as text."""

import json
import os
import signal
import subprocess
import time

import pytest

from burnbox.kv import RedisStore, StoreUnavailable
from tests.conftest import TEST_REDIS_URL
from tests.processes import BIN, ROOT, process_env

pytestmark = pytest.mark.slow

READY = "Worker process is ready for action."
STOPPED = "Worker has been shut down."


def test_the_worker_process_logs_each_line_once_as_json(tmp_path):
    redis_url = TEST_REDIS_URL
    try:
        RedisStore(redis_url).ping()
    except StoreUnavailable:
        pytest.skip("no Redis reachable for the worker process")
    output = tmp_path / "worker.log"
    env = process_env(BURNBOX_DATA_DIR=str(tmp_path), BURNBOX_REDIS__URL=redis_url)
    env["BURNBOX_LOG__FORMAT"] = "json"
    with output.open("wb") as sink:
        worker = subprocess.Popen([str(BIN / "burnbox"), "worker", "--processes", "1"], cwd=ROOT,
                                  env=env, start_new_session=True, stdout=sink,
                                  stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while READY not in output.read_text():
            assert worker.poll() is None, output.read_text()
            assert time.monotonic() < deadline, output.read_text()
            time.sleep(0.1)
    finally:
        # The supervisor alone: it passes SIGTERM on (a second one makes a worker quit hard).
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        finally:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
    text = output.read_text()
    lines = [json.loads(line) for line in text.splitlines()]  # every line is JSON
    messages = [line["message"] for line in lines]
    assert messages.count(READY) == 1, text
    # One per pool in the worker process: the general queues', the delivery queue's and the
    # authentication queue's.
    assert messages.count(STOPPED) == 3, text
    # The supervisor's own lines go through the same handler.
    assert any(line["logger"] == "dramatiq.MainProcess" for line in lines), text
