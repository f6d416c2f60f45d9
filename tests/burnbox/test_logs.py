"""Log lines: JSON for machines, short sentences on a terminal, `log.format` choosing."""

import json
import logging
import os
import pty
import subprocess
import sys

import pytest
from aiosmtpd.smtp import Session

from burnbox.logs import access_log_level, configure_logging
from burnbox.settings import load_settings
from tests.processes import process_env

LOG_ONE_LINE = ("import logging; from burnbox.logs import configure_logging; "
                "from burnbox.settings import load_settings; "
                "configure_logging(load_settings()); logging.getLogger('burnbox').info('hello')")


def _line(log_format: str | None, terminal: bool) -> str:
    env = process_env()
    del env["BURNBOX_LOG__FORMAT"]
    if log_format:
        env["BURNBOX_LOG__FORMAT"] = log_format
    if not terminal:
        return subprocess.run([sys.executable, "-c", LOG_ONE_LINE], env=env, check=True,
                              capture_output=True, text=True, timeout=60).stderr.strip()
    controller, follower = pty.openpty()
    subprocess.run([sys.executable, "-c", LOG_ONE_LINE], env=env, check=True,
                   stderr=follower, timeout=60)
    os.close(follower)
    try:
        return os.read(controller, 65536).decode().strip()
    finally:
        os.close(controller)


def test_by_default_a_terminal_gets_a_sentence_and_anything_else_json():
    assert _line(None, terminal=True).endswith(" hello")
    assert not _line(None, terminal=True).startswith("{")
    assert json.loads(_line(None, terminal=False))["message"] == "hello"


@pytest.mark.parametrize("terminal", [True, False])
def test_log_format_still_chooses_whatever_the_output(terminal):
    assert json.loads(_line("json", terminal))["message"] == "hello"
    assert _line("text", terminal).endswith(" hello")


@pytest.mark.parametrize(("access", "log_format", "level"), [
    ("auto", "json", logging.INFO), ("auto", "text", logging.DEBUG),
    ("on", "text", logging.INFO), ("off", "json", logging.DEBUG),
])
def test_request_lines_are_info_for_machines_and_debug_on_a_persons_terminal(
        access, log_format, level):
    settings = load_settings(environ={}, overrides={"log.access": access,
                                                    "log.format": log_format})
    assert access_log_level(settings) == level


def test_aiosmtpds_warning_about_its_own_login_data_reaches_no_one(caplog):
    configure_logging(load_settings(environ={}, overrides={"log.format": "text"}))
    with caplog.at_level(logging.INFO):
        Session(loop=None).login_data = "someone"  # what aiosmtpd does at every SMTP AUTH
        logging.getLogger("mail.log").warning("another warning")
    assert [record.getMessage() for record in caplog.records] == ["another warning"]
