"""The data verbs over HTTP: with BURNBOX_API_KEY exported they call the API of a running
server as that key (its team, its scopes), print what the database path prints, and fail in one
sentence (or one JSON object with --json), a server that is not running included."""

import json
import smtplib
import subprocess

from sqlalchemy import select

from burnbox.cli.inboxes import STATUSES
from burnbox.cli.output import MAX_PER_PAGE
from models.mail import inboxes
from models.mail.inboxes import Inbox
from models.pagination import MAX_PER_PAGE as API_MAX_PER_PAGE
from tests.cli.conftest import HANG, HEAVY, cli_env, imported, team_key
from tests.factories.mail import make_email, message
from tests.processes import BIN, ROOT, free_port, process_env

CODE_MAIL = ("Welcome! Your verification code is 482913.\n"
             "Confirm your address: https://shop.example/confirm?t=abc\n")


def test_the_cli_copies_of_api_limits_are_the_apis():
    assert STATUSES == inboxes.STATUSES
    assert MAX_PER_PAGE == API_MAX_PER_PAGE


def test_create_list_show_and_delete_act_as_the_key(burnbox, api_env, committed_runtime,
                                                     committed_world):
    created = burnbox("inboxes", "create", "--alias", "signup", "--ttl", "30m", env=api_env)
    assert created.exit_code == 0, created.output
    address = f"signup@{committed_world.domain}"
    assert f"address: {address}" in created.stdout
    with committed_runtime.db.session() as session:
        inbox = session.scalars(select(Inbox)).one()
    # The key's creator (the lead), not the org's owner the database path acts as.
    assert (inbox.team_id, inbox.created_by) == (committed_world.ids["team"],
                                                  committed_world.users["lead"].id)
    table = burnbox("inboxes", "list", env=api_env)
    assert table.exit_code == 0, table.output
    header, row = table.stdout.splitlines()
    assert header.split() == ["ID", "ADDRESS", "EXPIRES", "EMAILS", "UNREAD"]
    assert address in row and str(inbox.id) in row
    page = json.loads(burnbox("inboxes", "list", "--json", env=api_env).stdout)
    assert (page["total"], page["data"][0]["full_address"]) == (1, address)
    assert burnbox("inboxes", "list", "--status", "expired", env=api_env).stdout == "no inboxes\n"
    shown = json.loads(burnbox("inboxes", "show", address.upper(), "--json", env=api_env).stdout)
    assert shown["id"] == str(inbox.id)
    by_id = burnbox("inboxes", "show", str(inbox.id), env=api_env)
    assert f"id:      {inbox.id}" in by_id.stdout
    deleted = burnbox("inboxes", "delete", address, env=api_env)
    assert (deleted.exit_code, deleted.stdout) == (0, f"inbox {address} deleted\n")
    with committed_runtime.db.session() as session:
        assert session.scalars(select(Inbox)).all() == []


def test_emails_list_and_show_print_the_codes_and_links(burnbox, api_env, committed_runtime,
                                                        inbox_address):
    make_email(committed_runtime, inbox_address, subject="Welcome aboard")
    email_id = make_email(committed_runtime, inbox_address, subject="Your code", text=CODE_MAIL,
                          attachments=(("receipt.pdf", "application/pdf", b"%PDF-1.4"),))
    table = burnbox("emails", "list", inbox_address, env=api_env)
    assert table.exit_code == 0, table.output
    header, newest, oldest = table.stdout.splitlines()
    assert header.split() == ["ID", "RECEIVED", "FROM", "SUBJECT", "READ"]
    assert "Your code" in newest and "Welcome aboard" in oldest
    found = json.loads(burnbox("emails", "list", inbox_address, "--search", "482913", "--json",
                               env=api_env).stdout)
    assert [item["id"] for item in found["data"]] == [str(email_id)]
    shown = burnbox("emails", "show", str(email_id), env=api_env)
    assert shown.exit_code == 0, shown.output
    assert "code:       482913\n" in shown.stdout
    assert "link:       https://shop.example/confirm?t=abc\n" in shown.stdout
    assert "attachment: receipt.pdf (application/pdf, 8 bytes)" in shown.stdout
    assert shown.stdout.endswith("\n" + CODE_MAIL + "\n")
    detail = json.loads(burnbox("emails", "show", str(email_id), "--json", env=api_env).stdout)
    assert (detail["codes"], detail["links"][0]["href"]) == (
        ["482913"], "https://shop.example/confirm?t=abc")


def test_the_database_path_prints_the_codes_and_links_too(burnbox, committed_runtime,
                                                          inbox_address):
    email_id = make_email(committed_runtime, inbox_address, text=CODE_MAIL)
    shown = burnbox("emails", "show", str(email_id))
    assert shown.exit_code == 0, shown.output
    assert "code:       482913\n" in shown.stdout
    assert "link:       https://shop.example/confirm?t=abc\n" in shown.stdout


