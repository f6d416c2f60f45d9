"""The seeding example of docs/testing-with-burnbox.md, run as written with the pytest plugin
against `burnbox serve`: an e-mail put into the test's inbox over HTTP is read with its code
and found by a wait, as mail received over SMTP is."""

import pytest

from tests.clients.conftest import Service, run_guide_example

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow


def test_the_docs_seeding_example_passes(pytester: pytest.Pytester,
                                         monkeypatch: pytest.MonkeyPatch, service: Service):
    result = run_guide_example(pytester, monkeypatch, service, "seed")
    result.assert_outcomes(passed=1)
