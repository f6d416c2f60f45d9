"""Release through the API, with a real SMTP receiver (aiosmtpd) as the relay and the worker
delivering: the stored message unchanged below Resent-* fields, retries on 4xx, failure with
the relay's reply on 5xx, refusal without a relay, the allow-lists, the permission and key
scopes, the team's budget under parallel requests, the audit trail, other orgs' e-mails."""

import dataclasses
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import func, select

import tasks
from burnbox.secretbox import new_key
from models.admin.runtime_config import update_config
from models.mail.entities import Email
from models.mail.release import MAX_ATTEMPTS, Release
from models.platform.audit import Origin
from models.system_config import MAILER
from tasks import start_worker
from tests.apikey_helpers import key_auth, make_key
from tests.factories.mail import make_email, make_inbox, make_mail_world
from tests.release_helpers import ALLOWED, committed_release, release_settings
from tests.smtp_sink import SmtpSink
from tests.tasks.conftest import wait_until
from tests.tenancy import world_caller
from tests.web.conftest import audit_entries, serving
from web import create_app

RELEASE = "/emails/{email}/release"
RELEASES = "/emails/{email}/releases"
ORG_LIST = "/orgs/{org}/release-recipients"
TEAM_LIST = "/orgs/{org}/teams/{team}/release-recipients"


@pytest.fixture
def sink():
    receiver = SmtpSink().start()
    yield receiver
    receiver.stop()


@dataclasses.dataclass
class Releasing:
    client: object
    api: object
    runtime: object
    email_id: uuid.UUID
    raw: bytes

    def release(self, *recipients, who="lead"):
        return self.api("POST", RELEASE, who, json={"recipients": list(recipients)})

    def releases(self, who="lead"):
        return self.api("GET", RELEASES, who).get_json()["releases"]

    def finished(self):
        """The newest release once it is sent or failed."""
        wait_until(lambda: self.releases()[0]["state"] != "queued")
        return self.releases()[0]


def _releasing(runtime, world, inbox, settings):
    """The API on `runtime` with `settings`, as `world`'s lead; one e-mail in `inbox`."""
    rt = dataclasses.replace(runtime, settings=settings)
    broker = tasks.setup_broker(rt)
    app = create_app(runtime=rt)
    app.config["TESTING"] = True
    email_id = make_email(runtime, inbox.full_address, subject="Welcome aboard")
    world.ids["email"] = email_id
    with runtime.db.session() as session:
        raw_key = session.scalar(select(Email.raw_key).where(Email.id == email_id))
    client = app.test_client()
    return Releasing(client, world_caller(client, world, "lead"), rt, email_id,
                     runtime.storage.get(raw_key)), broker


@pytest.fixture
def releasing(committed_runtime, sink):
    """Committed data (the worker's thread reads and writes beside the test's), the API on a
    runtime whose release relay is `sink`, one e-mail, and a worker."""
    with committed_runtime.db.transaction() as session:
        world = make_mail_world(session, committed_runtime.settings)
        inbox = make_inbox(session, committed_runtime.settings, world, role="lead")
    made, broker = _releasing(committed_runtime, world, inbox,
                              release_settings(committed_runtime.settings, sink.port))
    running = start_worker(broker, threads=1)
    yield made
    running.stop()


@pytest.fixture
def guarded(runtime, mail_world, inbox, sink):
    """As `releasing` without a worker, in the test's rolled-back transaction: for what the
    request alone decides."""
    made, _ = _releasing(runtime, mail_world, inbox, release_settings(runtime.settings, sink.port))
    return made


def _count_releases(runtime):
    with runtime.db.session() as session:
        return session.scalar(select(func.count()).select_from(Release))


