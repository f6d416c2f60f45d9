"""The tools' declarations against the API they call: every operation a tool is gated by is an
operation of the OpenAPI document, and the permissions derived from it are the ones the
document declares (so a tool's visibility can never drift from the route's own check)."""

import pytest

from mcp_server import tools

OPENAPI_PATH = "/api/v1/docs/openapi.json"


@pytest.fixture
def operations(client):
    document = client.get(OPENAPI_PATH).get_json()
    return {(verb.upper(), path): operation.get("x-required-permission")
            for path, item in document["paths"].items() for verb, operation in item.items()
            if isinstance(operation, dict)}


def test_every_gate_of_a_tool_or_resource_is_an_operation_of_the_api(operations):
    gates = [gate for spec in tools.TOOLS for gate in spec.gates]
    gates += [gate for *_, resource_gates in tools.RESOURCES for gate in resource_gates]
    assert gates
    assert [gate for gate in gates if gate not in operations] == []


def test_the_read_tools_need_emails_view_and_the_destructive_ones_manage(operations):
    def needs(spec):
        return {operations[gate] for gate in spec.gates}

    by_name = {spec.fn.__name__: spec for spec in tools.TOOLS}
    for name in ("wait_for_email", "list_emails", "read_email", "get_latest_code",
                 "get_latest_link", "check_html", "check_links"):
        assert needs(by_name[name]) == {"team.emails.view"}, name
    assert needs(by_name["delete_email"]) == {"team.emails.manage"}
    assert needs(by_name["delete_inbox"]) == {"team.inboxes.manage"}
    assert needs(by_name["create_inbox"]) == {"team.inboxes.create"}
    assert needs(by_name["put_email"]) == {"team.inboxes.manage"}


def test_annotations_say_which_tools_only_read_and_which_destroy():
    hints = {spec.fn.__name__: spec.annotations for spec in tools.TOOLS}
    assert {name for name, hint in hints.items() if hint.destructive_hint} == {
        "delete_email", "delete_inbox"}
    assert {name for name, hint in hints.items() if not hint.read_only_hint} == {
        "create_inbox", "extend_inbox", "delete_email", "delete_inbox", "check_links",
        "put_email"}
    assert [name for name, hint in hints.items() if hint.open_world_hint] == ["check_links"]


def test_every_tool_that_returns_mail_says_its_content_is_untrusted():
    for spec in tools.TOOLS:
        assert spec.description, spec.fn.__name__
        assert ("untrusted" in spec.description) == spec.mail, spec.fn.__name__
