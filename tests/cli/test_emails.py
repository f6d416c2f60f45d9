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