def test_a_release_reaches_the_relay_as_stored_below_resent_fields(releasing, sink):
    answer = releasing.release("qa@company.example", "Dev@Company.Example")
    assert answer.status_code == 202, answer.get_json()
    queued = answer.get_json()
    assert queued["state"] == "queued" and queued["attempts"] == 0
    assert queued["recipients"] == ["qa@company.example", "Dev@company.example"]

    sink.wait_for(1)
    [envelope] = sink.envelopes
    assert envelope.mail_from == "releases@burnbox.test"
    assert envelope.rcpt_tos == ["qa@company.example", "Dev@company.example"]
    head, _, rest = envelope.content.partition(b"X-Burnbox-Release-Id: ")
    assert rest.split(b"\r\n", 1)[1] == releasing.raw  # the message itself, byte for byte
    assert b"Resent-From: releases@burnbox.test\r\n" in head
    assert b"Resent-To: qa@company.example, Dev@company.example\r\n" in head
    [message] = sink.messages
    assert message["To"] != "qa@company.example" and message["Subject"] == "Welcome aboard"

    done = releasing.finished()
    assert (done["state"], done["attempts"]) == ("sent", 1)
    assert done["relay_reply"].startswith("250") and done["finished_at"].endswith("Z")

    [asked] = audit_entries(releasing.runtime, "email.release")
    assert asked.after["recipients"] == queued["recipients"]
    assert asked.resource_id == str(releasing.email_id) and asked.severity == "warning"
    [sent] = audit_entries(releasing.runtime, "email.release_sent")
    assert sent.after["recipients"] == queued["recipients"] and sent.after["state"] == "sent"


def test_a_temporary_refusal_is_tried_again_until_the_relay_accepts(releasing, sink):
    sink.replies = ["451 4.3.0 try again later"]
    assert releasing.release("qa@company.example").status_code == 202
    done = releasing.finished()
    assert (done["state"], done["attempts"]) == ("sent", 2)
    assert len(sink.wait_for(1)) == 1


def test_a_relay_that_keeps_refusing_for_now_fails_the_release_after_the_last_attempt(
        releasing, sink):
    sink.replies = ["451 4.3.0 try again later"] * MAX_ATTEMPTS
    assert releasing.release("qa@company.example").status_code == 202
    done = releasing.finished()
    assert (done["state"], done["attempts"]) == ("failed", MAX_ATTEMPTS)
    assert done["relay_reply"] == "451 4.3.0 try again later"
    assert sink.messages == []


def test_a_permanent_refusal_fails_at_once_with_the_relays_reply(releasing, sink):
    sink.replies = ["550 5.7.1 relaying denied"]
    assert releasing.release("qa@company.example").status_code == 202
    done = releasing.finished()
    assert (done["state"], done["attempts"]) == ("failed", 1)
    assert done["relay_reply"] == "550 5.7.1 relaying denied"
    [failed] = audit_entries(releasing.runtime, "email.release_failed")
    assert failed.after["relay_reply"] == "550 5.7.1 relaying denied"
    assert failed.after["recipients"] == ["qa@company.example"]


def test_without_a_relay_a_release_is_refused_and_nothing_is_queued(runtime, mail_world, inbox):
    for relay in ({}, {"release.relay": "own", "release.relay_host": ""},
                  {"release.relay": "mailer", "mailer.host": ""}):
        made, _ = _releasing(runtime, mail_world, inbox, runtime.settings.replace(**{
            "release.allowed_recipients": (ALLOWED,), **relay}))
        answer = made.release("qa@company.example")
        assert answer.status_code == 409, relay
        assert answer.get_json()["code"] == "conflict"
        assert "release.relay" in answer.get_json()["error"]
    assert _count_releases(runtime) == 0
    assert audit_entries(runtime, "email.release") == []


