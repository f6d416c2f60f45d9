"""The pytest plugin (entry point `pytest11`, loaded once burnbox-client is installed).

Fixtures:
- `burnbox`: a `Burnbox` client for the whole session, configured by the environment variables
  BURNBOX_URL (or BURNBOX_API), BURNBOX_API_KEY and BURNBOX_DOMAIN, or else the ini options
  `burnbox_url`, `burnbox_api_key` and `burnbox_domain`;
- `burnbox_inbox`: a fresh inbox for each test, deleted after it.

Only a test that asks for one of them needs Burnbox: the plugin does nothing otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from burnbox_client.client import Burnbox, BurnboxError
from burnbox_client.models import Inbox

# (ini option, environment variables that override it, first found wins, help)
OPTIONS = (
    ("burnbox_url", ("BURNBOX_URL", "BURNBOX_API"), "Burnbox's base URL"),
    ("burnbox_api_key", ("BURNBOX_API_KEY",), "a team API key of Burnbox"),
    ("burnbox_domain", ("BURNBOX_DOMAIN",),
     "the domain of new inboxes (optional when the key's team has one)"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, variables, help_text in OPTIONS:
        parser.addini(name, f"{help_text}; the environment's {' or '.join(variables)} wins",
                      default="")


def _setting(config: pytest.Config, name: str, variables: tuple[str, ...]) -> str:
    for variable in variables:
        if os.environ.get(variable):
            return os.environ[variable]
    return str(config.getini(name))


@pytest.fixture(scope="session")
def burnbox(pytestconfig: pytest.Config) -> Iterator[Burnbox]:
    """A Burnbox client configured from the environment or the ini file."""
    url, api_key, domain = (_setting(pytestconfig, name, variables)
                            for name, variables, _ in OPTIONS)
    if not url or not api_key:
        pytest.fail("burnbox: set BURNBOX_URL and BURNBOX_API_KEY (or the ini options "
                    "burnbox_url and burnbox_api_key)", pytrace=False)
    client = Burnbox(url, api_key, domain=domain or None)
    yield client
    client.close()


@pytest.fixture
def burnbox_inbox(burnbox: Burnbox) -> Iterator[Inbox]:
    """A new inbox for this test, deleted when it ends."""
    inbox = burnbox.inboxes.create()
    yield inbox
    try:
        inbox.delete()
    except BurnboxError as exc:
        if exc.status != 404:  # the test deleted it itself
            raise
