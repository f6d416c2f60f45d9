"""burnbox.metrics: the listener of processes without an HTTP server (answers loopback and
private peers, refuses public ones), merged multiprocess files with dead processes' live gauges
dropped, the process group's own folder, and the example alert file."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading

import pytest
import requests
import yaml

from burnbox import metrics
from burnbox.metrics_files import MULTIPROC_ENV, use_own_multiprocess_dir
from tests.metrics_scrape import parse, value
from tests.processes import ROOT

ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"


@pytest.fixture
def listener():
    running = metrics.MetricsListener("127.0.0.1", 0, "/metrics").start()
    yield running
    running.stop()


def test_the_listener_serves_the_process_metrics_to_loopback(listener):
    metrics.CLOCK_JOBS_SENT.labels("cleanup").inc()
    host, port = listener.address
    response = requests.get(f"http://{host}:{port}/metrics", timeout=5)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    assert value(parse(response.text), "burnbox_clock_jobs_sent_total", job="cleanup") >= 1
    other = requests.get(f"http://{host}:{port}/other", timeout=5)
    assert other.status_code == 404 and other.json()["code"] == "not_found"


@pytest.mark.parametrize("peer", ["8.8.8.8", "2a00:1450::1", "0.0.0.0", "100.64.0.1"])
def test_the_listener_refuses_a_public_or_unknown_peer(listener, peer):
    # The handler answers over a real socket; only the peer address it is told is public
    # (no test can connect from a public address).
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        handled = threading.Thread(target=metrics._ScrapeHandler,
                                   args=(theirs, (peer, 40000), listener.server))
        handled.start()
        handled.join(5)
        theirs.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := ours.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 403")
    assert b"burnbox_" not in body
    assert body == metrics.FORBIDDEN_BODY


def test_a_listener_is_started_only_when_metrics_are_enabled_and_a_port_is_set(settings):
    assert metrics.start_listener(settings, 0) is None
    assert metrics.start_listener(settings.replace(**{"metrics.enabled": True}), 0) is None
    assert metrics.start_listener(settings, 9999) is None  # metrics.enabled is off


def test_a_port_in_use_is_logged_and_the_process_runs_on(settings, listener, caplog):
    enabled = settings.replace(**{"metrics.enabled": True})
    assert metrics.start_listener(enabled, listener.address[1]) is None
    assert "metrics listener could not start" in caplog.text


_CHILD = """
import sys, time
from burnbox import metrics
metrics.SMTP_SESSIONS_OPEN.inc()
metrics.SMTP_MESSAGES_ACCEPTED.inc()
print("ready", flush=True)
if sys.argv[1] == "stay":
    time.sleep(60)
"""


def _child(folder, mode):
    env = {**os.environ, MULTIPROC_ENV: str(folder), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-c", _CHILD, mode], env=env,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


def test_merged_files_drop_the_live_gauges_of_dead_processes_and_keep_their_counts(
        tmp_path, monkeypatch):
    staying = _child(tmp_path, "stay")
    gone = _child(tmp_path, "exit")
    try:
        gone.wait(10)
        monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
        samples = parse(metrics.generate_latest(metrics.registry()).decode())
        # The dead process's open session no longer counts; what it accepted still does.
        assert value(samples, "burnbox_smtp_sessions_open") == 1
        assert value(samples, "burnbox_smtp_messages_accepted_total") == 2
    finally:
        staying.kill()
        staying.wait()
    samples = parse(metrics.generate_latest(metrics.registry()).decode())
    assert value(samples, "burnbox_smtp_sessions_open") == 0


def test_a_process_group_gets_a_folder_of_its_own_inside_the_configured_one(tmp_path):
    script = ("import os\nfrom burnbox.metrics_files import use_own_multiprocess_dir\n"
              "print(use_own_multiprocess_dir())\nprint(os.path.isdir(os.environ["
              f"{MULTIPROC_ENV!r}]))\n")
    env = {**os.environ, MULTIPROC_ENV: str(tmp_path), "PYTHONPATH": str(ROOT)}
    lines = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split()
    folder, existed = lines
    assert os.path.dirname(folder) == str(tmp_path) and existed == "True"
    assert not os.path.exists(folder)  # removed when its process exited
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_the_folder_cannot_be_chosen_once_prometheus_client_is_imported():
    with pytest.raises(RuntimeError, match="before prometheus_client"):
        use_own_multiprocess_dir()


def _rules():
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"]
            for rule in group["rules"]]


def test_the_example_alerts_name_only_metrics_that_exist():
    families = {name for name in dir(metrics) if name.isupper()}
    known = {getattr(metrics, name)._name for name in families
             if hasattr(getattr(metrics, name), "_name")}
    for rule in _rules():
        for word in re.findall(r"burnbox_\w+", rule["expr"]):
            base = word.removesuffix("_bucket").removesuffix("_total")
            assert base in known, (rule["alert"], word)
    assert {rule["alert"] for rule in _rules()} >= {
        "BurnboxOutboxBehind", "BurnboxWebhookDeliveryLagHigh", "BurnboxSmtpNotStoring",
        "BurnboxNotReady"}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_alerts_and_their_unit_tests():
    folder = ALERTS.parent
    subprocess.run(["promtool", "check", "rules", str(ALERTS)], check=True, capture_output=True)
    subprocess.run(["promtool", "test", "rules", "alerts_test.yml"], cwd=folder, check=True,
                   capture_output=True)
