"""The retry-path example of docs/testing-with-burnbox.md, run as written with the pytest
plugin against `burnbox serve`: a greylisting rule is retried through and the mail stored
once; a permanent refusal is not retried."""

import re
from pathlib import Path

import pytest

from tests.clients.conftest import API_KEY, Service

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = re.compile(r"^```python chaos:example\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_docs_retry_path_example_passes(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch, service: Service):
    [example] = EXAMPLE.findall((ROOT / "docs" / "testing-with-burnbox.md")
                                .read_text(encoding="utf-8"))
    pytester.makepyfile(test_retry=example)
    monkeypatch.setenv("BURNBOX_URL", service.url)
    monkeypatch.setenv("BURNBOX_API_KEY", API_KEY)
    monkeypatch.setenv("BURNBOX_SMTP", f"127.0.0.1:{service.smtp_port}")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
