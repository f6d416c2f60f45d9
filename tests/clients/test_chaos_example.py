"""The retry-path example of docs/testing-with-burnbox.md, run as written with the pytest
plugin against `burnbox serve`: a greylisting rule is retried through and the mail stored
once; a permanent refusal is not retried."""

import pytest

from tests.clients.conftest import Service, run_guide_example

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow


def test_the_docs_retry_path_example_passes(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch, service: Service):
    result = run_guide_example(pytester, monkeypatch, service, "chaos")
    result.assert_outcomes(passed=2)
