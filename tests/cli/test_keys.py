"""`burnbox keys`: create, list, show and revoke a team's API keys; each change is audited with
the channel `cli`, in the name of the member the command acts as."""

import json

from sqlalchemy import select

from models.apikeys.keys import ApiKey
from models.platform.audit import AuditEntry
from tests.cli.conftest import TEAM


def test_create_prints_the_secret_once_and_audits_it_as_a_cli_change(
        burnbox, committed_runtime, committed_world):
    lead = committed_world.users["lead"]
    result = burnbox("keys", "create", "--team", TEAM, "--name", "CI", "--scope",
                     "team.inboxes.create", "--scope", "team.emails.view", "--expires-in",
                     "720h", "--as", lead.email)
    assert result.exit_code == 0, result.output
    raw = result.stdout.strip()
    assert raw.startswith("bb_") and len(raw) == 67
    assert "shown this once" in result.stderr
    with committed_runtime.db.session() as session:
        key = session.scalars(select(ApiKey)).one()
        entry = session.scalars(select(AuditEntry).where(AuditEntry.action == "apikey.create")
                                ).one()
    assert (key.prefix, key.created_by, sorted(key.scopes)) == (
        raw[:11], lead.id, ["team.emails.view", "team.inboxes.create"])
    assert (entry.channel, entry.actor_id, entry.org_id, entry.user_agent, entry.ip) == (
        "cli", lead.id, committed_world.ids["org"], "burnbox keys create", None)


def test_list_show_and_revoke(burnbox, committed_runtime, committed_world):
    created = json.loads(burnbox("keys", "create", "--team", TEAM, "--name", "Deploy",
                                 "--scope", "team.inboxes.view", "--json").stdout)
    assert created["raw_key"].startswith("bb_")
    listed = burnbox("keys", "list", "--team", TEAM)
    assert listed.exit_code == 0, listed.output
    assert "Deploy" in listed.stdout and created["prefix"] in listed.stdout
    assert "active" in listed.stdout and created["raw_key"] not in listed.stdout
    revoked = burnbox("keys", "revoke", "--team", TEAM, created["id"])
    assert (revoked.exit_code, revoked.stdout) == (0, f"API key {created['id']} revoked\n")
    shown = json.loads(burnbox("keys", "show", "--team", TEAM, created["id"], "--json").stdout)
    assert shown["revoked_by"] == str(committed_world.users["owner"].id)
    assert "raw_key" not in shown and shown["is_active"] is False
    assert "state:       revoked" in burnbox("keys", "show", "--team", TEAM,
                                             created["id"]).stdout
    with committed_runtime.db.session() as session:
        channels = session.scalars(select(AuditEntry.channel).where(
            AuditEntry.resource_id == created["id"])).all()
    assert channels == ["cli", "cli"]


def test_refusals_name_the_problem(burnbox, committed_world):
    unknown_scope = burnbox("keys", "create", "--team", TEAM, "--name", "x", "--scope",
                            "team.everything")
    assert (unknown_scope.exit_code, unknown_scope.stderr) == (
        1, "Error: unknown scope (scopes: not a team permission: team.everything)\n")
    member = committed_world.users["org_member"].email
    forbidden = burnbox("keys", "list", "--team", TEAM, "--as", member)
    assert (forbidden.exit_code, forbidden.stderr) == (
        1, "Error: missing permission team.apikeys.view\n")
    other_team = burnbox("keys", "revoke", "--team", "org-b/team-tb",
                         "00000000-0000-0000-0000-000000000001")
    assert (other_team.exit_code, other_team.stderr) == (1, "Error: API key not found\n")
