"""The send-first example of docs/testing-with-burnbox.md, run as written with the pytest
plugin against `burnbox serve` whose domain's assignment was made catch-all through the API:
the first message to an address without an inbox creates it, and a wait by that address
answers."""

import pytest
from burnbox_client import Burnbox

from tests.clients.conftest import DOMAIN, Service, run_guide_example

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow


def _catch_all(client: Burnbox, on: bool) -> None:
    [mine] = client.request("GET", "/my/domains")["data"]
    client.request("PATCH", f"/orgs/{mine['org_id']}/teams/{mine['team_id']}/domains/"
                            f"{mine['domain_id']}", json={"catch_all": on})


def test_the_docs_send_first_example_passes(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch, service: Service,
                                            client: Burnbox):
    _catch_all(client, True)
    try:
        result = run_guide_example(pytester, monkeypatch, service, "catchall",
                                   BURNBOX_DOMAIN=DOMAIN)
    finally:
        _catch_all(client, False)
    result.assert_outcomes(passed=1)
