"""Without a browser the UI tests skip, except under CI=true, where the skip fails the run."""

import subprocess
import sys

from tests.processes import ROOT, process_env

TARGET = "tests/ui/test_flows.py::test_a_wrong_password_shows_the_envelope_message"


def _run(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TARGET], cwd=ROOT,
        env=process_env(BURNBOX_TEST_CHROMIUM="/nonexistent/chromium", **env),
        capture_output=True, text=True, timeout=120)


def test_without_a_browser_the_tests_skip_with_the_reason():
    result = _run(CI="false")
    assert result.returncode == 0, result.stdout
    assert "1 skipped" in result.stdout


def test_under_ci_a_skipped_browser_test_fails_the_run():
    result = _run(CI="true")
    assert result.returncode == 1, result.stdout
    assert "browser test skipped under CI=true" in result.stdout
    assert "/nonexistent/chromium is missing" in result.stdout
