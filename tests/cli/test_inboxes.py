"""`burnbox inboxes`: create, list, show and delete through the domain actions, acting as the
org's owner or the member named with --as, with one-line refusals."""

import json

from sqlalchemy import select

from models.mail.inboxes import Inbox
from tests.cli.conftest import TEAM
from tests.factories.tenancy import make_team


def test_create_makes_an_inbox_of_the_team_created_by_the_org_owner(
        burnbox, committed_runtime, committed_world):
    result = burnbox("inboxes", "create", "--team", TEAM, "--alias", "Signup", "--ttl", "30m")
    assert result.exit_code == 0, result.output
    address = f"signup@{committed_world.domain}"
    assert f"address: {address}" in result.stdout
    with committed_runtime.db.session() as session:
        inbox = session.scalars(select(Inbox)).one()
    assert (inbox.full_address, inbox.team_id, inbox.created_by) == (
        address, committed_world.ids["team"], committed_world.users["owner"].id)
    assert (inbox.expires_at - inbox.created_at).total_seconds() == 30 * 60


def test_create_names_the_team_by_id_or_by_a_slug_only_one_org_uses(burnbox, committed_world):
    by_id = burnbox("inboxes", "create", "--team", str(committed_world.ids["team"]), "--json")
    assert by_id.exit_code == 0, by_id.output
    assert json.loads(by_id.stdout)["team_id"] == str(committed_world.ids["team"])
    by_slug = burnbox("inboxes", "create", "--team", "team-t", "--domain",
                      committed_world.domain, "--as", committed_world.users["lead"].email)
    assert by_slug.exit_code == 0, by_slug.output


def test_list_prints_a_table_or_the_api_page_with_json(burnbox, inbox_address):
    table = burnbox("inboxes", "list", "--team", TEAM)
    assert table.exit_code == 0, table.output
    header, row = table.stdout.splitlines()
    assert header.split() == ["ID", "ADDRESS", "EXPIRES", "EMAILS", "UNREAD"]
    assert inbox_address in row
    page = json.loads(burnbox("inboxes", "list", "--team", TEAM, "--json").stdout)
    assert (page["total"], page["page"], page["per_page"], page["total_pages"]) == (1, 1, 20, 1)
    assert page["data"][0]["full_address"] == inbox_address
    assert set(page["data"][0]) >= {"id", "address", "expires_at", "email_count", "is_active"}
    assert burnbox("inboxes", "list", "--team", TEAM, "--status", "expired").stdout == \
        "no inboxes\n"


def test_show_finds_an_inbox_by_address_or_id(burnbox, inbox_address):
    shown = json.loads(burnbox("inboxes", "show", inbox_address.upper(), "--json").stdout)
    assert shown["full_address"] == inbox_address
    again = burnbox("inboxes", "show", shown["id"])
    assert again.exit_code == 0
    assert f"id:      {shown['id']}" in again.stdout


def test_delete_removes_the_inbox(burnbox, committed_runtime, inbox_address):
    result = burnbox("inboxes", "delete", inbox_address)
    assert (result.exit_code, result.stdout) == (0, f"inbox {inbox_address} deleted\n")
    with committed_runtime.db.session() as session:
        assert session.scalars(select(Inbox)).all() == []


def test_refusals_are_one_line_on_stderr_with_exit_code_1(burnbox, committed_world,
                                                          inbox_address):
    users = committed_world.users
    cases = {
        ("inboxes", "list", "--team", "org-a/nope"): "Error: no team 'org-a/nope'\n",
        ("inboxes", "show", "nobody@nowhere.test"): "Error: no inbox 'nobody@nowhere.test'\n",
        ("inboxes", "delete", inbox_address, "--as", users["outsider"].email):
            f"Error: {users['outsider'].email} is not a member of the org of this inbox\n",
        ("inboxes", "list", "--team", TEAM, "--as", "ghost@example.test"):
            "Error: no user with the e-mail address ghost@example.test\n",
        ("inboxes", "create", "--team", TEAM, "--as", users["org_member"].email):
            "Error: missing permission team.inboxes.create\n",
        ("inboxes", "create", "--team", TEAM, "--alias", "x"):
            "Error: invalid alias (alias: 2-64 characters of a-z, 0-9, '.', '_' and '-', "
            "starting and ending with a letter or digit, without '..')\n",
        ("inboxes", "create", "--team", TEAM, "--alias", "box"):
            f"Error: the address {inbox_address} is already in use\n",
    }
    for args, error in cases.items():
        result = burnbox(*args)
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", error), args


