"""`burnbox emails release` and `burnbox emails releases`: over the API with the key in the
environment, the worker delivering through a real SMTP receiver; in one sentence without a key
or for a recipient no allow-list allows."""

import json

import pytest
from click.testing import CliRunner

from burnbox.cli import main
from tasks import start_worker
from tests.cli.conftest import cli_env, team_key
from tests.release_helpers import committed_release
from tests.smtp_sink import SmtpSink
from tests.tasks.conftest import wait_until
from tests.web.conftest import serving


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


def test_release_sends_an_email_on_and_releases_shows_the_relays_reply(committed_runtime,
                                                                        sink):
    made = committed_release(committed_runtime, sink.port)
    runtime, email_id = made.runtime, str(made.email_id)
    key = team_key(runtime, made.world, ["team.emails.view", "team.emails.release"])
    running = start_worker(made.broker, threads=1)
    try:
        with serving(runtime) as base:
            env = {**cli_env(runtime), "BURNBOX_API": f"{base}/api/v1", "BURNBOX_API_KEY": key}

            def burnbox(*args):
                return CliRunner(env=env).invoke(main, list(args))

            queued = burnbox("emails", "release", email_id, "--to", "qa@company.example")
            assert queued.exit_code == 0, queued.output
            assert "state:" in queued.stdout and "queued" in queued.stdout
            assert "qa@company.example" in queued.stdout

            def sent():
                listed = json.loads(burnbox("emails", "releases", email_id, "--json").stdout)
                return listed[0]["state"] == "sent"

            wait_until(sent)
            shown = burnbox("emails", "releases", email_id)
            assert "relay reply: 250" in shown.stdout
            refused = burnbox("emails", "release", email_id, "--to", "me@elsewhere.example")
            assert refused.exit_code != 0
            assert "not allowed" in refused.output and "me@elsewhere.example" in refused.output
    finally:
        running.stop()


def test_without_a_key_release_says_it_goes_through_the_api(committed_runtime):
    answer = CliRunner(env={**cli_env(committed_runtime), "BURNBOX_API_KEY": ""}).invoke(
        main, ["emails", "release", "00000000-0000-0000-0000-000000000001", "--to",
               "qa@company.example"])
    assert answer.exit_code != 0
    assert "releases go through the API" in answer.output
