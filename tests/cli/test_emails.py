"""`burnbox emails`: list an inbox's e-mails and show one, as the API reads them."""

import json
import uuid

from tests.factories.mail import make_email


def test_list_shows_the_inbox_mail_newest_first_and_searches(burnbox, committed_runtime,
                                                             inbox_address):
    make_email(committed_runtime, inbox_address, subject="Welcome aboard")
    make_email(committed_runtime, inbox_address, subject="Your code is 123456",
               text="Use 123456 to sign in.\n")
    table = burnbox("emails", "list", inbox_address)
    assert table.exit_code == 0, table.output
    header, newest, oldest = table.stdout.splitlines()
    assert header.split() == ["ID", "RECEIVED", "FROM", "SUBJECT", "READ"]
    assert "Your code is 123456" in newest and "Welcome aboard" in oldest
    found = json.loads(burnbox("emails", "list", inbox_address, "--search", "123456",
                               "--json").stdout)
    assert [item["subject"] for item in found["data"]] == ["Your code is 123456"]
    assert found["total"] == 1


def test_show_prints_headers_and_the_text_body_or_the_api_detail(burnbox, committed_runtime,
                                                                  inbox_address):
    email_id = make_email(committed_runtime, inbox_address, subject="Receipt",
                          text="Thanks for your order.\n",
                          attachments=(("receipt.pdf", "application/pdf", b"%PDF-1.4"),))
    shown = burnbox("emails", "show", str(email_id))
    assert shown.exit_code == 0, shown.output
    assert "subject:    Receipt" in shown.stdout
    assert "attachment: receipt.pdf (application/pdf, 8 bytes)" in shown.stdout
    assert shown.stdout.endswith("\nThanks for your order.\n\n")
    detail = json.loads(burnbox("emails", "show", str(email_id), "--json").stdout)
    assert detail["id"] == str(email_id)
    assert [part["filename"] for part in detail["attachments"]] == ["receipt.pdf"]
    assert "body_html" in detail and "headers" in detail


def test_unknown_and_foreign_mail_is_refused_in_one_line(burnbox, committed_runtime,
                                                          committed_world, inbox_address):
    email_id = make_email(committed_runtime, inbox_address)
    missing = uuid.uuid4()
    unknown = burnbox("emails", "show", str(missing))
    assert (unknown.exit_code, unknown.stderr) == (1, f"Error: no e-mail {missing}\n")
    outsider = committed_world.users["outsider"].email
    foreign = burnbox("emails", "show", str(email_id), "--as", outsider)
    assert (foreign.exit_code, foreign.stderr) == (
        1, f"Error: {outsider} is not a member of the org of this e-mail\n")
    bad_id = burnbox("emails", "show", "xyz")
    assert bad_id.exit_code == 2  # click's usage error, before anything is looked up


def test_put_stores_a_message_over_http_and_on_the_database(burnbox, api_env, committed_runtime,
                                                            inbox_address, tmp_path):
    report = tmp_path / "report.csv"
    report.write_bytes(b"a,b\n1,2\n")
    over_http = burnbox("emails", "put", inbox_address, "--from", "Shop <shop@example.test>",
                        "--subject", "Seeded", "--text", "Your code is 482913.",
                        "--attach", str(report), "--header", "Reply-To: help@example.test",
                        "--tag", "seeded", "--json", env=api_env)
    assert over_http.exit_code == 0, over_http.output
    email = json.loads(over_http.stdout)
    assert (email["subject"], email["codes"]) == ("Seeded", ["482913"])
    assert [part["filename"] for part in email["attachments"]] == ["report.csv"]
    headers = {one["name"]: one["value"] for one in email["headers"]}
    assert headers["X-Tags"] == "seeded" and headers["Reply-To"] == "help@example.test"

    on_database = burnbox("emails", "put", inbox_address, "--from", "a@example.test",
                          "--subject", "Directly", "--html", "<p>Code 771204</p>")
    assert on_database.exit_code == 0, on_database.output
    assert "subject:    Directly" in on_database.stdout
    assert "code:       771204" in on_database.stdout
    listed = json.loads(burnbox("emails", "list", inbox_address, "--json").stdout)
    assert sorted(item["subject"] for item in listed["data"]) == ["Directly", "Seeded"]


def test_put_refuses_bad_input_in_one_sentence(burnbox, api_env, inbox_address):
    for env in (api_env, None):
        refused = burnbox("emails", "put", inbox_address, "--from", "not an address", env=env)
        assert refused.exit_code == 1 and "from" in refused.stderr, refused.output
    header = burnbox("emails", "put", inbox_address, "--from", "a@b.test", "--header", "X")
    assert header.exit_code == 1 and "Name: value" in header.stderr


def test_tag_adds_removes_and_sets_an_emails_tags_and_list_and_show_print_them(
        burnbox, committed_runtime, inbox_address):
    email_id = str(make_email(committed_runtime, inbox_address, subject="Tagged"))
    added = burnbox("emails", "tag", email_id, "checkout", "Beta")
    assert added.exit_code == 0, added.output
    assert added.stdout == "Beta, checkout\n"
    removed = json.loads(burnbox("emails", "tag", email_id, "beta", "--remove", "--json").stdout)
    assert removed == {"tags": ["checkout"]}
    assert "tags:       checkout" in burnbox("emails", "show", email_id).stdout
    listed = json.loads(burnbox("emails", "list", inbox_address, "--search", "tag:checkout",
                                "--json").stdout)
    assert [item["tags"] for item in listed["data"]] == [["checkout"]]
    assert burnbox("emails", "tag", email_id, "--set").stdout == "no tags\n"
    refused = burnbox("emails", "tag", email_id, "not*a*tag")
    assert refused.exit_code == 1 and "tag" in refused.output