def test_a_team_slug_two_orgs_use_is_refused_naming_both(burnbox, committed_runtime,
                                                          committed_world):
    with committed_runtime.db.transaction() as session:
        make_team(session, committed_runtime.settings, committed_world.users["outsider"],
                  committed_world.ids["other_org"], "Team T")
    result = burnbox("inboxes", "list", "--team", "team-t")
    assert (result.exit_code, result.stderr) == (
        1, "Error: several orgs have a team 'team-t'; name one of org-a/team-t, org-b/team-t "
           "(team: ambiguous)\n")
    assert burnbox("inboxes", "list", "--team", "ORG-B/team-t").exit_code == 0


def test_the_verbs_run_with_the_client_variables_of_burnbox_env_exported(burnbox, inbox_address):
    # The README sources burnbox.env (the client's variables) in the shell that then runs the
    # operator's verbs; they once stopped every command with "unknown setting api". With --as
    # (or --team) a verb acts on the database whatever key is exported.
    client = {"BURNBOX_API": "http://127.0.0.1:8080/api/v1", "BURNBOX_URL": "http://127.0.0.1:8080",
              "BURNBOX_API_KEY": "bb_" + "0" * 64, "BURNBOX_SMTP": "127.0.0.1:2525",
              "BURNBOX_DOMAIN": "burnbox.test"}
    result = burnbox("inboxes", "list", "--team", TEAM, env=client)
    assert result.exit_code == 0, result.output
    assert inbox_address in result.stdout


def test_a_misspelt_server_setting_stops_the_verb_naming_it_and_its_source(burnbox):
    result = burnbox("inboxes", "list", "--team", TEAM, env={"BURNBOX_SMPT__PORT": "2525"})
    assert result.exit_code == 1
    assert result.stderr == ("Error: configuration error: unknown setting smpt.port (from the "
                             "environment variable BURNBOX_SMPT__PORT)\n")


def test_without_team_the_verbs_use_the_members_only_team_or_name_the_choices(
        burnbox, committed_world, inbox_address):
    # The world has two teams (org-a/team-t and org-b's), so naming none is ambiguous...
    ambiguous = burnbox("inboxes", "list")
    assert ambiguous.exit_code == 1
    assert ambiguous.stderr.startswith("Error: there are several teams (org-a/team-t, ")
    assert "choose one with --team" in ambiguous.stderr
    # ...but the lead is a member of team T alone.
    lead = committed_world.users["lead"].email
    listed = burnbox("inboxes", "list", "--as", lead)
    assert listed.exit_code == 0, listed.output
    assert inbox_address in listed.stdout
    created = burnbox("inboxes", "create", "--as", lead, "--alias", "no-team-named")
    assert created.exit_code == 0, created.output
    assert f"no-team-named@{committed_world.domain}" in created.stdout
    keys = burnbox("keys", "list", "--as", lead)
    assert keys.exit_code == 0, keys.output


def test_without_team_a_platform_with_one_team_needs_no_option(burnbox, committed_runtime):
    bootstrapped = burnbox("bootstrap")
    assert bootstrapped.exit_code == 0, bootstrapped.output
    created = burnbox("inboxes", "create", "--alias", "first")
    assert created.exit_code == 0, created.output
    assert "address: first@burnbox.test" in created.stdout
    listed = burnbox("inboxes", "list")
    assert "first@burnbox.test" in listed.stdout
