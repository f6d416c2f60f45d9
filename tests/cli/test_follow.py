"""`burnbox inboxes follow`, run as its own process: mail delivered over SMTP meanwhile is
printed as it arrives (read from the database on the embedded default, from Redis pub/sub when
Redis is configured)."""

import json
import smtplib
import subprocess

from burnbox.cli.follow import FOUND_FIELDS, SUMMARY_FIELDS
from tests.cli.conftest import HANG, cli_env
from tests.factories.mail import message
from tests.processes import BIN, ROOT, process_env
from web.views.emails import EmailFieldsSchema


def _follow(runtime, *args, env=None):
    return subprocess.Popen([str(BIN / "burnbox"), "inboxes", "follow", *args], cwd=ROOT,
                            env={**process_env(), **cli_env(runtime), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_printed_item_is_the_api_list_item_with_codes_and_links():
    # The fields a list item and a detail share: follow prints either (a list item alone has
    # its thumbnail, which the worker may not have made yet).
    assert set(SUMMARY_FIELDS) == set(EmailFieldsSchema().fields)
    assert FOUND_FIELDS == ("codes", "links")


def test_follow_prints_each_new_email_as_it_arrives(committed_runtime, inbox_address,
                                                    delivering):
    follower = _follow(committed_runtime, inbox_address, "--json", "--count", "2",
                       "--timeout", "60", "--interval", "0.2")
    try:
        announced = follower.stderr.readline()
        redis = committed_runtime.settings.redis.url
        how = "live, from Redis" if redis else "reading the database"
        assert announced.startswith(f"following {inbox_address} ({how}"), announced
        for subject in ("First", "Second"):
            with smtplib.SMTP(*delivering, timeout=10) as smtp:
                smtp.sendmail("shop@sender.example", [inbox_address],
                              message(inbox_address, subject=subject,
                                      text="Your code is 482913.\nhttps://shop.example/c\n"))
            line = json.loads(follower.stdout.readline())
            assert (line["subject"], line["to_address"]) == (subject, inbox_address)
            assert set(line) == {*SUMMARY_FIELDS, *FOUND_FIELDS}
            assert line["codes"] == ["482913"]
            assert [link["href"] for link in line["links"]] == ["https://shop.example/c"]
        assert follower.wait(timeout=HANG) == 0
    finally:
        follower.kill()
        follower.communicate()


def test_follow_gives_up_at_its_timeout_with_one_line(committed_runtime, inbox_address):
    follower = _follow(committed_runtime, inbox_address, "--timeout", "1", "--interval", "0.2")
    _out, err = follower.communicate(timeout=HANG)
    assert follower.returncode == 1
    assert err.splitlines()[-1] == (
        f"Error: no more e-mail to {inbox_address} within 1s (0 received)")
    assert "Traceback" not in err