def test_the_platform_mailer_can_be_the_release_relay(committed_runtime, sink):
    runtime = committed_runtime
    with runtime.db.transaction() as session:
        world = make_mail_world(session, runtime.settings)
        inbox = make_inbox(session, runtime.settings, world, role="lead")
    made, broker = _releasing(runtime, world, inbox, runtime.settings.replace(**{
        "release.relay": "mailer", "mailer.host": "127.0.0.1", "mailer.port": sink.port,
        "mailer.starttls": False, "mailer.from_address": "Burnbox <mailer@burnbox.test>",
        "release.allowed_recipients": (ALLOWED,)}))
    running = start_worker(broker, threads=1)
    try:
        assert made.release("qa@company.example").status_code == 202
        sink.wait_for(1)
        assert sink.envelopes[0].mail_from == "mailer@burnbox.test"
        assert made.finished()["state"] == "sent"
    finally:
        running.stop()


def test_recipients_outside_the_allow_lists_are_refused(guarded, mail_world):
    api = guarded.api
    refused = guarded.release("qa@company.example", "me@gmail.example")
    assert refused.status_code == 403
    assert refused.get_json()["details"] == {"recipients": ["me@gmail.example"]}
    # A look-alike domain is another domain: the match is on the whole name.
    assert guarded.release("qa@evilcompany.example").status_code == 403
    assert guarded.release("qa@company.example.evil").status_code == 403

    # The org narrows the operator's bound; the team narrows the org's.
    assert api("GET", ORG_LIST, "owner").get_json() == {"operator": [ALLOWED], "org": None}
    set_org = api("PUT", ORG_LIST, "owner", json={"patterns": ["qa@Company.Example",
                                                                "dev@company.example"]})
    assert set_org.status_code == 200, set_org.get_json()
    assert set_org.get_json()["org"] == ["qa@company.example", "dev@company.example"]
    assert guarded.release("ops@company.example").status_code == 403
    set_team = api("PUT", TEAM_LIST, "lead", json={"patterns": ["qa@company.example"]})
    assert set_team.status_code == 200, set_team.get_json()
    assert set_team.get_json() == {"operator": [ALLOWED], "org": [
        "qa@company.example", "dev@company.example"], "team": ["qa@company.example"]}
    assert guarded.release("dev@company.example").status_code == 403
    assert guarded.release("qa@company.example").status_code == 202
    # The local part is compared exactly: another mailbox may answer to QA.
    assert guarded.release("QA@company.example").status_code == 403

    # Nothing escapes the level above: not a wider pattern, not a wildcard of its own.
    for patterns, path, who in ((["*@company.example"], TEAM_LIST, "lead"),
                                (["*@*.company.example"], ORG_LIST, "owner"),
                                (["*@*"], ORG_LIST, "owner"), (["*"], ORG_LIST, "owner"),
                                (["q*@company.example"], ORG_LIST, "owner"),
                                (["*@gmail.example"], ORG_LIST, "owner")):
        answer = api("PUT", path, who, json={"patterns": patterns})
        assert answer.status_code == 400, patterns
        assert answer.get_json()["code"] == "validation_error"
    assert api("PUT", TEAM_LIST, "team_member", json={"patterns": []}).status_code == 403
    assert api("PUT", ORG_LIST, "lead", json={"patterns": []}).status_code == 403
    # An empty list removes the level's own: it follows the level above again.
    cleared = api("PUT", TEAM_LIST, "lead", json={"patterns": []})
    assert cleared.get_json()["team"] is None
    assert guarded.release("dev@company.example").status_code == 202
    assert {entry.after["patterns"][0] if entry.after["patterns"] else None
            for entry in audit_entries(guarded.runtime, "team.release_recipients_update")
            } == {"qa@company.example", None}