def test_follow_prints_each_new_email_with_its_codes(api_env, committed_runtime, inbox_address,
                                                     delivering):
    follower = subprocess.Popen(
        [str(BIN / "burnbox"), "inboxes", "follow", inbox_address, "--count", "1",
         "--timeout", "60"], cwd=ROOT, env=process_env(**api_env), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        assert follower.stderr.readline() == (
            f"following {inbox_address} (live, from the API); Ctrl+C to stop\n")
        with smtplib.SMTP(*delivering, timeout=10) as smtp:
            smtp.sendmail("shop@sender.example", [inbox_address],
                          message(inbox_address, subject="Confirm", text=CODE_MAIL))
        out, _err = follower.communicate(timeout=HANG)
    finally:
        follower.kill()
    assert follower.returncode == 0
    line, code, link = out.splitlines()
    assert line.split("  ")[1:3] == ["alice@sender.example", "'Confirm'"]
    assert (code, link) == ("  code: 482913", "  link: https://shop.example/confirm?t=abc")


def test_follow_ends_when_the_inbox_is_deleted(burnbox, api_env, committed_runtime,
                                               inbox_address):
    follower = subprocess.Popen(
        [str(BIN / "burnbox"), "inboxes", "follow", inbox_address, "--timeout", "60"],
        cwd=ROOT, env=process_env(**api_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        follower.stderr.readline()  # following ...: it waits now
        assert burnbox("inboxes", "delete", inbox_address, env=api_env).exit_code == 0
        _out, err = follower.communicate(timeout=HANG)
    finally:
        follower.kill()
    assert (follower.returncode, err) == (0, f"the inbox {inbox_address} was deleted\n")


def test_refusals_are_the_apis_in_one_line_or_one_json_object(burnbox, api_env,
                                                              committed_runtime,
                                                              committed_world, inbox_address):
    cases = {
        ("inboxes", "show", "nobody@nowhere.test"):
            ("Error: no inbox 'nobody@nowhere.test'\n", "not_found"),
        ("inboxes", "create", "--alias", "x"):
            ("Error: invalid alias (alias: 2-64 characters of a-z, 0-9, '.', '_' and '-', "
             "starting and ending with a letter or digit, without '..')\n", "validation_error"),
        ("inboxes", "create", "--alias", "box"):
            (f"Error: the address {inbox_address} is already in use\n", "conflict"),
    }
    for args, (sentence, code) in cases.items():
        result = burnbox(*args, env=api_env)
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", sentence), args
        as_json = burnbox(*args, "--json", env=api_env)
        assert (as_json.exit_code, as_json.stdout) == (1, ""), args
        envelope = json.loads(as_json.stderr)
        assert (envelope["error"], envelope["code"]) == (sentence[7:-1], code), args
    viewer = {**api_env, "BURNBOX_API_KEY": team_key(committed_runtime, committed_world,
                                                     ["team.inboxes.view"])}
    refused = burnbox("inboxes", "create", env=viewer)
    assert (refused.exit_code, refused.stderr) == (
        1, "Error: insufficient scope\n")
    bad_key = burnbox("inboxes", "list", env={**api_env, "BURNBOX_API_KEY": "bb_" + "0" * 64})
    assert (bad_key.exit_code, bad_key.stderr) == (
        1, "Error: invalid API key (the key in BURNBOX_API_KEY)\n")


def test_a_server_that_is_not_running_is_one_sentence(burnbox, committed_runtime):
    api = f"http://127.0.0.1:{free_port()}/api/v1"
    env = {"BURNBOX_API": api, "BURNBOX_API_KEY": "bb_" + "0" * 64}
    result = burnbox("inboxes", "list", env=env)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: cannot reach Burnbox at {api}: connection refused (is `burnbox serve` or "
        "`burnbox web` running there? BURNBOX_API names the API's address)\n")
    as_json = burnbox("emails", "list", "box@x.test", "--json", env=env)
    assert json.loads(as_json.stderr)["code"] == "unreachable"
    # Without BURNBOX_API the address is this host's http.host:http.port.
    port = free_port()
    default = burnbox("inboxes", "list", env={"BURNBOX_API_KEY": "bb_" + "0" * 64,
                                              "BURNBOX_HTTP__PORT": str(port)})
    assert f"cannot reach Burnbox at http://127.0.0.1:{port}/api/v1: " in default.stderr


def test_a_data_verb_over_http_imports_nothing_of_the_server(api_env, committed_runtime,
                                                             inbox_address):
    # A cheap, deterministic stand-in for the start-up time bench/cli.py measures: importing
    # the models (every entity mapped before one row is read) was most of a verb's 3 s.
    email_id = make_email(committed_runtime, inbox_address, text=CODE_MAIL)
    env = process_env(**cli_env(committed_runtime), **api_env)
    for verb in (["inboxes", "list"], ["inboxes", "show", inbox_address],
                 ["emails", "list", inbox_address], ["emails", "show", str(email_id)],
                 ["inboxes", "create", "--json"]):
        heavy = imported(*verb, env=env) & set(HEAVY)
        assert not heavy, f"burnbox {' '.join(verb)} imports {sorted(heavy)}"


def test_the_database_paths_failures_are_json_with_json_too(burnbox, committed_runtime):
    result = burnbox("inboxes", "show", "nobody@nowhere.test", "--json")
    assert (result.exit_code, result.stdout) == (1, "")
    assert json.loads(result.stderr) == {"error": "no inbox 'nobody@nowhere.test'",
                                         "code": "not_found"}
