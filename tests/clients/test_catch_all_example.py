"""The send-first example of docs/testing-with-burnbox.md, run as written with the pytest
plugin against `burnbox serve` whose domain's assignment was made catch-all through the API:
the first message to an address without an inbox creates it, and a wait by that address
answers."""

import re
from pathlib import Path

import pytest
from burnbox_client import Burnbox

from tests.clients.conftest import API_KEY, DOMAIN, Service

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = re.compile(r"^```python catchall:example\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _catch_all(client: Burnbox, on: bool) -> None:
    [mine] = client.request("GET", "/my/domains")["data"]
    client.request("PATCH", f"/orgs/{mine['org_id']}/teams/{mine['team_id']}/domains/"
                            f"{mine['domain_id']}", json={"catch_all": on})


def test_the_docs_send_first_example_passes(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch, service: Service,
                                            client: Burnbox):
    [example] = EXAMPLE.findall((ROOT / "docs" / "testing-with-burnbox.md")
                                .read_text(encoding="utf-8"))
    pytester.makepyfile(test_send_first=example)
    monkeypatch.setenv("BURNBOX_URL", service.url)
    monkeypatch.setenv("BURNBOX_API_KEY", API_KEY)
    monkeypatch.setenv("BURNBOX_DOMAIN", DOMAIN)
    monkeypatch.setenv("BURNBOX_SMTP", f"127.0.0.1:{service.smtp_port}")
    _catch_all(client, True)
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    finally:
        _catch_all(client, False)
    result.assert_outcomes(passed=1)