def test_only_holders_of_the_release_permission_release(guarded, mail_world):
    for who in ("lead", "owner"):
        assert guarded.release("qa@company.example", who=who).status_code == 202, who
    # Members see the mail but may not send it on: the team's member role lacks the permission,
    # and an org member outside the team reaches neither.
    assert guarded.release("qa@company.example", who="team_member").status_code == 403
    assert guarded.api("GET", RELEASES, "team_member").status_code == 200
    assert guarded.release("qa@company.example", who="org_member").status_code in (403, 404)

    app_client = guarded.client
    path = mail_world.path(RELEASE)
    body = {"recipients": ["qa@company.example"]}
    reader = make_key(app_client, mail_world, scopes=["team.emails.view"])
    answer = app_client.post(path, json=body, headers=key_auth(reader["raw_key"]))
    assert answer.status_code == 403 and answer.get_json()["error"] == "insufficient scope"
    releaser = make_key(app_client, mail_world, scopes=["team.emails.release"])
    assert app_client.post(path, json=body,
                           headers=key_auth(releaser["raw_key"])).status_code == 202
    # A team member cannot hand the scope to a key: they do not hold it.
    member_key = app_client.post(mail_world.path("/orgs/{org}/teams/{team}/api-keys"),
                                 json={"name": "x", "scopes": ["team.emails.release"]},
                                 headers=mail_world.headers["team_member"])
    assert member_key.status_code == 403


def test_another_orgs_email_is_not_found(guarded):
    for method, path, body in (("POST", RELEASE, {"recipients": ["qa@company.example"]}),
                               ("GET", RELEASES, None)):
        for who in ("outsider", "stranger"):
            answer = guarded.api(method, path, who, json=body)
            assert answer.status_code == 404, (method, who)
            assert answer.get_json()["code"] == "not_found"
    unknown = guarded.api("POST", f"/emails/{uuid.uuid4()}/release",
                            json={"recipients": ["qa@company.example"]})
    assert unknown.status_code == 404
    assert _count_releases(guarded.runtime) == 0


@pytest.mark.parametrize("recipients", [
    [], ["qa@company.example"] * 11, ["qa@company.example"] * 10_000, "qa@company.example",
    ["qa\x00@company.example"], ["qa\ud800@company.example"], ["Q A <qa@company.example>"],
    ["qa@company.example\r\nBcc: x@evil.example"], ["x" * 400 + "@company.example"], [""],
    [["qa@company.example"]], [None], ["@company.example"], ["qa@"]])
def test_bad_recipients_are_a_400_and_queue_nothing(guarded, recipients):
    answer = guarded.api("POST", RELEASE, json={"recipients": recipients})
    assert answer.status_code == 400, answer.get_json()
    assert answer.get_json()["code"] == "validation_error"
    assert _count_releases(guarded.runtime) == 0


def test_the_teams_budget_holds_under_parallel_requests(committed_runtime, sink):
    made = committed_release(committed_runtime, sink.port, **{"release.rate_limit": "3/hour"})
    with serving(made.runtime) as base:
        url = f"{base}/api/v1/emails/{made.email_id}/release"

        def release(n):
            return httpx.post(url, json={"recipients": [f"qa{n}@company.example"]},
                              headers=made.world.headers["lead"], timeout=30).status_code

        with ThreadPoolExecutor(8) as pool:
            statuses = sorted(pool.map(release, range(8)))
    assert statuses == [202] * 3 + [429] * 5
    assert _count_releases(made.runtime) == 3
    assert len(audit_entries(made.runtime, "email.release")) == 3


def test_a_platform_mailer_whose_password_cannot_be_opened_is_no_relay(runtime, mail_world,
                                                                        inbox):
    settings = runtime.settings.replace(**{"secrets.encryption_keys": new_key()})
    with runtime.db.transaction() as session:
        update_config(session, settings, MAILER, {
            "host": "127.0.0.1", "port": 2525, "starttls": False, "password": "s3cret",
            "from_address": "Ops <ops@burnbox.test>"}, actor_id=None, origin=Origin())
    # The key that sealed the password is gone from the settings.
    made, _ = _releasing(runtime, mail_world, inbox, runtime.settings.replace(**{
        "release.relay": "mailer", "release.allowed_recipients": (ALLOWED,)}))
    answer = made.release("qa@company.example")
    assert answer.status_code == 409 and "release.relay" in answer.get_json()["error"]
    assert _count_releases(runtime) == 0
