"""The capture example of docs/testing-with-burnbox.md, run as written with the pytest plugin
against `burnbox serve`: an application's mailer logs in with an inbox's SMTP credentials and
mails two outside addresses; the inbox holds one copy with both envelope recipients."""

import pytest

from tests.clients.conftest import Service, run_guide_example

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow


def test_the_docs_capture_example_passes(pytester: pytest.Pytester,
                                         monkeypatch: pytest.MonkeyPatch, service: Service):
    result = run_guide_example(pytester, monkeypatch, service, "capture")
    result.assert_outcomes(passed=1)
